// Qwen3-Next: a hybrid of Gated DeltaNet layers (linear_attention: a state of fixed size
// written by the delta rule, a short convolution, a gated RMSNorm) and gated full-attention
// layers (full_attention: Qwen3's QK-norm and partial RoPE, with q_proj making each head's
// output gate too), three to one by default; RMSNorms that multiply by (1 + w); and a
// mixture of experts whose router takes a softmax over every expert, with a shared expert
// scaled by a sigmoid gate of its own.
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& qwen3_family();

const FamilySpec& qwen3_next_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = qwen3_family();
        f.model_type = "qwen3_next";
        f.models = "Qwen3-Next";
        f.norm_adds_one = true;
        f.heads.query_gate = true;
        f.deltanet.emplace();  // DeltaNetPart's default: the module linear_attn
        ExpertsPart& e = f.experts.emplace();
        e.routing = RouterKind::softmax_all;
        e.kind = ExpertKind::swiglu;
        e.router = "mlp.gate";
        e.shared_experts = "mlp.shared_expert";
        e.shared_expert_gate = "mlp.shared_expert_gate";
        e.count = "num_experts";
        e.hidden = "moe_intermediate_size";
        e.shared_width = "shared_expert_intermediate_size";
        e.sparse_step = "decoder_sparse_step";
        e.dense_layers = "mlp_only_layers";
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
