// GPT-2's byte-level BPE tokenizer, from its encoder.json and vocab.bpe: the text is cut
// by GPT-2's pre-tokenisation rule ('s 't 're 've 'm 'll 'd, letters, numbers, other
// symbols, each with an optional leading space; runs of whitespace), each piece's UTF-8
// bytes are mapped to printable characters, merged by rank, and looked up. The rule is
// written out by hand (std::regex has no \p{L}) with Unicode's letter and number tables.
#pragma once

#include <cstddef>
#include <map>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include "attnwalk/io/bpe_merge.hpp"
#include "attnwalk/io/tokenizer.hpp"

namespace attnwalk {

class Bpe : public Tokenizer {
public:
    // Reads `dir`/encoder.json and `dir`/vocab.bpe. Throws InputError. With
    // TokenizerUse::decode the merges are read for their syntax and not kept (the names of a
    // prompt given as ids need only encoder.json): encode() and pieces() then throw
    // std::logic_error.
    static std::shared_ptr<const Bpe> load(const std::string& dir, TokenizerUse use = TokenizerUse::encode);

    std::vector<std::size_t> encode(const std::string& text) const override;
    std::string decode(std::size_t id) const override;
    std::size_t vocab_size() const override { return pieces_.size(); }
    std::vector<std::string> pieces(const std::string& text) const override;  // <|endoftext|> whole, the rest pretokenized
    std::string describe() const override;
    double memory_bytes() const override;
    // GPT-2's pre-tokenisation of `text` (for display and tests).
    static std::vector<std::string> pretokenize(const std::string& text);

private:
    std::vector<std::string> bpe(const std::string& piece) const;

    std::unordered_map<std::string, std::size_t> encoder_;  // byte-mapped text -> id
    std::vector<std::string> pieces_;                         // id -> byte-mapped text
    // vocab.bpe's merges on symbols: every character and merge result a line names
    std::unordered_map<std::string, std::size_t> symbol_ids_;  // text -> symbol
    std::vector<std::string> symbols_;                          // symbol -> text
    bpe_merge::Rules merges_;                                   // (first, second) -> rank, first+second
    bool merges_read_ = true;                                   // false: read to decode ids alone
};

}  // namespace attnwalk
