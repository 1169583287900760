#include "attnwalk/ops/blas.hpp"

#include <dlfcn.h>

#include <atomic>
#include <cmath>
#include <cstdlib>
#include <memory>
#include <string>
#include <mutex>
#include <thread>
#include <vector>

namespace attnwalk {

namespace {

// Products below this many multiply-adds stay in the plain loop.
constexpr double blas_threshold = 64.0 * 64.0 * 64.0;

using SgemmFn = void (*)(int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
using ThreadsFn = void (*)(int);
using NameFn = const char* (*)();

// The OpenBLAS plugin: loaded on the first large product, kept until the process ends.
// Looks for it at $ATTNWALK_OPENBLAS_PLUGIN, then where the build put it, then where
// CMake's install step puts it.
class Plugin {
public:
    Plugin() {
        std::string tried;
        const char* env = std::getenv("ATTNWALK_OPENBLAS_PLUGIN");
        for (const char* path : {env, ATTNWALK_OPENBLAS_BUILD_PATH, ATTNWALK_OPENBLAS_INSTALL_PATH}) {
            if (!path || !*path) continue;
            void* handle = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (!handle) {
                tried += std::string(tried.empty() ? "" : "; ") + ::dlerror();
                continue;
            }
            const auto sgemm = reinterpret_cast<SgemmFn>(::dlsym(handle, "attnwalk_plugin_sgemm"));
            const auto set_threads = reinterpret_cast<ThreadsFn>(::dlsym(handle, "attnwalk_plugin_set_threads"));
            const auto name = reinterpret_cast<NameFn>(::dlsym(handle, "attnwalk_plugin_name"));
            if (sgemm && set_threads && name) {
                sgemm_ = sgemm;
                set_threads(1);  // OpenBLAS itself stays single-threaded (see sgemm)
                description_ = std::string("OpenBLAS via xtensor-blas (") + name() + "), loaded from " + path;
                return;
            }
            ::dlclose(handle);
            tried += std::string(tried.empty() ? "" : "; ") + path + ": not an attnwalk OpenBLAS plugin";
        }
        description_ = "built-in loop (no OpenBLAS plugin: " + (tried.empty() ? std::string("none found") : tried) + ")";
    }
    Plugin(const Plugin&) = delete;
    Plugin& operator=(const Plugin&) = delete;

    SgemmFn sgemm() const { return sgemm_; }
    const std::string& description() const { return description_; }

private:
    SgemmFn sgemm_ = nullptr;
    std::string description_;
};

// The one plugin of the process, made on first use; `loaded` says whether it was.
struct Backend {
    std::once_flag once;
    std::unique_ptr<Plugin> plugin;
    std::atomic<bool> loaded{false};

    const Plugin& get() {
        std::call_once(once, [this] {
            plugin = std::make_unique<Plugin>();
            loaded = true;
        });
        return *plugin;
    }
};

Backend& backend() {
    static Backend b;
    return b;
}

// The plain loop: row by row of C, accumulating in float over k in order with fused
// multiply-adds, as OpenBLAS's kernels (and so PyTorch's CPU matmul) do for small k.
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
                for (std::size_t j = 0; j < n; ++j) ci[j] = std::fma(aip, b[j * ldb + p], ci[j]);
            else
                for (std::size_t j = 0; j < n; ++j) ci[j] = std::fma(aip, b[p * ldb + j], ci[j]);
        }
    }
}


// Products above this many multiply-adds are split by rows over the cores.
constexpr double split_threshold = 256.0 * 256.0 * 256.0;
thread_local bool in_worker = false;  // a thread of ours already: never split again

}  // namespace

void sgemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
           std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
    if (m == 0 || n == 0) return;
    const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    const SgemmFn blas = work < blas_threshold ? nullptr : backend().get().sgemm();
    if (!blas) {
        sgemm_loop(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    auto run = [&](std::size_t r0, std::size_t rows) {
        blas(trans_a, trans_b, static_cast<int>(rows), static_cast<int>(n), static_cast<int>(k), alpha,
                       trans_a ? a + r0 : a + r0 * lda, static_cast<int>(lda), b, static_cast<int>(ldb), beta, c + r0 * ldc,
                       static_cast<int>(ldc));
    };
    // OpenBLAS runs single-threaded; large products are split by rows over our own
    // threads instead. (OpenBLAS's own workers spin on sched_yield between products and
    // took a core away from the attention's per-head threads: seen with perf here.)
    const std::size_t cores = std::max(1u, std::thread::hardware_concurrency());
    if (in_worker || cores == 1 || work < split_threshold || m < 2 * cores) {
        run(0, m);
        return;
    }
    std::vector<std::thread> threads;
    const std::size_t chunk = (m + cores - 1) / cores;
    for (std::size_t r0 = chunk; r0 < m; r0 += chunk)
        threads.emplace_back([&, r0] {
            in_worker = true;
            run(r0, std::min(chunk, m - r0));
        });
    run(0, std::min(chunk, m));
    for (auto& t : threads) t.join();
}

void run_as_worker(const std::function<void()>& body) {
    const bool before = in_worker;
    in_worker = true;
    body();
    in_worker = before;
}


std::string blas_backend() {
    Backend& b = backend();
    return b.loaded ? b.plugin->description() : "built-in loop (no product was large enough to load OpenBLAS)";
}



}  // namespace attnwalk
