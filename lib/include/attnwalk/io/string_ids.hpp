// A vocabulary's text -> id table: open addressing over one block of slots, the keys'
// bytes kept in one string, so a lookup is one hash and mostly one probe (a node-based
// std::unordered_map of 128,000 strings costs a cache miss per node it walks: looking up
// each of Llama 3's 280,147 merges' three symbols was half of reading its tokenizer.json).
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <functional>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace attnwalk {

class StringIds {
public:
    // Adds key -> id; false (and nothing changed) when the key is there already.
    bool insert(std::string_view key, std::size_t id) {
        if (4 * (count_ + 1) > 3 * slots_.size()) grow();
        const std::uint64_t h = hash(key);
        for (std::size_t s = h & mask();; s = (s + 1) & mask()) {
            Slot& slot = slots_[s];
            if (slot.id == empty) {
                if (text_.size() + key.size() > 0xffffffffu || id >= empty) throw std::length_error("StringIds: more than 4 GiB of keys, or an id past 2^32 - 2");
                slot = Slot{tag(h), static_cast<std::uint32_t>(text_.size()), static_cast<std::uint32_t>(key.size()), static_cast<std::uint32_t>(id)};
                text_.append(key);
                ++count_;
                return true;
            }
            if (slot.tag == tag(h) && key_of(slot) == key) return false;
        }
    }
    // The id of `key`, or nothing.
    std::optional<std::size_t> find(std::string_view key) const { return find(key, hash(key)); }
    // The same with the key's hash() given: a caller looking up many keys hashes a few ahead
    // and prefetches their slots, so the table's cache misses overlap.
    static std::uint64_t hash(std::string_view key) { return std::hash<std::string_view>{}(key); }
    void prefetch(std::uint64_t h) const {
        if (!slots_.empty()) __builtin_prefetch(&slots_[h & mask()]);
    }
    std::optional<std::size_t> find(std::string_view key, std::uint64_t h) const {
        if (slots_.empty()) return std::nullopt;
        for (std::size_t s = h & mask();; s = (s + 1) & mask()) {
            const Slot& slot = slots_[s];
            if (slot.id == empty) return std::nullopt;
            if (slot.tag == tag(h) && key_of(slot) == key) return slot.id;
        }
    }
    void reserve(std::size_t n) {
        while (4 * n > 3 * slots_.size()) grow();
    }
    std::size_t size() const { return count_; }
    // Calls f(key, id) for every key, in no particular order.
    template <class F>
    void for_each(F f) const {
        for (const Slot& slot : slots_)
            if (slot.id != empty) f(key_of(slot), static_cast<std::size_t>(slot.id));
    }
    double memory_bytes() const { return static_cast<double>(slots_.capacity() * sizeof(Slot) + text_.capacity()); }

private:
    static constexpr std::uint32_t empty = 0xffffffffu;
    struct Slot {  // 16 bytes: four slots to a cache line
        std::uint32_t tag = 0;                 // the hash's high half
        std::uint32_t offset = 0, length = 0;  // the key's bytes in text_
        std::uint32_t id = empty;
    };
    static std::uint32_t tag(std::uint64_t h) { return static_cast<std::uint32_t>(h >> 32); }
    std::size_t mask() const { return slots_.size() - 1; }
    std::string_view key_of(const Slot& slot) const { return std::string_view(text_).substr(slot.offset, slot.length); }
    std::uint64_t place(const Slot& slot) const { return hash(key_of(slot)); }  // growing hashes each key again
    void grow() {  // twice the slots (a power of two), every key placed again
        std::vector<Slot> old(slots_.empty() ? 16 : 2 * slots_.size());
        old.swap(slots_);
        for (const Slot& slot : old) {
            if (slot.id == empty) continue;
            std::size_t s = place(slot) & mask();
            while (slots_[s].id != empty) s = (s + 1) & mask();
            slots_[s] = slot;
        }
    }

    std::vector<Slot> slots_;
    std::string text_;
    std::size_t count_ = 0;
};

}  // namespace attnwalk
