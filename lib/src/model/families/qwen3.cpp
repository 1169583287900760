// Qwen3 (dense): a Llama with QK-norm, an RMSNorm on each head's queries and keys before
// RoPE, and its own head_dim.
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& llama_family();

const FamilySpec& qwen3_family() {
    static const FamilySpec spec = [] {
        FamilySpec f = llama_family();
        f.model_type = "qwen3";
        f.gguf = {"qwen3", f.model_type, false, "", {}, {}};
        f.models = "Qwen3";
        f.heads.qk_norm = QkNormSpan::per_head;
        f.fields.refused_true = {"use_sliding_window"};
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
