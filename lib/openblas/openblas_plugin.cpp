// The OpenBLAS plugin: the only code that links OpenBLAS, loaded by lib/src/blas.cpp
// on the first large matrix product. The products go through xtensor-blas's cxxblas layer.
#include <cstddef>

#include <xtensor-blas/xblas.hpp>  // brings in the cxxblas layer with its configuration

extern "C" void openblas_set_num_threads(int);
extern "C" char* openblas_get_config(void);
extern "C" char* openblas_get_corename(void);

extern "C" {

__attribute__((visibility("default"))) void attnwalk_plugin_sgemm(int trans_a, int trans_b, int m, int n, int k, float alpha,
                                                                  const float* a, int lda, const float* b, int ldb,
                                                                  float beta, float* c, int ldc) {
    cxxblas::gemm<int>(cxxblas::RowMajor, trans_a ? cxxblas::Trans : cxxblas::NoTrans,
                       trans_b ? cxxblas::Trans : cxxblas::NoTrans, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

__attribute__((visibility("default"))) void attnwalk_plugin_set_threads(int threads) { openblas_set_num_threads(threads); }

__attribute__((visibility("default"))) const char* attnwalk_plugin_name() { return openblas_get_config(); }

// The CPU whose kernels OpenBLAS chose (OPENBLAS_CORETYPE, where set, chooses for it).
__attribute__((visibility("default"))) const char* attnwalk_plugin_corename() { return openblas_get_corename(); }
}
