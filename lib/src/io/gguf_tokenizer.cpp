// A GGUF file's tokenizer (tokenizer.ggml.*) as the tokenizer.json it came from: byte-level
// BPE, its pre-tokenizer's split pattern named by tokenizer.ggml.pre, control and
// user-defined tokens (token_type 3 and 4) as added tokens cut out of the text first, the BOS
// the file says to add. The names llama.cpp gives them are the families' (their GgufPart):
// this file knows none. A SentencePiece vocabulary is refused by name.
#include <algorithm>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/gguf.hpp"
#include "attnwalk/io/json_input.hpp"
#include "attnwalk/io/tokenizer.hpp"
#include "tokenizer_parts.hpp"

namespace attnwalk {

namespace {

using json_input::Value;

const auto member_list = json_input::object_value;
const auto text = json_input::string_value;
const auto flag = json_input::bool_value;
const auto list = json_input::array_value;

}  // namespace

std::shared_ptr<const Tokenizer> read_gguf_tokenizer(const std::string& path, const std::vector<std::string>& vocabularies,
                                                     const std::vector<GgufPreTokenizer>& pres, double memory_budget, TokenizerUse use) {
    const GgufFile g(path, memory_budget);
    if (!g.find("tokenizer.ggml.model")) return nullptr;  // weights alone
    const std::string model = g.text("tokenizer.ggml.model");
    const auto listed = [](const auto& items, const auto& name_of) {
        std::string out;
        for (const auto& i : items) out += (out.empty() ? "\"" : ", \"") + name_of(i) + "\"";
        return out;
    };
    if (std::find(vocabularies.begin(), vocabularies.end(), model) == vocabularies.end())
        throw InputError(path, "metadata \"tokenizer.ggml.model\"",
                         "vocabulary \"" + model + "\" is not supported yet (" + listed(vocabularies, [](const std::string& v) { return v; }) +
                             ", byte-level BPE, is; a SentencePiece one is not): give the model's tokenizer.json, or the prompt as ids");
    const auto plain = std::find_if(pres.begin(), pres.end(), [](const GgufPreTokenizer& p) { return p.pattern.empty(); });
    const std::string unnamed = plain != pres.end() ? plain->name : std::string();  // without a name: GPT-2's regex, llama.cpp's "default"
    const std::string pre_name = g.text("tokenizer.ggml.pre", &unnamed);
    const auto pre = std::find_if(pres.begin(), pres.end(), [&](const GgufPreTokenizer& p) { return p.name == pre_name; });
    if (pre == pres.end())
        throw InputError(path, "metadata \"tokenizer.ggml.pre\"",
                         "pre-tokenizer \"" + pre_name + "\" is not supported (" + listed(pres, [](const GgufPreTokenizer& p) { return p.name; }) + " are)");
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
        added.push_back(member_list({{"id", json_input::number_value(static_cast<double>(i))}, {"content", text(tokens[i])}, {"special", flag(true)}}));
    }
    std::vector<Value> pre_steps;
    if (!pre->pattern.empty()) {
        pre_steps.push_back(member_list({{"type", text("Split")},
                                         {"pattern", member_list({{"Regex", text(pre->pattern)}})},
                                         {"behavior", text("Isolated")},
                                         {"invert", flag(false)}}));
    }
    pre_steps.push_back(member_list({{"type", text("ByteLevel")}, {"add_prefix_space", flag(false)}, {"use_regex", flag(pre->pattern.empty())}}));
    Value doc = member_list({});  // a tokenizer.json's members, in its order
    doc.object.emplace_back("added_tokens", list(std::move(added)));
    if (pre->nfc) doc.object.emplace_back("normalizer", member_list({{"type", text("NFC")}}));
    doc.object.emplace_back("pre_tokenizer", member_list({{"type", text("Sequence")}, {"pretokenizers", list(std::move(pre_steps))}}));
    std::vector<Value> single, specials_list;
    Value specials = member_list({});
    const auto special = [&](const char* key, const char* add_key, bool add_default) {
        if (!g.find(key) || !g.flag(add_key, add_default)) return false;
        const std::uint64_t id = g.whole(key);
        if (id >= tokens.size()) throw InputError(path, std::string("metadata \"") + key + "\"", "expected a token id below " + std::to_string(tokens.size()));
        const Value ids = json_input::number_value(static_cast<double>(id));
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
