#include "attnwalk/ops/tensor.hpp"

#include <algorithm>

#include "attnwalk/ops/blas.hpp"

namespace attnwalk {

// (B,m,k)·(k,n): one product with B·m rows, since every batch element uses the same matrix.
Cube matmul_each(const Cube& a, const Mat& b) {
    Cube out({a.shape(0), a.shape(1), b.shape(1)});
    sgemm(false, false, a.shape(0) * a.shape(1), b.shape(1), a.shape(2), 1.0f, a.data(), a.shape(2), b.data(),
          b.shape(1), 0.0f, out.data(), b.shape(1));
    return out;
}

Tensor scalar_trace(float value) {
    Tensor out;
    out.data = {value};
    return out;
}

Cube cube_from_trace(const Tensor& t) {
    Cube out({t.shape.at(0), t.shape.at(1), t.shape.at(2)});
    std::copy(t.data.begin(), t.data.end(), out.begin());
    return out;
}

Mat mat_from_trace(const Tensor& t) {
    Mat out({t.shape.at(0), t.shape.at(1)});
    std::copy(t.data.begin(), t.data.end(), out.begin());
    return out;
}

}  // namespace attnwalk
