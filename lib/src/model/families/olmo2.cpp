// OLMo 2: a Llama made post-norm (the norm is applied to the attention's and the MLP's
// outputs before each residual add, none before them), with an RMSNorm over the whole
// query and key projections before RoPE.
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& llama_family();

const FamilySpec& olmo2_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = llama_family();
        f.model_type = "olmo2";
        f.gguf = {"olmo2", f.model_type, false, "", {}, {}};
        f.models = "OLMo 2";
        f.placement = NormPlacement::post;
        f.heads.qk_norm = QkNormSpan::whole;
        f.names.pre_attention_norm = "";
        f.names.post_attention_norm = "post_attention_layernorm";
        f.names.pre_mlp_norm = "";
        f.names.post_mlp_norm = "post_feedforward_layernorm";
        f.fields.norm_eps_default = 1e-5;
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
