// DeepSeek-V3 (and the models built on its code: Kimi K2, Moonlight): a Llama-like
// pre-norm decoder whose attention is multi-head latent attention (MLA: the keys and
// values of every head made from one small latent per token, a rotary key part shared by
// the heads, with or without a query latent), and whose MLP after the first
// first_k_dense_replace layers is a mixture of experts: a sigmoid router whose correction
// bias chooses within the best groups of experts, the chosen scores normalised and scaled,
// SwiGLU experts each stored on its own, and a shared expert every token goes through.
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& llama_family();

const FamilySpec& deepseek_v3_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = llama_family();
        f.model_type = "deepseek_v3";
        f.models = "DeepSeek-V3, Kimi K2, Moonlight";
        f.attention = AttentionKind::latent;
        ExpertsPart& e = f.experts.emplace();
        e.routing = RouterKind::sigmoid_grouped;
        e.kind = ExpertKind::swiglu;
        e.router = "mlp.gate";
        e.router_bias = "e_score_correction_bias";
        e.shared_experts = "mlp.shared_experts";
        e.count = "n_routed_experts";
        e.hidden = "moe_intermediate_size";
        e.first_dense = "first_k_dense_replace";
        e.shared_count = "n_shared_experts";
        f.fields.extra_layers = "num_nextn_predict_layers";  // the multi-token-prediction layers the forward does not run
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
