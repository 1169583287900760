// Matrix products: the plain loop for small ones, the OpenBLAS plugin for large ones.
#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "attnwalk/ops/blas.hpp"
#include "ops/kernels.hpp"
#include "test_util.hpp"

namespace {

// C = op(A)·op(B) in double, the reference.
std::vector<double> reference(bool ta, bool tb, std::size_t m, std::size_t n, std::size_t k, const std::vector<float>& a,
                              const std::vector<float>& b) {
    std::vector<double> c(m * n, 0.0);
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j)
            for (std::size_t p = 0; p < k; ++p)
                c[i * n + j] += static_cast<double>(ta ? a[p * m + i] : a[i * k + p]) * (tb ? b[j * k + p] : b[p * n + j]);
    return c;
}

void check_product(std::size_t m, std::size_t n, std::size_t k) {
    std::mt19937 gen(7);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> a(m * k), b(k * n);
    for (auto& v : a) v = u(gen);
    for (auto& v : b) v = u(gen);
    for (bool ta : {false, true})
        for (bool tb : {false, true}) {
            INFO("m " << m << " n " << n << " k " << k << " ta " << ta << " tb " << tb);
            std::vector<float> c(m * n, 1.0f);
            attnwalk::sgemm(ta, tb, m, n, k, 1.0f, a.data(), ta ? m : k, b.data(), tb ? k : n, 0.0f, c.data(), n);
            const auto expected = reference(ta, tb, m, n, k, a, b);
            double worst = 0.0;
            for (std::size_t i = 0; i < c.size(); ++i) worst = std::max(worst, std::fabs(c[i] - expected[i]));
            CHECK(worst < 1e-4);
        }
}

// How many elements of sgemm's C = A·B (m×k by k×n, x·W layout, values drawn from `seed`)
// have the plain loop's bits: each element one chain of fused multiply-adds over k in order.
std::size_t same_as_plain_loop(std::size_t m, std::size_t n, std::size_t k, unsigned seed) {
    std::mt19937 gen(seed);
    std::uniform_real_distribution<float> u(-1.0f, 1.0f);
    std::vector<float> a(m * k), b(k * n), c(m * n);
    for (auto& v : a) v = u(gen);
    for (auto& v : b) v = u(gen);
    attnwalk::sgemm(false, false, m, n, k, 1.0f, a.data(), k, b.data(), n, 0.0f, c.data(), n);
    std::size_t same = 0;
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t j = 0; j < n; ++j) {
            float sum = 0.0f;
            for (std::size_t p = 0; p < k; ++p) sum = std::fma(a[i * k + p], b[p * n + j], sum);
            same += sum == c[i * n + j];
        }
    return same;
}

}  // namespace

TEST_SUITE("blas") {
    TEST_CASE("blas.small_products_use_the_loop") { check_product(6, 6, 3); }

    TEST_CASE("blas.large_products_use_openblas") {
        check_product(130, 70, 90);
        // the build puts the plugin where blas.cpp looks for it, and the product above loaded it
        // (without a plugin, after products the vector kernels took: "vector kernels, and the built-in loop …")
        const std::string backend = attnwalk::blas_backend();
        if (ATTNWALK_HAS_OPENBLAS)
            CHECK(backend.find("OpenBLAS") == 0);
        else
            CHECK(backend.find("built-in loop (no OpenBLAS plugin") != std::string::npos);
    }

    TEST_CASE("blas.large_products_split_over_the_cores") {
        check_product(300, 200, 300);  // by rows
        check_product(3, 4000, 1500);  // a few rows through a wide layer: by columns
    }

    TEST_CASE("blas.one_column_streams_the_matrix") {
        check_product(5003, 1, 301);  // the head's logits of one position: the vector kernel where the CPU has AVX2 and FMA
        check_product(40000, 1, 7);   // rows shorter than a vector: the tail alone
    }

    TEST_CASE("blas.a_few_rows_stream_the_matrix") {
        check_product(5, 3001, 303);  // a generated token or a short prompt: the vector kernel, tails in both k and n
        check_product(1, 2000, 400);
        check_product(8, 100, 1000);
        // each element accumulated over k in order with fused multiply-adds, as the plain
        // loop does: the same bits, whichever path ran. Shapes: odd and even row counts up to
        // the kernel's 16, columns beyond its 48-wide tiles and 8-wide vectors and across its
        // 768-column chunks, panels of 16 rows of B and of 8 (a row stride that is a multiple
        // of 4 KB, GPT-2's MLP), k not a multiple; each above blas_min_work, so the kernel runs
        // where the CPU has AVX2 and FMA.
        struct Shape {
            std::size_t m, n, k;
        };
        for (const Shape s : {Shape{7, 1037, 2999}, Shape{16, 2048, 37}, Shape{13, 100, 333}, Shape{2, 57, 2400}, Shape{1, 3000, 769},
                              Shape{10, 3072, 100}, Shape{11, 4000, 21}}) {
            CAPTURE(s.m);
            CAPTURE(s.n);
            CAPTURE(s.k);
            CHECK(same_as_plain_loop(s.m, s.n, s.k, 3) == s.m * s.n);
        }
    }

    TEST_CASE("blas.more_rows_take_the_avx512_kernel_where_openblas_has_none") {
        // An AVX-512 CPU whose OpenBLAS multiplies with older kernels (as this project's
        // machine, whose environment sets OPENBLAS_CORETYPE=Haswell): products of more than 16
        // rows in x·W layout go to the AVX-512 kernel, 128 rows at a time, each element the
        // plain loop's chain. Elsewhere OpenBLAS takes them, checked against double.
        struct Shape {
            std::size_t m, n, k;
        };
        const bool kernel = attnwalk::avx512_instead_of_blas();
        if (!kernel) MESSAGE("OpenBLAS has AVX-512 kernels here, or the CPU has none: the products are checked against double only");
        for (const Shape s : {Shape{17, 100, 37}, Shape{129, 333, 70}, Shape{300, 64, 768}, Shape{40, 2304, 50}}) {
            CAPTURE(s.m);
            CAPTURE(s.n);
            CAPTURE(s.k);
            check_product(s.m, s.n, s.k);
            if (!kernel) continue;
            CHECK(same_as_plain_loop(s.m, s.n, s.k, 5) == s.m * s.n);
        }
        if (kernel) CHECK(attnwalk::blas_backend().find("products of more than 16 rows on AVX-512 vector kernels") != std::string::npos);
    }

    TEST_CASE("blas.on_every_core_runs_each_worker_once_and_rethrows") {
        const std::size_t cores = attnwalk::cores();
        std::vector<int> seen(cores, 0);
        std::size_t told = 0;
        attnwalk::on_every_core([&](std::size_t worker, std::size_t workers) {
            seen.at(worker) += 1;  // each worker its own element
            if (worker == 0) told = workers;
        });
        CHECK(told == cores);
        CHECK(std::count(seen.begin(), seen.end(), 1) == static_cast<long>(cores));
        std::size_t nested = 0;  // inside a worker, one worker: the calling thread
        attnwalk::on_every_core([&](std::size_t worker, std::size_t) {
            if (worker == 0) attnwalk::on_every_core([&](std::size_t, std::size_t workers) { nested = workers; });
        });
        CHECK(nested == 1);
        CHECK_THROWS_WITH(attnwalk::on_every_core([&](std::size_t worker, std::size_t workers) {
                              if (worker + 1 == workers) throw std::runtime_error("the last worker failed");
                          }),
                          "the last worker failed");
        attnwalk::on_every_core([&](std::size_t worker, std::size_t) { seen.at(worker) += 1; });  // still serving
        CHECK(std::count(seen.begin(), seen.end(), 2) == static_cast<long>(cores));
    }

    TEST_CASE("blas.alpha_and_beta") {
        const std::vector<float> a{1, 2, 3, 4}, b{5, 6, 7, 8};  // 2×2
        std::vector<float> c{1, 1, 1, 1};
        attnwalk::sgemm(false, false, 2, 2, 2, 2.0f, a.data(), 2, b.data(), 2, 1.0f, c.data(), 2);
        CHECK(c == std::vector<float>{39, 45, 87, 101});  // 2·A·B + C
    }
}
