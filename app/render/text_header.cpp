// The text view's header: the tokens, then the options in effect, a loaded model in one
// line unless --show-config (render_text.cpp's first lines, and the walkthrough's parts').
#include <algorithm>
#include <string>
#include <variant>
#include <vector>

#include "text.hpp"
#include "text_parts.hpp"
#include "attnwalk/io/json_input.hpp"

namespace attnwalk::app {

namespace {

// One param of the header: "seed 123"; an index counts from 1 and says what PyTorch
// calls it: query_index 1 -> query 2 "journey" (inputs[1]), layer_index 0 -> layer 1 (index 0).
std::string param_text(const Trace& trace, const std::string& name, const ParamValue& v) {
    if (const Index* index = std::get_if<Index>(&v)) {
        const std::string suffix = "_index";
        std::string out = name.size() > suffix.size() && name.compare(name.size() - suffix.size(), suffix.size(), suffix) == 0
                              ? name.substr(0, name.size() - suffix.size())
                              : name;
        std::string counted, names, zero_based;
        for (std::size_t k = 0; k < index->at.size(); ++k) {
            const unsigned long long i = index->at[k];
            counted += (k ? "," : " ") + std::to_string(i + 1);
            if (index->names_tokens && i < trace.tokens.size()) names += (k ? "," : " ") + ("\"" + trace.tokens[i] + "\"");
            zero_based += (k ? ", " : "") + std::to_string(i);
        }
        return out + counted + names + " (" + (index->tensor.empty() ? "index " + zero_based : index->tensor + "[" + zero_based + "]") + ")";
    }
    return name + " " + std::visit([](const auto& x) -> std::string {
        using V = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<V, bool>) return x ? "yes" : "no";
        else if constexpr (std::is_same_v<V, std::string>) return x;
        else if constexpr (std::is_same_v<V, double>) return json_input::display_text(x);
        else if constexpr (std::is_same_v<V, unsigned long long>) return std::to_string(x);
        else return std::string();
    }, v);
}

// What a loaded model's header says of it (its file's and its config.json's fields): one
// line by default, every field under --show-config. None for a trace of no model.
bool model_field(const std::string& name) {
    static const char* const own[] = {"naming", "layout", "dtype", "biases", "vocab", "context", "width", "layers", "heads", "kv_heads", "head_dim", "heads_elsewhere"};
    return name.rfind("config.", 0) == 0 || std::find(std::begin(own), std::end(own), name) != std::end(own);
}

// "model FILE: llama, 2 layers, 4 heads, 8 features each (2 key/value heads), width 32, vocab 320, context 64, F32"
std::string model_line(const Trace& trace, std::size_t fields) {
    const auto text = [&](const std::string& name) -> std::string {
        for (const auto& [n, v] : trace.params)
            if (n == name) {
                if (const auto* s = std::get_if<std::string>(&v)) return *s;
                if (const auto* u = std::get_if<unsigned long long>(&v)) return std::to_string(*u);
            }
        return "";
    };
    std::vector<std::string> parts;
    if (!text("config.model_type").empty()) parts.push_back(text("config.model_type"));
    if (!text("layers").empty()) parts.push_back(text("layers") + " layers");
    if (!text("heads").empty())
        parts.push_back(text("heads") + " heads" + (text("head_dim").empty() ? "" : ", " + text("head_dim") + " features each") +
                        [&] {  // "(2 key/value heads; layers 3, 6: 16 features each, 1 key/value head)"
                            std::vector<std::string> said;
                            if (!text("kv_heads").empty() && text("kv_heads") != text("heads")) said.push_back(text("kv_heads") + " key/value heads");
                            if (!text("heads_elsewhere").empty()) said.push_back(text("heads_elsewhere"));
                            std::string out;
                            for (const std::string& s : said) out += (out.empty() ? " (" : "; ") + s;
                            return out.empty() ? out : out + ")";
                        }());
    for (const char* name : {"width", "vocab", "context"})
        if (!text(name).empty()) parts.push_back(std::string(name) + " " + text(name));
    if (!text("dtype").empty()) parts.push_back(text("dtype"));
    std::string line = "model " + text("model");
    for (std::size_t i = 0; i < parts.size(); ++i) line += (i ? ", " : ": ") + parts[i];
    return line + " (--show-config: its " + std::to_string(fields) + " fields)";
}

}  // namespace

std::string header_text(const Trace& trace, const TextOptions& opt) {
    std::string tokens;
    for (std::size_t i : shown(trace.tokens.size(), opt)) tokens += (tokens.empty() ? "" : " ") + (i == gap ? "…" : trace.tokens[i]);
    const bool model = !opt.show_config && std::any_of(trace.params.begin(), trace.params.end(), [](const auto& p) { return p.first == "model"; });
    std::string params, fields;
    std::size_t count = 0;
    for (const auto& [name, value] : trace.params) {
        if (model && (name == "model" || model_field(name))) {
            count += name != "model";
            continue;
        }
        params += (params.empty() ? "" : ", ") + param_text(trace, name, value);
    }
    return (trace.tokens.empty() ? "attnwalk " + trace.command + "\n"  // no input (params)
                                 : wrap(tokens, opt.columns, "attnwalk " + trace.command + ": ", "  ")) +
           (model ? wrap(model_line(trace, count), opt.columns, "  ", "    ") : "") + wrap(params, opt.columns, "  ", "  ");
}

}  // namespace attnwalk::app
