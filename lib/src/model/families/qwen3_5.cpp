// Qwen3.5 (dense): Qwen3-Next's hybrid of Gated DeltaNet and gated full-attention layers
// with a dense MLP, shipped as an image-and-text checkpoint: config.json keeps the text
// model's fields in text_config and the tensors lie under model.language_model. (the
// vision tower's beside them are named as unused); the DeltaNet's projections are four
// (in_proj_qkv, in_proj_z, in_proj_b, in_proj_a). Its multimodal RoPE (mrope_section)
// turns every section by the same position for text alone, which is plain RoPE.
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& qwen3_next_family();

const FamilySpec& qwen3_5_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = qwen3_next_family();
        f.model_type = "qwen3_5";
        f.models = "Qwen3.5";
        f.names.prefix = "model.language_model.";
        f.experts.reset();  // a dense MLP in every layer
        f.fields.nested = "text_config";
        f.refused_types = {{"qwen3_5_moe", "Qwen3.5's mixture of experts, which this version does not read (the dense qwen3_5 it does)"}};
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
