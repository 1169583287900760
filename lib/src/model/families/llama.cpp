// Llama 3 (and SmolLM2, which is a Llama): RMSNorm before each sublayer, SwiGLU, RoPE
// (rope_theta, rope_scaling llama3 or linear), grouped-query attention.
#include "attnwalk/model/family.hpp"

namespace attnwalk {

const FamilySpec& llama_family() {
    static const FamilySpec spec = [] {
        FamilySpec f;
        f.model_type = "llama";
        f.gguf = {"llama", f.model_type, true, "", {}, {}};
        f.gguf.pre = {{"llama-bpe", R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)",
                       true, false}};  // Llama 3's tokenizer.json: ignore_merges
        f.models = "Llama 3, SmolLM2";
        f.norm = NormKind::rms_norm;
        f.mlp = MlpKind::swiglu;
        f.positions = PositionKind::rope;
        f.fields.norm_eps_default = 1e-6;
        return f;
    }();
    return spec;
}

}  // namespace attnwalk
