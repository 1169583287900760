// Attention scores: how well each query matches each key, as dot products.
#pragma once

#include "attnwalk/tensor.hpp"

namespace attnwalk {

// ω = Q·Kᵀ for every batch element: (B,T,d)·(B,T,d)ᵀ -> (B,T,T)
Cube attention_scores(const Cube& q, const Cube& k);

// One query per batch element against every key: (B,d)·(B,T,d)ᵀ -> (B,T)
Mat query_scores(const Mat& q, const Cube& k);

// Divides every score by `scale` (√d_k for scaled dot-product attention).
template <std::size_t N>
xt::xtensor<float, N> scale_scores(const xt::xtensor<float, N>& scores, float scale) {
    xt::xtensor<float, N> out = scores / scale;  // a division, as PyTorch's `scores / d_k**0.5`
    return out;
}

}  // namespace attnwalk
