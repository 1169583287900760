// Dropout on attention weights, as nn.Dropout(p) does it in training mode on CPU:
// keep each element with probability 1 − p (one double uniform per element, in
// row-major order, kept if u < 1 − p), scale the kept ones by 1/(1 − p).
#pragma once

#include "attnwalk/ops/rng.hpp"
#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

template <std::size_t N>
struct DropoutResult {
    xt::xtensor<float, N> keep;    // 1 = kept, 0 = dropped
    float scale;                   // 1 / (1 − p), rounded to float as PyTorch does
    xt::xtensor<float, N> output;  // x ⊙ keep · scale
};

// p in [0, 1). p = 0 draws nothing (PyTorch returns the input untouched). N = 1…4.
template <std::size_t N>
DropoutResult<N> dropout(const xt::xtensor<float, N>& x, double p, Generator& gen);

}  // namespace attnwalk
