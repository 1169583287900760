#include "attnwalk/vocab.hpp"

#include <algorithm>
#include <sstream>

#include "attnwalk/errors.hpp"
#include "attnwalk/json_input.hpp"

namespace attnwalk {

namespace {

// Edit distance (insertions, deletions, substitutions), for "did you mean".
std::size_t edit_distance(const std::string& a, const std::string& b) {
    std::vector<std::size_t> row(b.size() + 1);
    for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
    for (std::size_t i = 1; i <= a.size(); ++i) {
        std::size_t diagonal = row[0];
        row[0] = i;
        for (std::size_t j = 1; j <= b.size(); ++j) {
            const std::size_t above = row[j];
            row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
            diagonal = above;
        }
    }
    return row[b.size()];
}

}  // namespace

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
            std::vector<std::pair<std::size_t, std::string>> ranked;
            for (const auto& known : vocab.words) ranked.emplace_back(edit_distance(w, known), known);
            std::sort(ranked.begin(), ranked.end());
            std::string closest;
            for (std::size_t i = 0; i < ranked.size() && i < 3; ++i) closest += (i ? ", " : "") + ranked[i].second;
            throw UsageError("'" + w.substr(0, 64) + "' is not in the vocabulary " + vocab.source +
                             " (closest: " + closest + ")");
        }
        const auto& v = vocab.vectors[static_cast<std::size_t>(it - vocab.words.begin())];
        out.x.data.insert(out.x.data.end(), v.begin(), v.end());
        out.tokens.push_back(w);
    }
    return out;
}

}  // namespace attnwalk
