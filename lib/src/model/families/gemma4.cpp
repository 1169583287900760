// Gemma 4 (text): Gemma 3's blocks (norms before and after each sublayer, GeGLU, the
// embeddings × √C, the head tied) with RMSNorm's plain w, not (1 + w); q_norm and k_norm per
// head and a norm without a scale on the values; scores not scaled (1.0); sliding layers of
// head_dim with RoPE θ 1e4, full layers of global_head_dim with the "proportional" RoPE
// (partial_rotary_factor 0.25, θ 1e6); on the full layers, with attention_k_eq_v, the keys'
// projection makes the values too (num_global_key_value_heads); the last
// num_kv_shared_layers layers read the keys and values of the last earlier layer of their
// type, with twice the MLP's width where use_double_wide_mlp says; each layer's output ×
// its layer_scalar; per-layer inputs (hidden_size_per_layer_input, Gemma 4 E2B and E4B:
// blocks/per_layer.hpp); the last layer full attention whatever layer_types says (as
// Gemma4TextConfig forces it); the logits soft-capped (final_logit_softcapping). "gemma4", the
// image-and-text checkpoint, keeps the text model's fields in text_config and its tensors
// under model.language_model. (the vision and audio towers' beside them are named as unused).
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& gemma3_family();

const FamilySpec& gemma4_text_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = gemma3_family();
        f.model_type = "gemma4_text";
        f.models = "Gemma 4 (text)";
        f.norm_adds_one = false;
        f.heads.scale_field = "";
        f.heads.unscaled = true;
        f.heads.v_norm = true;
        f.heads.full_head_dim = "global_head_dim";
        f.heads.full_kv_heads = "num_global_key_value_heads";
        f.heads.keys_as_values = "attention_k_eq_v";
        f.heads.shared_layers = "num_kv_shared_layers";
        f.dense.double_wide = "use_double_wide_mlp";
        f.layers.window_pattern_default = 6;
        f.layers.rope_theta_default = 1e6;        // without rope_parameters: the full layers' θ (the sliding ones' stays 1e4)
        f.layers.full_proportion_default = 0.25;  // and their RoPE "proportional"
        f.names.layer_scalar = "layer_scalar";
        f.fields.logit_softcap = "final_logit_softcapping";
        f.fields.refused_true = {"enable_moe_block"};
        f.per_layer = PerLayerPart{};
        f.layers.last_layer_full = true;
        f.refused_types = {};
        return f;
    }();
    return spec;
}

const FamilySpec& gemma4_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = gemma4_text_family();
        f.model_type = "gemma4";
        f.models = "Gemma 4 (image and text, its text model)";
        f.names.prefix = "model.language_model.";
        f.fields.nested = "text_config";
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
