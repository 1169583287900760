// Qwen2 and Qwen2.5: a Llama with biases on the queries, keys and values.
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& llama_family();

const FamilySpec& qwen2_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = llama_family();
        f.model_type = "qwen2";
        f.gguf = {"qwen2", f.model_type, false};
        f.models = "Qwen2, Qwen2.5";
        f.heads.qkv_bias = true;
        f.fields.refused_true = {"use_sliding_window"};  // Qwen's window rule (max_window_layers) is not read
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
