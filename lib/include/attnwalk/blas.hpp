// Matrix products: C = alpha·op(A)·op(B) + beta·C on row-major float32 buffers.
//
// Small products (the textbook's 6×3 matrices) run as a plain loop. Large ones go to
// OpenBLAS through xtensor-blas, in a plugin (lib/openblas/) loaded on the first large
// product: a process that never needs BLAS never pays OpenBLAS's start-up (about 6 ms
// here, more than the rest of a small run).
#pragma once

#include <cstddef>
#include <string>

namespace attnwalk {

void sgemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
           std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc);

// How large products are computed: "OpenBLAS (...)", or the built-in loop and why.
// Loads the plugin if it is not loaded yet.
std::string blas_backend();

// Threads OpenBLAS may use inside one product (no effect on the built-in loop).
void blas_set_threads(int threads);

}  // namespace attnwalk
