// Tensors for the math modules (xtensor), and the bridge to trace tensors.
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

#include <cstddef>
#include <cstdint>
#include <vector>

#include <xtensor/xtensor.hpp>

#include "attnwalk/trace.hpp"

namespace attnwalk {

using Vec = xt::xtensor<float, 1>;
using Mat = xt::xtensor<float, 2>;
using Cube = xt::xtensor<float, 3>;   // B×T×d, B×T×T, H×T×T ...
using Hyper = xt::xtensor<float, 4>;  // B×H×T×T

// IEEE half and bfloat16 bit patterns to float32 (exact).
float half_to_float(std::uint16_t bits);
float bfloat16_to_float(std::uint16_t bits);

// Batched: (B,m,k)·(k,n) -> (B,m,n), every batch element times the same matrix.
Cube matmul_each(const Cube& a, const Mat& b);

// Trace tensors <-> xtensor.
template <std::size_t N>
Tensor to_trace(const xt::xtensor<float, N>& t) {
    Tensor out;
    out.shape.assign(t.shape().begin(), t.shape().end());
    out.data.assign(t.begin(), t.end());
    return out;
}
Tensor scalar_trace(float value);
Cube cube_from_trace(const Tensor& t);  // rank-3 trace tensor -> Cube
Mat mat_from_trace(const Tensor& t);    // rank-2 trace tensor -> Mat

}  // namespace attnwalk
