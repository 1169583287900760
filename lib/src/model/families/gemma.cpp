// Gemma (the first): the embeddings × √C; RMSNorm with (1 + w) before each sublayer;
// GeGLU (tanh GELU); multi-query attention in the 2B; the head tied to the embeddings.
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& gemma_family() {
    static const FamilySpec spec = [] {
        FamilySpec f;
        f.model_type = "gemma";
        f.models = "Gemma 2B and 7B";
        f.norm = NormKind::rms_norm;
        f.norm_adds_one = true;
        f.mlp = MlpKind::geglu_tanh;
        f.positions = PositionKind::rope;
        f.embed_scale_sqrt_width = true;
        f.dense.activation_fields = {"hidden_activation", "hidden_act"};
        f.dense.activations = {"gelu_pytorch_tanh", "gelu_tanh", "gelu"};
        f.fields.tied_default = true;
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
