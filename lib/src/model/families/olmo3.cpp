// OLMo 3: OLMo 2's blocks (post-norm, QK-norm over the whole projections) with
// layer_types of sliding-window and full attention (every fourth layer full); YaRN's
// rope_scaling applies to the full layers only.
#include "attnwalk/model/decoder.hpp"

namespace attnwalk {

const FamilySpec& olmo3_family() {
    static const FamilySpec f = [] {
        FamilySpec f;
        f.model_type = "olmo3";
        f.models = "OLMo 3";
        f.norm = NormKind::rms_norm;
        f.placement = NormPlacement::post;
        f.mlp = MlpKind::swiglu;
        f.positions = PositionKind::rope;
        f.qk_norm = QkNormSpan::whole;
        f.window_pattern = WindowPattern::every_nth_full;
        f.window_pattern_default = 4;
        f.names.pre_attention_norm = "";
        f.names.post_attention_norm = "post_attention_layernorm";
        f.names.pre_mlp_norm = "";
        f.names.post_mlp_norm = "post_feedforward_layernorm";
        f.fields.norm_eps_default = 1e-5;
        f.fields.rope_theta_default = 500000.0;
        return f;
    }();
    return f;
}

}  // namespace attnwalk
