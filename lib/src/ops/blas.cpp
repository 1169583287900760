#include "attnwalk/ops/blas.hpp"

#include <dlfcn.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <condition_variable>
#include <exception>
#include <cstdlib>
#include <memory>
#include <filesystem>
#include <string>
#include <mutex>
#include <thread>
#include <vector>

#include "attnwalk/ops/work.hpp"
#include "kernels.hpp"

namespace attnwalk {

namespace {

using SgemmFn = void (*)(int, int, int, int, int, float, const float*, int, const float*, int, float, float*, int);
using ThreadsFn = void (*)(int);
using NameFn = const char* (*)();

// The OpenBLAS plugin: loaded on the first large product, kept until the process ends.
// Looks for it at $ATTNWALK_OPENBLAS_PLUGIN, then beside an installed binary (wherever its
// prefix was moved), then where the build put it, then where CMake's install step puts it.
class Plugin {
public:
    Plugin() {
        std::string tried;
        const char* env = std::getenv("ATTNWALK_OPENBLAS_PLUGIN");
        std::string beside;  // PREFIX/bin/attnwalk -> PREFIX/<libdir>/attnwalk/<plugin>
        if (const char* relative = ATTNWALK_OPENBLAS_INSTALL_RELATIVE) {
            std::error_code ec;
            const auto exe = std::filesystem::read_symlink("/proc/self/exe", ec);
            const auto candidate = exe.parent_path().parent_path() / relative;
            if (!ec && std::filesystem::exists(candidate, ec)) beside = candidate.string();
        }
        for (const char* path : {env, beside.c_str(), ATTNWALK_OPENBLAS_BUILD_PATH, ATTNWALK_OPENBLAS_INSTALL_PATH}) {
            if (!path || !*path) continue;
            void* handle = ::dlopen(path, RTLD_NOW | RTLD_LOCAL);
            if (!handle) {
                tried += std::string(tried.empty() ? "" : "; ") + ::dlerror();
                continue;
            }
            const auto sgemm = reinterpret_cast<SgemmFn>(::dlsym(handle, "attnwalk_plugin_sgemm"));
            const auto set_threads = reinterpret_cast<ThreadsFn>(::dlsym(handle, "attnwalk_plugin_set_threads"));
            const auto name = reinterpret_cast<NameFn>(::dlsym(handle, "attnwalk_plugin_name"));
            // (a plugin built before it said its CPU is taken to have AVX-512 kernels, as then)
            const auto corename = reinterpret_cast<NameFn>(::dlsym(handle, "attnwalk_plugin_corename"));
            if (sgemm && set_threads && name) {
                sgemm_ = sgemm;
                set_threads(1);  // OpenBLAS itself stays single-threaded (see sgemm)
                description_ = std::string("OpenBLAS via xtensor-blas (") + name() + "), loaded from " + path;
                avx512_ = !corename || avx512_core(corename());
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
    // Whether OpenBLAS multiplies with AVX-512 kernels (false without OpenBLAS).
    bool avx512() const { return avx512_; }

private:
    // OpenBLAS's names for the CPUs whose sgemm kernels are AVX-512 ones (dynamic.c).
    static bool avx512_core(const char* name) {
        std::string n = name ? name : "";
        for (char& ch : n) ch = static_cast<char>(std::tolower(static_cast<unsigned char>(ch)));
        return n == "skylakex" || n == "cooperlake" || n == "sapphirerapids";
    }

    SgemmFn sgemm_ = nullptr;
    std::string description_;
    bool avx512_ = false;
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

// Products above this many multiply-adds are split over the cores.
constexpr double split_threshold = 256.0 * 256.0 * 256.0;
thread_local bool in_worker = false;  // a thread of ours already: never split again
std::atomic<bool> streamed{false};     // a large product ran on the vector kernels
std::atomic<bool> instead{false};      // some ran on AVX-512 kernels where OpenBLAS has none (avx512_instead_of_blas)

// The calling thread counts as a worker while this lives (an exception included).
struct AsWorker {
    bool before = in_worker;
    AsWorker() { in_worker = true; }
    ~AsWorker() { in_worker = before; }
    AsWorker(const AsWorker&) = delete;
    AsWorker& operator=(const AsWorker&) = delete;
};

}  // namespace

void sgemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
           std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
    count_work(product_work(m, n, k));
    sgemm_counted_by_caller(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

void sgemm_counted_by_caller(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
                             std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
    if (m == 0 || n == 0) return;
    const double work = static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
    if (work < blas_min_work) {
        fast::sgemm_loop(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    // A large matrix read once for one column (the head's logits of one position) or for a
    // few rows (a short prompt or a generated token through a layer): a BLAS packs it first
    // and runs at a third of the memory's speed here; the vector kernels stream it, every
    // core its share of the rows, or of the columns (docs/performance.md, section 10). A
    // process whose products are all of this kind never loads OpenBLAS.
#if defined(ATTNWALK_HAVE_AVX2)
    if (n == 1 && !trans_a && !trans_b && ldb == 1 && ldc == 1 && alpha == 1.0f && beta == 0.0f && fast::has_avx2_fma()) {
        streamed = true;
        on_every_core(m * k, [&](std::size_t worker, std::size_t workers) {
            const WorkerShare s = worker_share(m, worker, workers, 16);
            if (s.end > s.begin) fast::one_column_avx2(s.begin, s.end, k, a, lda, b, c);
        });
        return;
    }
    // More rows (a prompt through a layer, x·W layout) on an AVX-512 CPU where OpenBLAS's
    // kernels are not AVX-512 ones (it does not know the CPU, or OPENBLAS_CORETYPE holds it
    // back): the AVX-512 kernel, 128 rows at a time, multiplies faster than they do. GPT-2,
    // a warm forward against OpenBLAS's Haswell kernels: 92-94 against 141-152 ms at 128
    // tokens, 0.74-0.75 against 1.09-1.15 s at 1024; where OpenBLAS has AVX-512 kernels, it
    // keeps the products (docs/performance.md, section 23).
    if (m > fast::few_rows_most && !trans_a && !trans_b && alpha == 1.0f && beta == 0.0f && avx512_instead_of_blas()) {
        const auto columns = [&](std::size_t worker, std::size_t workers) {
            const WorkerShare s = worker_share(n, worker, workers, 16);
            if (s.end <= s.begin) return;
            for (std::size_t i = 0; i < m; i += fast::many_rows_most)
                fast::many_rows_avx512(std::min(fast::many_rows_most, m - i), s.begin, s.end, k, a + i * lda, lda, b, ldb, c + i * ldc, ldc);
        };
        if (work < split_threshold)  // as OpenBLAS's products below: on the calling thread alone
            columns(0, 1);
        else
            on_every_core(columns);
        return;
    }
    if (m <= fast::few_rows_most && !trans_a && !trans_b && alpha == 1.0f && beta == 0.0f && fast::has_avx2_fma()) {
        streamed = true;
        on_every_core(m * n * k, [&](std::size_t worker, std::size_t workers) {
            const WorkerShare s = worker_share(n, worker, workers, 16);
            if (s.end > s.begin) fast::few_rows(m, s.begin, s.end, k, a, lda, b, ldb, c, ldc);
        });
        return;
    }
#endif
    const SgemmFn blas = backend().get().sgemm();
    if (!blas) {
        fast::sgemm_loop(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
        return;
    }
    // OpenBLAS runs single-threaded; large products are split over our own workers
    // instead, by rows of C or, where it has more columns (a few rows through a wide
    // layer), by columns. (OpenBLAS's own workers spin on sched_yield between products and
    // took a core away from the attention's per-head threads: seen with perf here.)
    const std::size_t workers = in_worker ? 1 : cores();
    const bool by_rows = m >= n;
    const std::size_t along = by_rows ? m : n;
    if (workers == 1 || work < split_threshold || along < 2 * workers) {
        blas(trans_a, trans_b, static_cast<int>(m), static_cast<int>(n), static_cast<int>(k), alpha, a, static_cast<int>(lda), b,
             static_cast<int>(ldb), beta, c, static_cast<int>(ldc));
        return;
    }
    on_every_core([&](std::size_t worker, std::size_t workers_here) {
        const auto [first, end] = worker_share(along, worker, workers_here, 16);  // whole cache lines of C where it can
        if (first >= end) return;
        const int count = static_cast<int>(end - first);
        if (by_rows)
            blas(trans_a, trans_b, count, static_cast<int>(n), static_cast<int>(k), alpha, trans_a ? a + first : a + first * lda,
                 static_cast<int>(lda), b, static_cast<int>(ldb), beta, c + first * ldc, static_cast<int>(ldc));
        else
            blas(trans_a, trans_b, static_cast<int>(m), count, static_cast<int>(k), alpha, a, static_cast<int>(lda),
                 trans_b ? b + first * ldb : b + first, static_cast<int>(ldb), beta, c + first, static_cast<int>(ldc));
    });
}

namespace fast {

Work head_scores(bool kernels, std::size_t rows, std::size_t cols, std::size_t d, const float* q, std::size_t ldq, const float* k,
                 std::size_t ldk, const float* packed, float* s, std::size_t lds) {
    const Work work = product_work(rows, cols, d);  // the same either way: sgemm counts it too
#if defined(ATTNWALK_HAVE_AVX2)
    if (kernels) {
        count_work(work);
        scores_avx512(rows, d, q, ldq, packed, cols, s, lds);
        return work;
    }
#endif
    (void)kernels;
    (void)packed;
    sgemm(false, true, rows, cols, d, 1.0f, q, ldq, k, ldk, 0.0f, s, lds);  // counts the same
    return work;
}

Work head_values(bool kernels, std::size_t rows, std::size_t cols, std::size_t d, const float* p, std::size_t ldp, const float* v,
                 std::size_t ldv, float* out, std::size_t ldo) {
    const Work work = product_work(rows, d, cols);  // the same either way: sgemm counts it too
#if defined(ATTNWALK_HAVE_AVX2)
    if (kernels) {
        count_work(work);
        weighted_values_avx512(rows, cols, d, p, ldp, v, ldv, out, ldo);
        return work;
    }
#endif
    (void)kernels;
    sgemm(false, false, rows, d, cols, 1.0f, p, ldp, v, ldv, 0.0f, out, ldo);  // counts the same
    return work;
}

}  // namespace fast

WorkerShare worker_share(std::size_t n, std::size_t worker, std::size_t workers, std::size_t align) {
    const std::size_t chunk = ((n + workers - 1) / workers + align - 1) / align * align;
    const std::size_t begin = std::min(n, worker * chunk);
    return {begin, std::min(n, begin + chunk)};
}

std::size_t cores() {
    static const std::size_t n = std::max(1u, std::thread::hardware_concurrency());
    return n;
}

namespace {

// Keeps a core busy for a moment without hogging the pipeline it shares.
inline void cpu_relax() {
#if defined(__x86_64__) || defined(__i386__)
    __builtin_ia32_pause();
#elif defined(__aarch64__)
    asm volatile("yield");
#endif
}

// Spins until ready() or until `window` has passed; true if ready. A forward hands the
// cores a product every few tens of microseconds, while waking a sleeping thread costs
// ~40 µs on this VM (futex, then the hypervisor): threads that spin a little between two
// products skip that (docs/performance.md, section 10).
template <class Ready>
bool spin_until(Ready ready, std::chrono::microseconds window) {
    const auto until = std::chrono::steady_clock::now() + window;
    for (unsigned i = 1;; ++i) {
        if (ready()) return true;
        cpu_relax();
        if (i % 64 == 0 && std::chrono::steady_clock::now() >= until) return ready();
    }
}
constexpr std::chrono::microseconds spin_window{200};

// cores() − 1 threads kept for the whole process, waiting for the next body: spinning for
// spin_window after their last one, then asleep. Made on first use and never destroyed:
// its threads end with the process.
class Pool {
public:
    explicit Pool(std::size_t threads) {
        size_ = threads;
        for (std::size_t i = 1; i <= threads; ++i) std::thread([this, i] { serve(i); }).detach();
    }

    void run(const std::function<void(std::size_t, std::size_t)>& body) {
        std::lock_guard<std::mutex> one_caller(caller_);
        std::exception_ptr first;
        {
            std::lock_guard<std::mutex> lock(m_);
            body_ = &body;
            error_ = nullptr;
            pending_.store(size_, std::memory_order_relaxed);
            generation_.fetch_add(1, std::memory_order_release);
        }
        wake_.notify_all();
        try {
            const AsWorker worker;
            body(0, size_ + 1);
        } catch (...) {
            first = std::current_exception();
        }
        const auto all_done = [&] { return pending_.load(std::memory_order_acquire) == 0; };
        std::unique_lock<std::mutex> lock(m_);
        if (!all_done()) {
            lock.unlock();
            if (!spin_until(all_done, spin_window)) {
                lock.lock();
                done_.wait(lock, all_done);
            } else {
                lock.lock();
            }
        }
        body_ = nullptr;
        if (!first) first = error_;
        lock.unlock();
        if (first) std::rethrow_exception(first);
    }

private:
    void serve(std::size_t index) {
        in_worker = true;
        std::size_t seen = 0;
        for (;;) {
            const auto fresh = [&] { return generation_.load(std::memory_order_acquire) != seen; };
            std::unique_lock<std::mutex> lock(m_, std::defer_lock);
            if (!spin_until(fresh, spin_window)) {
                lock.lock();
                wake_.wait(lock, fresh);
            } else {
                lock.lock();
            }
            seen = generation_.load(std::memory_order_relaxed);
            const auto* body = body_;
            lock.unlock();
            std::exception_ptr error;
            try {
                (*body)(index, size_ + 1);
            } catch (...) {
                error = std::current_exception();
            }
            lock.lock();
            if (error && !error_) error_ = error;
            if (pending_.fetch_sub(1, std::memory_order_acq_rel) == 1) done_.notify_one();
        }
    }

    std::mutex caller_, m_;
    std::condition_variable wake_, done_;
    const std::function<void(std::size_t, std::size_t)>* body_ = nullptr;
    std::atomic<std::size_t> pending_{0}, generation_{0};
    std::size_t size_ = 0;
    std::exception_ptr error_;
};

}  // namespace

void on_every_core(const std::function<void(std::size_t worker, std::size_t workers)>& body) {
    if (in_worker || cores() == 1) {
        body(0, 1);
        return;
    }
    static Pool* pool = new Pool(cores() - 1);
    pool->run(body);
}

void on_every_core(std::size_t work, const std::function<void(std::size_t worker, std::size_t workers)>& body) {
    if (work < small_work) return body(0, 1);
    on_every_core(body);
}

bool avx512_instead_of_blas() {
    if (!fast::has_avx512() || backend().get().avx512()) return false;
    instead = true;
    return true;
}

void note_vector_kernels() { streamed = true; }

std::string blas_backend() {
    Backend& b = backend();
    if (b.loaded) {
        // (without a plugin, the products the vector kernels took are theirs, not the loop's)
        const std::string before = !b.plugin->sgemm() && streamed ? "vector kernels, and the " : "";
        const std::string after =
            instead ? "; products of more than " + std::to_string(fast::few_rows_most) + " rows on AVX-512 vector kernels" : "";
        return before + b.plugin->description() + after;
    }
    return streamed ? "vector kernels (each large product had one column, at most " + std::to_string(fast::few_rows_most) +
                          " rows, or BF16 weights; OpenBLAS not loaded)"
                    : "built-in loop (no product was large enough to load OpenBLAS)";
}



}  // namespace attnwalk
