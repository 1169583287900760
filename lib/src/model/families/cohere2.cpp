// Cohere 2 (Command R7B, Tiny Aya): a parallel block, h = x + attn(LN(x)) + mlp(LN(x)), with
// one LayerNorm without a shift; RoPE in Cohere's interleaved pair layout on the sliding
// layers only and none on the full ones (layer_types, or every sliding_window_pattern-th
// layer full); SwiGLU; the logits × logit_scale; the head tied to the embeddings.
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& llama_family();

const FamilySpec& cohere2_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = llama_family();
        f.model_type = "cohere2";
        f.models = "Command R7B, Tiny Aya";
        f.norm = NormKind::layer_norm_no_bias;
        f.placement = NormPlacement::parallel;
        f.names.pre_mlp_norm = "";
        f.layers.windows = true;
        f.layers.window_pattern = WindowPattern::every_nth_full;
        f.layers.window_pattern_default = 4;
        f.layers.rope_on_sliding_only = true;
        f.layers.rope_interleaved = true;
        f.layers.sliding_layers_scaled = true;  // one rotary embedding, for the sliding layers
        f.layers.window_default = 4096;  // Cohere2Config's
        f.fields.norm_eps = "layer_norm_eps";
        f.fields.norm_eps_default = 1e-5;
        f.fields.tied_default = true;
        f.fields.head_dim = "";  // Cohere2Config takes C/H whatever config.json says
        f.fields.logit_scale = "logit_scale";
        f.fields.logit_scale_default = 0.0625;
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
