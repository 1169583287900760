// BPE's merge loop, shared by GPT-2's tokenizer (bpe.cpp) and tokenizer.json's BPE model
// (tokenizer_json.cpp): a word's symbols merged pair by pair, the pair of lowest rank
// first and the leftmost among equals, as GPT-2's bpe() and Hugging Face's BPE merge.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace attnwalk::bpe_merge {

struct Rule {
    std::uint32_t rank;    // lower merges first
    std::uint32_t merged;  // the symbol the pair becomes (ids are below 10^8)
};
inline std::uint64_t key(std::size_t left, std::size_t right) {
    return (static_cast<std::uint64_t>(left) << 32) | static_cast<std::uint64_t>(right & 0xffffffffu);
}

// (left symbol, right symbol) -> its rule: open addressing over one block of slots (a
// node per rule cost a cache miss and an allocation for each of a tokenizer's 280,000).
class Rules {
public:
    // Adds the rule of `pair` (a key()); false, and the first rule kept, when it has one.
    bool insert(std::uint64_t pair, Rule rule) {
        if (4 * (count_ + 1) > 3 * slots_.size()) grow(slots_.empty() ? 16 : 2 * slots_.size());
        for (std::size_t s = hash(pair) & mask();; s = (s + 1) & mask()) {
            if (slots_[s].pair == empty) {
                slots_[s] = Slot{pair, rule};
                ++count_;
                return true;
            }
            if (slots_[s].pair == pair) return false;
        }
    }
    const Rule* find(std::uint64_t pair) const {
        if (slots_.empty()) return nullptr;
        for (std::size_t s = hash(pair) & mask();; s = (s + 1) & mask()) {
            if (slots_[s].pair == pair) return &slots_[s].rule;
            if (slots_[s].pair == empty) return nullptr;
        }
    }
    // Brings the slot of `pair` toward the cache before an insert or find of it.
    void prefetch(std::uint64_t pair) const {
        if (!slots_.empty()) __builtin_prefetch(&slots_[hash(pair) & mask()]);
    }
    void reserve(std::size_t n) {
        std::size_t slots = 16;
        while (4 * n > 3 * slots) slots *= 2;
        if (slots > slots_.size()) grow(slots);
    }
    std::size_t size() const { return count_; }
    double memory_bytes() const { return static_cast<double>(slots_.capacity() * sizeof(Slot)); }

private:
    static constexpr std::uint64_t empty = ~std::uint64_t{0};  // no ids are 2^32 − 1
    struct Slot {
        std::uint64_t pair = empty;
        Rule rule{};
    };
    static std::uint64_t hash(std::uint64_t x) {  // splitmix64's finaliser: every bit of the pair mixed
        x ^= x >> 30;
        x *= 0xbf58476d1ce4e5b9ULL;
        x ^= x >> 27;
        x *= 0x94d049bb133111ebULL;
        return x ^ (x >> 31);
    }
    std::size_t mask() const { return slots_.size() - 1; }
    void grow(std::size_t slots) {  // a power of two; every rule placed again
        std::vector<Slot> old(slots);
        old.swap(slots_);
        for (const Slot& slot : old) {
            if (slot.pair == empty) continue;
            std::size_t s = hash(slot.pair) & mask();
            while (slots_[s].pair != empty) s = (s + 1) & mask();
            slots_[s] = slot;
        }
    }

    std::vector<Slot> slots_;
    std::size_t count_ = 0;
};

// Merges the symbols of `word` in place until no adjacent pair has a rule: through a heap
// of candidate pairs, so a piece of n symbols takes O(n log n), not a scan per merge.
void merge(std::vector<std::size_t>& word, const Rules& rules);

}  // namespace attnwalk::bpe_merge
