// A tokenizer: text to token ids and back. Two kinds read their own files: GPT-2's
// encoder.json + vocab.bpe (io/bpe.hpp) and Hugging Face's tokenizer.json (this file's
// load_tokenizer_json: byte-level BPE as Llama 3, SmolLM2 and Qwen ship it, and the
// SentencePiece-style BPE with byte fallback of Gemma).
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <string>
#include <vector>

namespace attnwalk {

class Tokenizer {
public:
    virtual ~Tokenizer() = default;
    // The ids of `text`, with the special tokens the tokenizer adds itself (a BOS, if its
    // post-processor says so). Throws UsageError for text that is not UTF-8.
    virtual std::vector<std::size_t> encode(const std::string& text) const = 0;
    // The UTF-8 text of one token (a token may hold part of a character: the bytes as they are).
    virtual std::string decode(std::size_t id) const = 0;
    virtual std::size_t vocab_size() const = 0;
    // The pieces the text is cut into before the merges (for display and tests).
    virtual std::vector<std::string> pieces(const std::string& text) const = 0;
    // What it is and what it does to a text, one sentence (the tokenize lesson's note).
    virtual std::string describe() const = 0;
    // About how many bytes its tables hold (vocabulary, merges), for the memory estimates.
    virtual double memory_bytes() const = 0;
};

// The bytes of a table's entries, as the estimates count them: a string takes its object
// and, past the short-string buffer, its characters; a hash map's node adds a link, a
// cached hash and the allocator's header, and each bucket a pointer.
double string_bytes(const std::string& s);
template <class Map, class KeyBytes>
double hash_map_bytes(const Map& map, KeyBytes key_bytes) {
    double bytes = 8.0 * static_cast<double>(map.bucket_count());
    for (const auto& entry : map) bytes += key_bytes(entry) + sizeof entry + 32.0;
    return bytes;
}

// What a tokenizer is read for: `encode` text (everything), or `decode` ids alone (the
// names of a prompt given as ids): then the merges are read for their syntax and not kept,
// and encode() and pieces() throw std::logic_error.
enum class TokenizerUse { encode, decode };

// A Hugging Face tokenizer.json of model type BPE with the normalizers, pre-tokenizers,
// post-processors and decoders today's models use. An unsupported component is an
// InputError naming it and its JSON path; UsageError when the file would take more than
// `memory_budget` bytes to parse.
std::shared_ptr<const Tokenizer> load_tokenizer_json(const std::string& path,
                                                     double memory_budget = std::numeric_limits<double>::infinity(),
                                                     TokenizerUse use = TokenizerUse::encode);

// A pre-tokenizer as llama.cpp names it in a GGUF file (tokenizer.ggml.pre), and what the
// tokenizer.json it stands for does: its split pattern (empty: GPT-2's ByteLevel regex),
// whether a piece that is a token skips the merges, whether the text is NFC-normalized first.
struct GgufPreTokenizer {
    std::string name, pattern;
    bool ignore_merges = false, nfc = false;
};

// The tokenizer of a GGUF file (tokenizer.ggml.*: byte-level BPE of a tokenizer.ggml.model in
// `vocabularies`, its pre-tokenizer one of `pres`), as the tokenizer.json it was converted
// from would run; null when the file has none (no tokenizer.ggml.model). InputError naming
// the key for anything else (a SentencePiece vocabulary).
std::shared_ptr<const Tokenizer> read_gguf_tokenizer(const std::string& path, const std::vector<std::string>& vocabularies,
                                                     const std::vector<GgufPreTokenizer>& pres, double memory_budget, TokenizerUse use);

}  // namespace attnwalk
