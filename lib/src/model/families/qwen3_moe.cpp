// Qwen3-MoE (Qwen3-30B-A3B, Qwen3-235B-A22B): Qwen3's attention (QK-norm per head, RoPE,
// grouped-query heads) with a sparse mixture of experts in place of the MLP: a router over
// every expert (a softmax), the num_experts_per_tok most probable, renormalised when
// norm_topk_prob; each expert a SwiGLU of moe_intermediate_size; no shared expert. A dense
// MLP on mlp_only_layers and wherever decoder_sparse_step leaves one.
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& qwen3_family();

const FamilySpec& qwen3_moe_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = qwen3_family();
        f.model_type = "qwen3_moe";
        f.models = "Qwen3-30B-A3B, Qwen3-235B-A22B";
        ExpertsPart& e = f.experts.emplace();
        e.routing = RouterKind::softmax_all;
        e.kind = ExpertKind::swiglu;
        e.router = "mlp.gate";
        e.count = "num_experts";
        e.hidden = "moe_intermediate_size";
        e.sparse_step = "decoder_sparse_step";
        e.dense_layers = "mlp_only_layers";
        e.normalise_default = false;  // Qwen3MoeConfig's default (the released configs say true)
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
