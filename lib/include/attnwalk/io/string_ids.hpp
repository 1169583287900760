// A vocabulary's text -> id table: open addressing over one block of slots, the keys'
// bytes kept in one string, so a lookup is one hash and mostly one probe (a node-based
// std::unordered_map of 128,000 strings costs a cache miss per node it walks: looking up
// each of Llama 3's 280,147 merges' three symbols was half of reading its tokenizer.json).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace attnwalk {

class StringIds {
public:
    // Adds key -> id; false (and nothing changed) when the key is there already.
    bool insert(std::string_view key, std::size_t id) {
        if (2 * (count_ + 1) > slots_.size()) grow();
        const std::uint64_t h = hash(key);
        for (std::size_t s = h & mask();; s = (s + 1) & mask()) {
            Slot& slot = slots_[s];
            if (slot.id == empty) {
                slot = Slot{h, text_.size(), key.size(), id};
                text_.append(key);
                ++count_;
                return true;
            }
            if (slot.hash == h && key_of(slot) == key) return false;
        }
    }
    // The id of `key`, or null.
    const std::size_t* find(std::string_view key) const {
        if (slots_.empty()) return nullptr;
        const std::uint64_t h = hash(key);
        for (std::size_t s = h & mask();; s = (s + 1) & mask()) {
            const Slot& slot = slots_[s];
            if (slot.id == empty) return nullptr;
            if (slot.hash == h && key_of(slot) == key) return &slot.id;
        }
    }
    void reserve(std::size_t n) {
        while (2 * n > slots_.size()) grow();
    }
    std::size_t size() const { return count_; }
    double memory_bytes() const { return static_cast<double>(slots_.capacity() * sizeof(Slot) + text_.capacity()); }

private:
    static constexpr std::size_t empty = static_cast<std::size_t>(-1);
    struct Slot {
        std::uint64_t hash = 0;
        std::size_t offset = 0, length = 0;  // the key's bytes in text_
        std::size_t id = empty;
    };
    static std::uint64_t hash(std::string_view key) { return std::hash<std::string_view>{}(key); }
    std::size_t mask() const { return slots_.size() - 1; }
    std::string_view key_of(const Slot& slot) const { return std::string_view(text_).substr(slot.offset, slot.length); }
    void grow() {  // twice the slots (a power of two), every key placed again
        std::vector<Slot> old(slots_.empty() ? 16 : 2 * slots_.size());
        old.swap(slots_);
        for (const Slot& slot : old) {
            if (slot.id == empty) continue;
            std::size_t s = slot.hash & mask();
            while (slots_[s].id != empty) s = (s + 1) & mask();
            slots_[s] = slot;
        }
    }

    std::vector<Slot> slots_;
    std::string text_;
    std::size_t count_ = 0;
};

}  // namespace attnwalk
