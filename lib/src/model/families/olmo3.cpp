// OLMo 3: OLMo 2's blocks with layer_types of sliding-window and full attention (every
// fourth layer full); YaRN's rope_scaling applies to the full layers only.
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& olmo2_family();

const FamilySpec& olmo3_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = olmo2_family();
        f.layers.windows = true;  // its sliding layers, as layer_types (or the pattern) say
        f.model_type = "olmo3";
        f.models = "OLMo 3";
        f.layers.window_pattern = WindowPattern::every_nth_full;
        f.layers.window_pattern_default = 4;
        f.layers.rope_theta_default = 500000.0;
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
