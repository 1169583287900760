// The causal mask: token i may attend to tokens 0..i only.
//
// Two equivalent ways to apply it (the `causal` walk shows both):
//   after the softmax:  w = softmax(s) ⊙ M, then divide each row by its sum
//   before the softmax: s_ij = −∞ where j > i, then softmax (masked weights are exactly 0)
#pragma once

#include <cstddef>
#include <limits>

#include "attnwalk/ops/rows.hpp"

namespace attnwalk {

// M (T,T): 1 on and below the diagonal, 0 above (torch.tril(torch.ones(T, T))).
Mat causal_mask(std::size_t T);

// Applies f(value, i, j) to every element of the trailing R×T matrices, whose rows are
// the queries i = row0 .. row0+R−1 and whose columns are the keys j.
template <std::size_t N, class Fn>
xt::xtensor<float, N> map_rows(xt::xtensor<float, N> t, std::size_t row0, Fn&& f) {
    const std::size_t R = t.shape(N - 2), T = t.shape(N - 1);
    float* data = t.data();
    for (std::size_t start = 0; start < t.size(); start += R * T)
        for (std::size_t r = 0; r < R; ++r)
            for (std::size_t j = 0; j < T; ++j) data[start + r * T + j] = f(data[start + r * T + j], row0 + r, j);
    return t;
}

// w ⊙ M: zero the weights of future tokens.
template <std::size_t N>
xt::xtensor<float, N> mask_future_zero(xt::xtensor<float, N> w, std::size_t row0 = 0) {
    return map_rows(std::move(w), row0, [](float v, std::size_t i, std::size_t j) { return j > i ? 0.0f : v; });
}

// s.masked_fill(j > i, −∞)
template <std::size_t N>
xt::xtensor<float, N> mask_future_neg_inf(xt::xtensor<float, N> s, std::size_t row0 = 0) {
    const float neg_inf = -std::numeric_limits<float>::infinity();
    return map_rows(std::move(s), row0, [neg_inf](float v, std::size_t i, std::size_t j) { return j > i ? neg_inf : v; });
}

}  // namespace attnwalk
