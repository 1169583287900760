// BPE's merge loop, shared by GPT-2's tokenizer (bpe.cpp) and tokenizer.json's BPE model
// (tokenizer_json.cpp): a word's symbols merged pair by pair, the pair of lowest rank
// first and the leftmost among equals, as GPT-2's bpe() and Hugging Face's BPE merge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <unordered_map>
#include <vector>

namespace attnwalk::bpe_merge {

struct Rule {
    std::size_t rank;    // lower merges first
    std::size_t merged;  // the symbol the pair becomes
};
// (left symbol, right symbol) -> its rule
using Rules = std::unordered_map<std::uint64_t, Rule>;
inline std::uint64_t key(std::size_t left, std::size_t right) {
    return (static_cast<std::uint64_t>(left) << 32) | static_cast<std::uint64_t>(right & 0xffffffffu);
}

// Merges the symbols of `word` in place until no adjacent pair has a rule: through a heap
// of candidate pairs, so a piece of n symbols takes O(n log n), not a scan per merge.
void merge(std::vector<std::size_t>& word, const Rules& rules);

}  // namespace attnwalk::bpe_merge
