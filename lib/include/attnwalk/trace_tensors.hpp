// The trace's tensors (trace.hpp) and xtensor's (ops/tensor.hpp), each into the other:
// for the lessons, which record steps, and io/, which reads tensors given as JSON. ops/
// never includes this: it computes on xtensor alone.
#pragma once

#include "attnwalk/ops/tensor.hpp"
#include "attnwalk/trace.hpp"

namespace attnwalk {

// Trace tensors <-> xtensor.
template <std::size_t N>
Tensor to_trace(const xt::xtensor<float, N>& t) {
    Tensor out;
    out.shape.assign(t.shape().begin(), t.shape().end());
    out.data.reserve(t.size());
    advise_huge_pages(out.data.data(), t.size() * sizeof(float));
    out.data.assign(t.begin(), t.end());
    return out;
}
Tensor scalar_trace(float value);
Cube cube_from_trace(const Tensor& t);  // rank-3 trace tensor -> Cube
Mat mat_from_trace(const Tensor& t);    // rank-2 trace tensor -> Mat

}  // namespace attnwalk
