// Row-wise helpers: many attention steps act on the last axis ("each row") of a tensor
// of any rank. A row is the contiguous run of shape.back() values.
#pragma once

#include <cstddef>

#include "attnwalk/tensor.hpp"

namespace attnwalk {

template <std::size_t N, class Fn>
void for_each_row(xt::xtensor<float, N>& t, Fn&& fn) {
    const std::size_t n = t.shape(N - 1);
    if (n == 0) return;
    float* data = t.data();
    for (std::size_t start = 0; start < t.size(); start += n) fn(data + start, n);
}

// The sum of every row: shape without its last axis.
template <std::size_t N>
xt::xtensor<float, N - 1> row_sums(const xt::xtensor<float, N>& t) {
    std::array<std::size_t, N - 1> shape;
    for (std::size_t i = 0; i + 1 < N; ++i) shape[i] = t.shape(i);
    xt::xtensor<float, N - 1> out(shape);
    const std::size_t n = t.shape(N - 1);
    for (std::size_t r = 0; r < out.size(); ++r) {
        float sum = 0.0f;
        for (std::size_t j = 0; j < n; ++j) sum += t.data()[r * n + j];
        out.data()[r] = sum;
    }
    return out;
}

}  // namespace attnwalk
