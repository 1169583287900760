// Scaling the attention scores.
#pragma once

#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

// Divides every score by `scale` (√d_k for scaled dot-product attention). N = 1…4.
template <std::size_t N>
xt::xtensor<float, N> scale_scores(const xt::xtensor<float, N>& scores, float scale);

}  // namespace attnwalk
