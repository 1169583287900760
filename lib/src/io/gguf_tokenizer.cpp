// A GGUF file's tokenizer (tokenizer.ggml.*) as the tokenizer.json it came from: the
// byte-level BPE of tokenizer.ggml.model "gpt2", its pre-tokenizer's split pattern named by
// tokenizer.ggml.pre, control and user-defined tokens (token_type 3 and 4) as added tokens
// cut out of the text first, the BOS the file says to add. SentencePiece vocabularies
// (model "llama") are refused by name.
#include "attnwalk/errors.hpp"
#include "attnwalk/io/gguf.hpp"
#include "attnwalk/io/json_input.hpp"
#include "attnwalk/io/tokenizer.hpp"
#include "tokenizer_parts.hpp"

namespace attnwalk {

namespace {

using json_input::Value;

Value member_list(std::vector<std::pair<std::string, Value>> members) {
    Value v;
    v.type = Value::Type::object;
    v.object = std::move(members);
    return v;
}
Value text(const std::string& s) {
    Value v;
    v.type = Value::Type::string;
    v.string = s;
    return v;
}
Value flag(bool b) {
    Value v;
    v.type = Value::Type::boolean;
    v.boolean = b;
    return v;
}
Value list(std::vector<Value> items) {
    Value v;
    v.type = Value::Type::array;
    v.array = std::move(items);
    return v;
}

// tokenizer.ggml.pre → the split pattern of the tokenizer.json it names (llama.cpp's
// llama-vocab.cpp keeps the same patterns), whether merges are skipped for a piece that is
// a token (Llama 3), and whether the text is NFC-normalized first (Qwen2).
struct Pre {
    const char* name;
    const char* pattern;  // null: GPT-2's ByteLevel regex
    bool ignore_merges, nfc;
};
const Pre pres[] = {
    {"llama-bpe", R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}{1,3}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)", true, false},
    {"qwen2", R"((?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\r\n\p{L}\p{N}]?\p{L}+|\p{N}| ?[^\s\p{L}\p{N}]+[\r\n]*|\s*[\r\n]+|\s+(?!\S)|\s+)", false, true},
    {"gpt-2", nullptr, false, false},
};

}  // namespace

std::shared_ptr<const Tokenizer> load_gguf_tokenizer(const std::string& path, double memory_budget, TokenizerUse use) {
    const GgufFile g(path, memory_budget);
    if (!g.find("tokenizer.ggml.model")) return nullptr;  // weights alone
    const std::string model = g.text("tokenizer.ggml.model");
    if (model == "llama")
        throw InputError(path, "metadata \"tokenizer.ggml.model\"",
                         "a SentencePiece vocabulary (\"llama\") is not supported yet: give the model's tokenizer.json with --tokenizer, or the prompt as --ids");
    if (model != "gpt2") throw InputError(path, "metadata \"tokenizer.ggml.model\"", "expected \"gpt2\" (byte-level BPE), got \"" + model + "\"");
    const std::string fallback = "gpt-2", pre_name = g.text("tokenizer.ggml.pre", &fallback);
    const Pre* pre = nullptr;
    std::string known;
    for (const Pre& p : pres) {
        if (pre_name == p.name) pre = &p;
        known += (known.empty() ? "" : ", ") + std::string(p.name);
    }
    if (!pre) throw InputError(path, "metadata \"tokenizer.ggml.pre\"", "pre-tokenizer \"" + pre_name + "\" is not supported (" + known + " are)");
    const std::vector<std::string>& tokens = g.texts("tokenizer.ggml.tokens");
    static const std::vector<std::string> none;
    const std::vector<std::string>& merges = g.find("tokenizer.ggml.merges") ? g.texts("tokenizer.ggml.merges") : none;
    const std::vector<std::int64_t>* types = g.find("tokenizer.ggml.token_type") ? &g.wholes("tokenizer.ggml.token_type") : nullptr;
    if (types && types->size() != tokens.size())
        throw InputError(path, "metadata \"tokenizer.ggml.token_type\"",
                         "expected one type per token (" + std::to_string(tokens.size()) + "), got " + std::to_string(types->size()));

    std::vector<Value> added;
    for (std::size_t i = 0; types && i < tokens.size(); ++i) {
        if ((*types)[i] != 3 && (*types)[i] != 4) continue;  // control, user-defined
        Value id;
        id.type = Value::Type::number;
        id.number = static_cast<double>(i);
        added.push_back(member_list({{"id", id}, {"content", text(tokens[i])}, {"special", flag(true)}}));
    }
    std::vector<Value> pre_steps;
    if (pre->pattern) {
        pre_steps.push_back(member_list({{"type", text("Split")},
                                         {"pattern", member_list({{"Regex", text(pre->pattern)}})},
                                         {"behavior", text("Isolated")},
                                         {"invert", flag(false)}}));
    }
    pre_steps.push_back(member_list({{"type", text("ByteLevel")}, {"add_prefix_space", flag(false)}, {"use_regex", flag(!pre->pattern)}}));
    Value doc = member_list({});
    doc.object.emplace_back("added_tokens", list(std::move(added)));
    if (pre->nfc) doc.object.emplace_back("normalizer", member_list({{"type", text("NFC")}}));
    doc.object.emplace_back("pre_tokenizer", member_list({{"type", text("Sequence")}, {"pretokenizers", list(std::move(pre_steps))}}));
    std::vector<Value> single, specials_list;
    Value specials = member_list({});
    const auto special = [&](const char* key, const char* add_key, bool add_default) {
        if (!g.find(key) || !g.flag(add_key, add_default)) return false;
        const std::uint64_t id = g.whole(key);
        if (id >= tokens.size()) throw InputError(path, std::string("metadata \"") + key + "\"", "expected a token id below " + std::to_string(tokens.size()));
        Value ids;
        ids.type = Value::Type::number;
        ids.number = static_cast<double>(id);
        single.push_back(member_list({{"SpecialToken", member_list({{"id", text(tokens[id])}})}}));
        specials.object.emplace_back(tokens[id], member_list({{"ids", list({ids})}}));
        return true;
    };
    special("tokenizer.ggml.bos_token_id", "tokenizer.ggml.add_bos_token", false);
    single.push_back(member_list({{"Sequence", member_list({{"id", text("A")}})}}));
    special("tokenizer.ggml.eos_token_id", "tokenizer.ggml.add_eos_token", false);
    doc.object.emplace_back("post_processor", member_list({{"type", text("TemplateProcessing")}, {"single", list(std::move(single))}, {"special_tokens", std::move(specials)}}));
    doc.object.emplace_back("decoder", member_list({{"type", text("ByteLevel")}}));
    doc.object.emplace_back("model", member_list({{"type", text("BPE")},
                                                  {"ignore_merges", flag(pre->ignore_merges)},
                                                  {"vocab", member_list({})},
                                                  {"merges", list({})}}));
    return tokenizer_of_parts(path, doc, tokens, merges, use, "metadata \"tokenizer.ggml");
}

}  // namespace attnwalk
