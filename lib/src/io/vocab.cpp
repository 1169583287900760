#include "attnwalk/io/vocab.hpp"

#include <algorithm>
#include <sstream>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/did_you_mean.hpp"
#include "attnwalk/io/json_input.hpp"

namespace attnwalk {


Vocab parse_vocab(const std::string& text, const std::string& source) {
    const json_input::Value doc = json_input::parse(text, source);
    if (!doc.is_object() || doc.object.empty())
        throw InputError(source, "$", "expected a non-empty JSON object {\"word\": [numbers], ...}, got " +
                                          (doc.is_object() ? std::string("{}") : json_input::type_name(doc)));
    Vocab vocab;
    vocab.source = source;
    for (const auto& [word, value] : doc.object) {
        const std::string path = "$[" + json_input::quote(word) + "]";
        if (word.empty() || word.size() > max_token_bytes || word.find_first_of(" \t\n\r\f\v") != std::string::npos)
            throw InputError(source, path, "a word must be 1 to " + std::to_string(max_token_bytes) +
                                               " bytes without whitespace");
        const Tensor& t = json_input::tensor_of(value, source, path);
        if (t.shape.size() != 1)
            throw InputError(source, path, "expected a vector of numbers, got " + json_input::shape_string(t.shape));
        if (!vocab.vectors.empty() && t.shape[0] != vocab.dim())
            throw InputError(source, path, "expected " + std::to_string(vocab.dim()) +
                                               " numbers like the first word, got " + std::to_string(t.shape[0]));
        vocab.words.push_back(word);
        vocab.vectors.push_back(t.data);
    }
    return vocab;
}

Vocab load_vocab(const std::string& path) {
    return parse_vocab(read_text_file(path), source_name(path));
}

Embeddings embed_text(const std::string& text, const Vocab& vocab, const std::string& source) {
    std::istringstream in(text);
    std::vector<std::string> words;
    for (std::string w; in >> w;) words.push_back(w);
    if (words.empty()) throw UsageError("the sentence has no words");
    Embeddings out;
    out.source = source;
    out.x.shape = {1, words.size(), vocab.dim()};
    for (const auto& w : words) {
        const auto it = std::find(vocab.words.begin(), vocab.words.end(), w);
        if (it == vocab.words.end()) {
            std::string near;
            for (const auto& known : closest(w, vocab.words, 3)) near += (near.empty() ? "" : ", ") + known;
            throw UsageError("'" + w.substr(0, 64) + "' is not in the vocabulary " + vocab.source +
                             " (closest: " + near + ")");
        }
        const auto& v = vocab.vectors[static_cast<std::size_t>(it - vocab.words.begin())];
        out.x.data.insert(out.x.data.end(), v.begin(), v.end());
        out.tokens.push_back(w);
    }
    return out;
}

}  // namespace attnwalk
