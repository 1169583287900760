// SmolLM3: a Llama whose no_rope_layers list leaves some layers without RoPE (0: no
// rotation there; every fourth layer in the released 3B).
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& llama_family();

const FamilySpec& smollm3_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = llama_family();
        f.model_type = "smollm3";
        f.models = "SmolLM3";
        f.layers.no_rope_layers = "no_rope_layers";
        f.layers.no_rope_interval = "no_rope_layer_interval";
        f.fields.tied_default = true;
        f.layers.rope_theta_default = 2000000.0;
        f.fields.refused_true.clear();
        f.layers.windows = true;  // as layer_types say, or the layers without RoPE, once use_sliding_window is true
        f.layers.windows_flag = "use_sliding_window";
        f.layers.window_pattern = WindowPattern::nope_layers;
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
