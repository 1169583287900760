// Hook points (as TransformerLens's hook_embed, hook_resid_pre, attn.hook_pattern): the
// decoder's forward hands a tap each intermediate as (layer, id, value), the id a short
// stable name declared once where it is made, the value a const reference whose type the
// id fixes. The decoder's own points are declared in model/decoder.hpp; each kind of block
// declares its own beside its forward's result (model/blocks/*.hpp). A new kind brings its
// ids in its own header: the tap (DecoderTap::hook) and the decoder's header stay as they are.
//
// Light: no xtensor here (a Hooked holds a pointer and its type's tag, never a copy).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <string_view>

namespace attnwalk {

// A hook point's name ("norm_1", "heads", "experts"). Two ids are equal when their names are.
class HookId {
public:
    constexpr explicit HookId(std::string_view name) : name_(name) {}
    constexpr std::string_view name() const { return name_; }
    friend constexpr bool operator==(HookId a, HookId b) { return a.name_ == b.name_; }
    friend constexpr bool operator!=(HookId a, HookId b) { return !(a == b); }

private:
    std::string_view name_;
};

// The layer of the hooks before every layer (the embeddings).
inline constexpr std::size_t no_layer = static_cast<std::size_t>(-1);

// What a hook hands: a const reference to a value of the type its id declares, erased so
// that the tap's one method takes every kind's result. Valid during the call only.
class Hooked {
public:
    template <class T>
    Hooked(const T& value) : value_(&value), type_(&Tag<T>::id) {}  // implicit: tap.hook(layer, id, value)

    // The value if it is a T, else null.
    template <class T>
    const T* as() const {
        return type_ == &Tag<T>::id ? static_cast<const T*>(value_) : nullptr;
    }
    // The value, which must be a T (its id says so): else std::logic_error, a tap's mistake.
    template <class T>
    const T& get() const {
        if (const T* v = as<T>()) return *v;
        throw std::logic_error("a hook's value read as another type than its id declares");
    }

private:
    template <class T>
    struct Tag {
        static constexpr char id = 0;  // one address per type in the program (an inline variable)
    };
    const void* value_;
    const char* type_;
};

}  // namespace attnwalk
