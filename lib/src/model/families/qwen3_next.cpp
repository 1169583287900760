// Qwen3-Next: a hybrid of Gated DeltaNet layers (linear_attention: a state of fixed size
// written by the delta rule, a short convolution, a gated RMSNorm) and gated full-attention
// layers (full_attention: Qwen3's QK-norm and partial RoPE, with q_proj making each head's
// output gate too), three to one by default; RMSNorms that multiply by (1 + w); and a
// mixture of experts whose router takes a softmax over every expert, with a shared expert
// scaled by a sigmoid gate of its own.
#include "attnwalk/model/decoder.hpp"

namespace attnwalk {

const FamilySpec& qwen3_family();

const FamilySpec& qwen3_next_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = qwen3_family();
        f.model_type = "qwen3_next";
        f.models = "Qwen3-Next";
        f.norm_adds_one = true;
        f.query_gate = true;
        f.names.linear_attn = "linear_attn";
        f.names.router = "mlp.gate";
        f.names.experts = "mlp.experts";
        f.names.shared_experts = "mlp.shared_expert";
        f.names.shared_expert_gate = "mlp.shared_expert_gate";
        f.routing = RouterKind::softmax_all;
        f.expert_kind = ExpertKind::swiglu;
        f.fields.experts = "num_experts";
        f.fields.expert_hidden = "moe_intermediate_size";
        f.fields.shared_expert_width = "shared_expert_intermediate_size";
        f.fields.sparse_step = "decoder_sparse_step";
        f.fields.dense_layers = "mlp_only_layers";
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
