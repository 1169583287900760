// Qwen2 and Qwen2.5: a Llama with biases on the queries, keys and values.
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& llama_family();

const FamilySpec& qwen2_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = llama_family();
        f.model_type = "qwen2";
        f.gguf = {"qwen2", f.model_type, false, "", {}, {}};
        f.gguf.pre = {{"qwen2", R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)", false,
                       true}};  // Qwen2's tokenizer.json: NFC first
        f.models = "Qwen2, Qwen2.5";
        f.heads.qkv_bias = true;
        f.fields.refused_true = {"use_sliding_window"};  // Qwen's window rule (max_window_layers) is not read
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
