#include "attnwalk/blas.hpp"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

namespace attnwalk {

namespace {

// Products below this many multiply-adds stay in the plain loop.
constexpr double blas_threshold = 64.0 * 64.0 * 64.0;

using SgemmFn = void (*)(int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
using ThreadsFn = void (*)(int);
using NameFn = const char* (*)();

struct Plugin {
    SgemmFn sgemm = nullptr;
    ThreadsFn set_threads = nullptr;
    std::string description;
};

// Looks for the plugin: $ATTNWALK_OPENBLAS_PLUGIN, then where the build put it, then
// where `cmake --install` puts it.
Plugin load_plugin() {
    Plugin p;
    std::string tried;
    const char* env = std::getenv("ATTNWALK_OPENBLAS_PLUGIN");
    for (const char* path : {env, ATTNWALK_OPENBLAS_BUILD_PATH, ATTNWALK_OPENBLAS_INSTALL_PATH}) {
        if (!path || !*path) continue;
        void* handle = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
        if (!handle) {
            tried += std::string(tried.empty() ? "" : "; ") + ::dlerror();
            continue;
        }
        p.sgemm = reinterpret_cast<SgemmFn>(::dlsym(handle, "attnwalk_plugin_sgemm"));
        p.set_threads = reinterpret_cast<ThreadsFn>(::dlsym(handle, "attnwalk_plugin_set_threads"));
        const auto name = reinterpret_cast<NameFn>(::dlsym(handle, "attnwalk_plugin_name"));
        if (p.sgemm && p.set_threads && name) {
            p.description = std::string("OpenBLAS via xtensor-blas (") + name() + "), loaded from " + path;
            return p;
        }
        p = Plugin{};
        tried += std::string(tried.empty() ? "" : "; ") + path + ": not an attnwalk OpenBLAS plugin";
    }
    p.description = "built-in loop (no OpenBLAS plugin: " + (tried.empty() ? std::string("none found") : tried) + ")";
    return p;
}

const Plugin& plugin() {
    static std::once_flag once;
    static Plugin p;
    std::call_once(once, [] { p = load_plugin(); });
    return p;
}

// The plain loop: row by row of C, accumulating in float, i-k-j order.
void sgemm_loop(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
                std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
    for (std::size_t i = 0; i < m; ++i) {
        float* ci = c + i * ldc;
        if (beta == 0.0f) {
            for (std::size_t j = 0; j < n; ++j) ci[j] = 0.0f;
        } else if (beta != 1.0f) {
            for (std::size_t j = 0; j < n; ++j) ci[j] *= beta;
        }
        for (std::size_t p = 0; p < k; ++p) {
            const float aip = alpha * (trans_a ? a[p * lda + i] : a[i * lda + p]);
            if (trans_b)
                for (std::size_t j = 0; j < n; ++j) ci[j] += aip * b[j * ldb + p];
            else
                for (std::size_t j = 0; j < n; ++j) ci[j] += aip * b[p * ldb + j];
        }
    }
}

}  // namespace

void sgemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
           std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
    if (m == 0 || n == 0) return;
    const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    if (work >= blas_threshold && plugin().sgemm) {
        plugin().sgemm(trans_a, trans_b, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a,
                       static_cast<int>(lda), b, static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
        return;
    }
    sgemm_loop(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

std::string blas_backend() { return plugin().description; }

void blas_set_threads(int threads) {
    if (plugin().set_threads) plugin().set_threads(threads);
}

}  // namespace attnwalk
