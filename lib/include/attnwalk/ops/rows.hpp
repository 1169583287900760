// Row-wise helpers: many attention steps act on the last axis ("each row") of a tensor
// of any rank. A row is the contiguous run of shape.back() values.
#pragma once

#include <array>
#include <cmath>
#include <cstddef>
#include <limits>

#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

template <std::size_t N, class Fn>
void for_each_row(xt::xtensor<float, N>& t, Fn&& fn) {
    const std::size_t n = t.shape(N - 1);
    if (n == 0) return;
    float* data = t.data();
    for (std::size_t start = 0; start < t.size(); start += n) fn(data + start, n);
}

// The sum of a row in PyTorch's order (at::native's CPU sum kernel of 1.13, AVX2 build), so
// that row sums, Σ ω and exp(ω)/Σ exp(ω) come out bit for bit as torch.sum gives them: a row
// shorter than 8 is summed as 4 interleaved partial sums, a longer one as 8-lane vectors,
// 4 of them interleaved, in a cascade that adds only partial sums of similar size; the
// tail and then the lanes come last (rows.cpp).
float sum_of(const float* row, std::size_t n);

// max over a row, NaN skipped (as fmax does); −∞ for a row that is entirely −∞. Written
// as a comparison, which compilers vectorise, where fmax is a call per element.
inline float max_of(const float* row, std::size_t n) {
    float max = -std::numeric_limits<float>::infinity();
    for (std::size_t j = 0; j < n; ++j) max = row[j] > max ? row[j] : max;
    return max;
}

// One number per row, fn(row, n): the shape without the last axis.
template <std::size_t N, class Fn>
xt::xtensor<float, N - 1> reduce_rows(const xt::xtensor<float, N>& t, Fn&& fn) {
    std::array<std::size_t, N - 1> shape;
    for (std::size_t i = 0; i + 1 < N; ++i) shape[i] = t.shape(i);
    xt::xtensor<float, N - 1> out(shape);
    const std::size_t n = t.shape(N - 1);
    for (std::size_t r = 0; r < out.size(); ++r) out.data()[r] = fn(t.data() + r * n, n);
    return out;
}

template <std::size_t N>
xt::xtensor<float, N - 1> row_sums(const xt::xtensor<float, N>& t) {
    return reduce_rows(t, sum_of);
}

}  // namespace attnwalk
