#include "attnwalk/tensor.hpp"

#include <algorithm>

#include "attnwalk/blas.hpp"

namespace attnwalk {

Mat matmul(const Mat& a, const Mat& b) {
    Mat out({a.shape(0), b.shape(1)});  // (m,n)
    sgemm(false, false, a.shape(0), b.shape(1), a.shape(1), 1.0f, a.data(), a.shape(1), b.data(), b.shape(1), 0.0f,
          out.data(), b.shape(1));
    return out;
}

Mat matmul_nt(const Mat& a, const Mat& b) {
    Mat out({a.shape(0), b.shape(0)});  // (m,n)
    sgemm(false, true, a.shape(0), b.shape(0), a.shape(1), 1.0f, a.data(), a.shape(1), b.data(), b.shape(1), 0.0f,
          out.data(), b.shape(0));
    return out;
}

Vec matvec(const Mat& a, const Vec& x) {
    Vec out = Vec::from_shape({a.shape(0)});  // (n)
    sgemm(false, false, a.shape(0), 1, a.shape(1), 1.0f, a.data(), a.shape(1), x.data(), 1, 0.0f, out.data(), 1);
    return out;
}

// (B,m,k)·(k,n): one product with B·m rows, since every batch element uses the same matrix.
Cube matmul_each(const Cube& a, const Mat& b) {
    Cube out({a.shape(0), a.shape(1), b.shape(1)});
    sgemm(false, false, a.shape(0) * a.shape(1), b.shape(1), a.shape(2), 1.0f, a.data(), a.shape(2), b.data(),
          b.shape(1), 0.0f, out.data(), b.shape(1));
    return out;
}

Cube matmul_nt_each(const Cube& a, const Cube& b) {
    const std::size_t m = a.shape(1), n = b.shape(1), k = a.shape(2);
    Cube out({a.shape(0), m, n});
    for (std::size_t i = 0; i < a.shape(0); ++i)
        sgemm(false, true, m, n, k, 1.0f, a.data() + i * m * k, k, b.data() + i * n * k, k, 0.0f, out.data() + i * m * n, n);
    return out;
}

Cube matmul_batched(const Cube& a, const Cube& b) {
    const std::size_t m = a.shape(1), n = b.shape(2), k = a.shape(2);
    Cube out({a.shape(0), m, n});
    for (std::size_t i = 0; i < a.shape(0); ++i)
        sgemm(false, false, m, n, k, 1.0f, a.data() + i * m * k, k, b.data() + i * k * n, n, 0.0f, out.data() + i * m * n, n);
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
