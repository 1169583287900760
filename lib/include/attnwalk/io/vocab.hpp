// Text input: a sentence split at whitespace, each word looked up in a vocabulary.
//
//   {"Your": [0.43, 0.15, 0.89], "journey": [0.55, 0.87, 0.66], ...}
//
// Every vector has the same length d. Lookup is exact (case-sensitive).
#pragma once

#include <string>
#include <vector>

#include "attnwalk/io/embeddings.hpp"

namespace attnwalk {

struct Vocab {
    std::string source;
    std::vector<std::string> words;      // in file order
    std::vector<std::vector<float>> vectors;
    std::size_t dim() const { return vectors.empty() ? 0 : vectors[0].size(); }
};

// Parses a vocabulary's JSON text; `source` names it in errors. Throws InputError.
Vocab parse_vocab(const std::string& text, const std::string& source);
Vocab load_vocab(const std::string& path);

// Splits `text` at whitespace and looks every word up; `source` names the result. An
// unknown word is a UsageError naming the closest known words.
Embeddings embed_text(const std::string& text, const Vocab& vocab, const std::string& source);

}  // namespace attnwalk
