// The one rule of which keys a query may see: causal (nothing after the query) and a
// sliding window of W (itself and the W − 1 keys before it). The forward, the blocked
// kernels, the lessons and the renderers' masks all ask it. Light.
#pragma once

#include <cstddef>

namespace attnwalk {

// Whether query position i may not see key j under this mask (window 0: none). Written so
// that no sum can wrap: a window of 2^64 − 1 is wider than any sequence, so it masks nothing.
inline bool masked_out(std::size_t i, std::size_t j, bool causal, std::size_t window) {
    return (causal && j > i) || (window > 0 && i >= window && j <= i - window);
}

// The keys query position i sees among keys 0 … keys − 1: [first, end).
struct KeyRange {
    std::size_t first = 0, end = 0;
};
inline KeyRange visible_keys(std::size_t i, std::size_t keys, bool causal, std::size_t window) {
    const std::size_t end = causal ? (i + 1 < keys ? i + 1 : keys) : keys;
    const std::size_t first = window && i + 1 > window ? i + 1 - window : 0;
    return {first < end ? first : end, end};
}

}  // namespace attnwalk
