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

// p in [0, 1). p = 0 draws nothing (PyTorch returns the input untouched).
template <std::size_t N>
DropoutResult<N> dropout(const xt::xtensor<float, N>& x, double p, Generator& gen) {
    DropoutResult<N> r{xt::xtensor<float, N>(x.shape()), 1.0f, x};
    if (p == 0.0) {
        r.keep.fill(1.0f);
        return r;
    }
    const auto keep = gen.bernoulli(x.size(), 1.0 - p);
    // noise = bernoulli(1 − p) / (1 − p) in float, then x · noise
    r.scale = 1.0f / static_cast<float>(1.0 - p);
    for (std::size_t i = 0; i < x.size(); ++i) {
        r.keep.data()[i] = keep[i] ? 1.0f : 0.0f;
        r.output.data()[i] = x.data()[i] * (r.keep.data()[i] * r.scale);
    }
    return r;
}

}  // namespace attnwalk
