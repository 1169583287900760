// Gemma 3 (text): Gemma's blocks with norms after each sublayer too, QK-norm per head,
// scores / √query_pre_attn_scalar, and sliding-window layers with their own RoPE base
// (rope_local_base_freq, never rescaled), every sixth layer global.
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& gemma_family();

const FamilySpec& gemma3_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = gemma_family();
        f.layers.windows = true;  // its sliding layers, as layer_types (or the pattern) say
        f.model_type = "gemma3_text";
        f.gguf = {"gemma3", f.model_type, false, "", {}, {}};
        f.models = "Gemma 3 270M and 1B";
        f.placement = NormPlacement::both;
        f.heads.qk_norm = QkNormSpan::per_head;
        f.layers.window_pattern = WindowPattern::every_nth_full;
        f.layers.window_pattern_default = 6;
        f.names.post_attention_norm = "post_attention_layernorm";
        f.names.pre_mlp_norm = "pre_feedforward_layernorm";
        f.names.post_mlp_norm = "post_feedforward_layernorm";
        f.dense.activations = {"gelu_pytorch_tanh", "gelu_tanh"};
        f.layers.rope_theta_default = 1e6;
        f.layers.sliding_rope_base = "rope_local_base_freq";
        f.heads.scale_field = "query_pre_attn_scalar";
        f.refused_types = {{"gemma3", "Gemma 3's image-and-text model (4B and up); its text part is not supported yet"}};
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
