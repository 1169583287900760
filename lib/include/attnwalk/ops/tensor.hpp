// Tensors for the math modules (xtensor). (Their bridge to the trace's tensors is
// attnwalk/trace_tensors.hpp: ops/ knows nothing of traces.)
//
// Dimension legend, used in every shape comment:
//   B   batch size            T   tokens (sequence length)
//   d   embedding size (d_in) d_out  projection size
//   H   heads                 d_h = d_out / H   size of one head
//
// Everything is float32, like PyTorch's default, so that digits match.
// Matrix products go through sgemm (blas.hpp): a plain loop for small ones, OpenBLAS
// through xtensor-blas for large ones.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "attnwalk/ops/huge_pages.hpp"

namespace attnwalk {

using Vec = xt::xtensor<float, 1>;
using Mat = xt::xtensor<float, 2>;
using Cube = xt::xtensor<float, 3>;   // B×T×d, B×T×T, H×T×T ...
using Hyper = xt::xtensor<float, 4>;  // B×H×T×T

// IEEE half and bfloat16 bit patterns to float32 (exact).
float half_to_float(std::uint16_t bits);
float bfloat16_to_float(std::uint16_t bits);

// A tensor of this shape, not yet touched, its memory so advised.
template <std::size_t N>
xt::xtensor<float, N> fresh(const std::array<std::size_t, N>& shape) {
    auto t = xt::xtensor<float, N>::from_shape(shape);
    advise_huge_pages(t.data(), t.size() * sizeof(float));
    return t;
}

// Batched: (B,m,k)·(k,n) -> (B,m,n), every batch element times the same matrix.
Cube matmul_each(const Cube& a, const Mat& b);

}  // namespace attnwalk
