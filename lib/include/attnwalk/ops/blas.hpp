// Matrix products: C = alpha·op(A)·op(B) + beta·C on row-major float32 buffers.
//
// Small products (the textbook's 6×3 matrices) run as a plain loop. Large ones go to
// OpenBLAS through xtensor-blas, in a plugin (lib/openblas/) loaded on the first large
// product: a process that never needs BLAS never pays OpenBLAS's start-up (about 6 ms
// here, more than the rest of a small run). A large matrix read for one column or a few
// rows (x·W layout) is streamed by vector kernels instead (ops/kernels.hpp), on CPUs with
// AVX2 and FMA; a short prompt through GPT-2 needs nothing else and never loads OpenBLAS.
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace attnwalk {

// Products with fewer multiply-adds than this run as the plain loop.
constexpr double blas_min_work = 64.0 * 64.0 * 64.0;

// Large products use every core: their rows (or columns) are split over threads.
void sgemm(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
           std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc);
// The same, for a caller that counts the work itself (ops/work.hpp): a 16-bit layer's
// widened blocks, whose weights were read from memory as 16-bit numbers. sgemm counts
// 2·m·n·k operations and the three matrices' float32 bytes.
void sgemm_counted_by_caller(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
                             std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc);

// Whether attnwalk's AVX-512 kernels take the products of more than 16 rows that OpenBLAS
// would: on an AVX-512 CPU whose OpenBLAS runs older kernels (it does not know the CPU, or
// OPENBLAS_CORETYPE holds it back), or where there is no OpenBLAS. Loads the plugin (on
// an AVX-512 CPU only). The caller then takes them, and blas_backend() says so.
bool avx512_instead_of_blas();

// How large products were computed: "OpenBLAS (...)", the vector kernels alone, or the
// built-in loop and why. Never loads the plugin itself.
std::string blas_backend();
// Noted by a product that a vector kernel took outside sgemm (ops/linear.cpp's BF16
// register kernel), so that blas_backend() names the kernels and not the loop.
void note_vector_kernels();

// The cores work is split over.
std::size_t cores();

// Runs body(worker, workers) once on each of `workers` threads (the caller's and a pool's
// kept for the whole process, each with its own thread_local buffers), as workers, and
// returns when all are done; the first exception thrown is rethrown here. Inside a worker
// already, or with one core, body(0, 1) runs on the calling thread alone.
void on_every_core(const std::function<void(std::size_t worker, std::size_t workers)>& body);
// The same for `work` units (multiply-adds, values): below small_work, body(0, 1) on the
// calling thread, as a pool's threads started for a chapter's 6×6 matrices cost more than
// the work (a tiny command's whole process was a third faster without them).
constexpr std::size_t small_work = std::size_t{1} << 15;
void on_every_core(std::size_t work, const std::function<void(std::size_t worker, std::size_t workers)>& body);
// Worker `worker`'s part [begin, end) of n items split over `workers`, in chunks that are
// multiples of `align` (the last may be shorter, or empty).
struct WorkerShare {
    std::size_t begin, end;
};
WorkerShare worker_share(std::size_t n, std::size_t worker, std::size_t workers, std::size_t align = 1);

}  // namespace attnwalk
