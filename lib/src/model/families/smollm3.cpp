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
        f.fields.tied_default = true;
        f.layers.rope_theta_default = 2000000.0;
        f.fields.refused_true = {"use_sliding_window"};
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
