// Gemma 3 (text): the embeddings × √C; RMSNorm with (1 + w) before and after each
// sublayer; GeGLU (tanh GELU); QK-norm per head; scores / √query_pre_attn_scalar;
// sliding-window layers with their own RoPE base (rope_local_base_freq, never rescaled)
// and every sixth layer global.
#include "attnwalk/model/decoder.hpp"

namespace attnwalk {

const FamilySpec& gemma3_family() {
    static const FamilySpec f = [] {
        FamilySpec f;
        f.model_type = "gemma3_text";
        f.models = "Gemma 3 270M and 1B";
        f.norm = NormKind::rms_norm;
        f.norm_adds_one = true;
        f.placement = NormPlacement::both;
        f.mlp = MlpKind::geglu_tanh;
        f.positions = PositionKind::rope;
        f.qk_norm = QkNormSpan::per_head;
        f.embed_scale_sqrt_width = true;
        f.window_pattern = WindowPattern::every_nth_full;
        f.window_pattern_default = 6;
        f.names.post_attention_norm = "post_attention_layernorm";
        f.names.pre_mlp_norm = "pre_feedforward_layernorm";
        f.names.post_mlp_norm = "post_feedforward_layernorm";
        f.fields.activation = {"hidden_activation", "hidden_act"};
        f.fields.activations = {"gelu_pytorch_tanh", "gelu_tanh"};
        f.fields.rope_theta_default = 1e6;
        f.fields.sliding_rope_base = "rope_local_base_freq";
        f.fields.scale = "query_pre_attn_scalar";
        f.fields.tied_default = true;
        f.refused_types = {{"gemma3", "Gemma 3's image-and-text model (4B and up); its text part is not supported yet"}};
        return f;
    }();
    return f;
}

}  // namespace attnwalk
