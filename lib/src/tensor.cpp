#include "attnwalk/tensor.hpp"

#include <xtensor-blas/xlinalg.hpp>
#include <xtensor/xadapt.hpp>
#include <xtensor/xview.hpp>

namespace attnwalk {

Mat matmul(const Mat& a, const Mat& b) {
    Mat out = xt::linalg::dot(a, b);  // (m,n)
    return out;
}

Mat matmul_nt(const Mat& a, const Mat& b) {
    const Mat bt = xt::transpose(b);  // (k,n)
    Mat out = xt::linalg::dot(a, bt);  // (m,n)
    return out;
}

Vec matvec(const Mat& a, const Vec& x) {
    Vec out = xt::linalg::dot(a, x);  // (n)
    return out;
}

namespace {
// out[i] = op(a[i], b[i]) for every batch element i: (B,m,·) and (B,·,·) -> (B,m,n)
template <class Op>
Cube each_batch(const Cube& a, const Cube& b, std::size_t n, Op op) {
    Cube out({a.shape(0), a.shape(1), n});
    for (std::size_t i = 0; i < a.shape(0); ++i) {
        const Mat ai = xt::view(a, i);
        const Mat bi = xt::view(b, i);
        xt::view(out, i) = op(ai, bi);
    }
    return out;
}
}  // namespace

Cube matmul_each(const Cube& a, const Mat& b) {
    Cube out({a.shape(0), a.shape(1), b.shape(1)});
    for (std::size_t i = 0; i < a.shape(0); ++i) {
        const Mat ai = xt::view(a, i);
        xt::view(out, i) = matmul(ai, b);
    }
    return out;
}

Cube matmul_nt_each(const Cube& a, const Cube& b) { return each_batch(a, b, b.shape(1), matmul_nt); }

Cube matmul_batched(const Cube& a, const Cube& b) { return each_batch(a, b, b.shape(2), matmul); }

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
