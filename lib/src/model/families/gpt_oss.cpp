// gpt-oss (OpenAI, 2025): a Llama-like decoder with biases on every attention projection,
// learned attention sinks (one logit per head joins each row's softmax), sliding-window
// and full layers alternating (layer_types), YaRN RoPE, and a mixture of experts in
// place of the MLP: a top-k router with a softmax over the chosen logits and experts with
// a clamped SwiGLU, kept in MXFP4 in the released checkpoints.
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& llama_family();

const FamilySpec& gpt_oss_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = llama_family();
        f.layers.windows = true;  // its sliding layers, as layer_types (or the pattern) say
        f.model_type = "gpt_oss";
        f.models = "gpt-oss";
        f.heads.sinks = "self_attn.sinks";
        f.experts.emplace();  // ExpertsPart's defaults: the router mlp.router, softmax over the top k, clamped SwiGLU experts
        f.fields.norm_eps_default = 1e-5;
        f.layers.sliding_layers_scaled = true;  // one rotary embedding for every layer: YaRN on the sliding ones too
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
