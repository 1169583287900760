// The registry of model families: one line each. A family itself is a page of data in
// families/ (model/family.hpp).
#include "attnwalk/model/family.hpp"

#include <cctype>

namespace attnwalk {

const FamilySpec& gpt2_family();
const FamilySpec& llama_family();
const FamilySpec& qwen2_family();
const FamilySpec& qwen3_family();
const FamilySpec& qwen3_moe_family();
const FamilySpec& gemma_family();
const FamilySpec& gemma3_family();
const FamilySpec& olmo2_family();
const FamilySpec& olmo3_family();
const FamilySpec& smollm3_family();
const FamilySpec& gpt_oss_family();
const FamilySpec& deepseek_v3_family();
const FamilySpec& deepseek_v32_family();
const FamilySpec& qwen3_next_family();
const FamilySpec& qwen3_5_family();
const FamilySpec& cohere2_family();
const FamilySpec& gemma4_text_family();
const FamilySpec& gemma4_family();

const std::vector<const FamilySpec*>& families() {
    static const std::vector<const FamilySpec*> all = {
        &gpt2_family(),  &llama_family(), &qwen2_family(), &qwen3_family(), &qwen3_moe_family(),
        &gemma_family(), &gemma3_family(), &olmo2_family(), &olmo3_family(), &smollm3_family(),
        &gpt_oss_family(), &deepseek_v3_family(), &qwen3_next_family(), &qwen3_5_family(), &cohere2_family(),
        &gemma4_text_family(), &gemma4_family(), &deepseek_v32_family(),
    };
    return all;
}

const FamilySpec* find_family(const std::string& model_type) {
    for (const FamilySpec* f : families())
        if (f->model_type == model_type) return f;
    return nullptr;
}

std::string supported_families() {
    // the models in brackets where they say more than the type: "llama (Llama 3, SmolLM2)", but "qwen3"
    const auto letters = [](const std::string& s) {
        std::string out;
        for (char c : s)
            if (std::isalnum(static_cast<unsigned char>(c))) out += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
        return out;
    };
    std::string out;
    for (const FamilySpec* f : families())
        out += (out.empty() ? "" : ", ") + f->model_type + (letters(f->models) == letters(f->model_type) ? "" : " (" + f->models + ")");
    return out;
}

std::string FamilySpec::norm_words() const {
    if (norm == NormKind::layer_norm) return "LayerNorm";
    if (norm == NormKind::layer_norm_no_bias) return "LayerNorm without a bias";
    return norm_adds_one ? "RMSNorm with (1 + w)" : "RMSNorm";
}

}  // namespace attnwalk
