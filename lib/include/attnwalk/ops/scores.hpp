// Scaling the attention scores.
#pragma once

#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

// Divides every score by `scale` (√d_k for scaled dot-product attention).
template <std::size_t N>
xt::xtensor<float, N> scale_scores(const xt::xtensor<float, N>& scores, float scale) {
    xt::xtensor<float, N> out = scores / scale;  // a division, as PyTorch's `scores / d_k**0.5`
    return out;
}

}  // namespace attnwalk
