// Turning scores into weights that sum to 1 along each row (the last axis).
//
// Three ways, as the textbook shows them:
//   normalise_by_sum   w = s / Σs            (breaks for negative or zero-sum scores)
//   softmax_naive      w = exp(s) / Σexp(s)  (overflows to inf/NaN for large scores)
//   softmax            w = exp(s − max s) / Σexp(s − max s)   (what torch.softmax does)
// Each for tensors of rank N = 1…4 (softmax.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <limits>

#include "attnwalk/ops/rows.hpp"

namespace attnwalk {

template <std::size_t N>
xt::xtensor<float, N> normalise_by_sum(xt::xtensor<float, N> s);

// torch.exp(x) / torch.exp(x).sum(dim=-1)
template <std::size_t N>
xt::xtensor<float, N> softmax_naive(xt::xtensor<float, N> s);

// The numbers a stable softmax of one row computes on the way (one cell written out shows them).
struct RowSoftmax {
    float max;  // subtracted before exp
    float sum;  // of the exponentials, left to right in float32
};

// With a learned sink (gpt-oss): the head's logit `sink` is appended to the row before
// the softmax and dropped after, so the row's weights sum to 1 − the sink's share, which
// `sink_share` receives. As Hugging Face's eager gpt-oss attention: the max over the row
// and the sink subtracted, the sink's exponential added last.
inline RowSoftmax softmax_row_sink(float* row, std::size_t n, float sink, float* sink_share) {
    const float max = std::max(max_of(row, n), sink);
    float sum = 0.0f;
    // subtract the row max, only for numerical stability: exp never overflows
    for (std::size_t j = 0; j < n; ++j) sum += (row[j] = std::exp(row[j] - max));
    const float e_sink = std::exp(sink - max);
    sum += e_sink;
    const float inv = 1.0f / sum;  // PyTorch multiplies by the reciprocal of the sum
    for (std::size_t j = 0; j < n; ++j) row[j] *= inv;
    if (sink_share) *sink_share = e_sink * inv;
    return {max, sum};
}

// Numerically stable softmax of one row, in place: no sink (a logit of −∞ adds exp(−∞) = 0,
// the same numbers). A row that is entirely −∞ (every key masked) has no defined softmax;
// like PyTorch, it comes out as NaN.
inline RowSoftmax softmax_row(float* row, std::size_t n) {
    return softmax_row_sink(row, n, -std::numeric_limits<float>::infinity(), nullptr);
}

template <std::size_t N>
xt::xtensor<float, N> softmax(xt::xtensor<float, N> s);

// s − max(row): what the stable softmax exponentiates (every row's largest value becomes 0).
template <std::size_t N>
xt::xtensor<float, N> shift_by_row_max(xt::xtensor<float, N> s);

}  // namespace attnwalk
