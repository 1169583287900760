#include "test_util.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "attnwalk/ops/activations.hpp"
#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/norms.hpp"

#include <xtensor/xview.hpp>

#include "ops/kernels.hpp"

using namespace attnwalk;

namespace {

// Values in [-0.5, 0.5) from a linear congruential generator: the same on every platform.
struct Uniform {
    std::uint32_t state;
    float operator()() {
        state = state * 1664525u + 1013904223u;
        return static_cast<float>(state >> 8) / 16777216.0f - 0.5f;
    }
};

}  // namespace

TEST_SUITE("linear") {
    TEST_CASE("linear.either_layout_in_place_equals_owned") {
        // W (d_in 2, d_out 3) in x·W layout, and its transpose as nn.Linear stores it
        const Mat w = {{1.0f, 2.0f, 3.0f}, {4.0f, 5.0f, 6.0f}};
        const std::vector<float> xw = {1, 2, 3, 4, 5, 6}, nn = {1, 4, 2, 5, 3, 6};
        const Cube x = {{{1.0f, -1.0f}, {0.5f, 2.0f}}};
        const Cube owned = project(x, owned_linear(w, Vec{0.5f, 0.0f, -0.5f}));
        Linear a = external_linear(xw.data(), 2, 3, 3, false, nullptr), b = external_linear(nn.data(), 2, 3, 2, true, nullptr);
        a.b = b.b = Vec{0.5f, 0.0f, -0.5f};
        CHECK(project(x, a) == owned);
        CHECK(project(x, b) == owned);
        CHECK(a.matrix() == w);
        CHECK(b.matrix() == w);
    }

    TEST_CASE("linear.output_columns_and_one_row") {
        const std::vector<float> nn = {1, 4, 2, 5, 3, 6};  // nn.Linear's [3, 2]
        Linear l = external_linear(nn.data(), 2, 3, 2, true, nullptr);
        l.b = Vec{0.0f, 10.0f, 20.0f};
        const Linear tail = output_columns(l, 1, 2);  // outputs 1 and 2
        CHECK(tail.out() == 2);
        CHECK(tail.b(0) == 10.0f);
        float row[2];
        tail.copy_out_row(0, row);
        CHECK(row[0] == 2.0f);
        CHECK(row[1] == 5.0f);
        const float x[] = {1.0f, 1.0f};
        const Mat y = project_row(l, x);  // W·x + b
        CHECK(y == Mat{{5.0f, 17.0f, 29.0f}});
    }

    TEST_CASE("linear.sixteen_bit_weights_are_widened_where_they_lie") {
        // bfloat16 and half values exact in both: 1, -2, 0.5, 3, 0.25, -1 in nn.Linear's [3, 2]
        const std::vector<std::uint16_t> bf = {0x3F80, 0xC000, 0x3F00, 0x4040, 0x3E80, 0xBF80};
        const std::vector<std::uint16_t> half = {0x3C00, 0xC000, 0x3800, 0x4200, 0x3400, 0xBC00};
        const std::vector<float> f32 = {1, -2, 0.5f, 3, 0.25f, -1};
        const Cube x = {{{1.0f, 2.0f}, {-1.0f, 0.5f}}};
        const Cube want = project(x, external_linear(f32.data(), 2, 3, 2, true, nullptr));
        for (bool bf16 : {true, false}) {
            Linear l = external_linear16(bf16 ? bf.data() : half.data(), bf16, 2, 3, 2, true, nullptr);
            CHECK(project(x, l) == want);
            CHECK(project_row(l, &x(0, 0, 0)) == Mat{{want(0, 0, 0), want(0, 0, 1), want(0, 0, 2)}});
            CHECK(l.matrix() == external_linear(f32.data(), 2, 3, 2, true, nullptr).matrix());
            const Linear last = output_columns(l, 2, 1);  // output 2 alone
            CHECK(project(x, last)(0, 1, 0) == want(0, 1, 2));
        }
        // x·W layout, [2, 3]
        const std::vector<std::uint16_t> bf_xw = {0x3F80, 0x3F00, 0x3E80, 0xC000, 0x4040, 0xBF80};
        CHECK(project(x, external_linear16(bf_xw.data(), true, 2, 3, 3, false, nullptr)) == want);
    }

    TEST_CASE("linear.bf16_rows_through_every_path_equal_the_sums_in_double") {
        // the register-widening kernel (up to 128 rows) and the widened blocks (more), with tails
        // in every dimension: k not a multiple of 16, outputs not of 4, an odd number of rows,
        // a leading dimension wider than the row, and one output column alone
        Uniform next{12345};
        for (std::size_t d_in : {5, 16, 37, 64, 100})
            for (std::size_t d_out : {1, 3, 4, 9})
                for (std::size_t rows : {1, 2, 3, 7, 33, 40, 128, 129}) {
                    const std::size_t ld = d_in + 3;
                    std::vector<std::uint16_t> w(d_out * ld);
                    std::vector<float> wf(d_out * ld);
                    for (std::size_t i = 0; i < w.size(); ++i) {
                        std::uint32_t bits;
                        const float v = next();
                        std::memcpy(&bits, &v, sizeof bits);
                        w[i] = static_cast<std::uint16_t>(bits >> 16);  // truncated: any bf16 value will do
                        bits = static_cast<std::uint32_t>(w[i]) << 16;
                        std::memcpy(&wf[i], &bits, sizeof bits);
                    }
                    Cube x = Cube::from_shape({1, rows, d_in});
                    for (float& v : x) v = next();
                    const Linear l = external_linear16(w.data(), true, d_in, d_out, ld, true, nullptr);
                    const Cube y = project(x, l);
                    for (std::size_t r = 0; r < rows; ++r)
                        for (std::size_t j = 0; j < d_out; ++j) {
                            double sum = 0.0, size = 0.0;
                            for (std::size_t p = 0; p < d_in; ++p) {
                                sum += static_cast<double>(x(0, r, p)) * wf[j * ld + p];
                                size += std::fabs(static_cast<double>(x(0, r, p)) * wf[j * ld + p]);
                            }
                            INFO("d_in " << d_in << " d_out " << d_out << " rows " << rows << " at " << r << "," << j);
                            CHECK(std::fabs(y(0, r, j) - sum) <= 1e-6 * size + 1e-12);
                        }
                    const Mat one = project_row(l, &x(0, rows - 1, 0));
                    for (std::size_t j = 0; j < d_out; ++j) CHECK(std::fabs(one(0, j) - y(0, rows - 1, j)) <= 1e-6);
                }
    }

    TEST_CASE("linear.bf16_rows_on_the_register_kernel_are_named_in_the_timing") {
        // --timing's matrix_products: a product the BF16 register kernel took is not the
        // built-in loop's, even where OpenBLAS was never loaded (a short prompt through BF16)
        if (!fast::has_avx2_fma()) {
            MESSAGE("no AVX2 + FMA here: the register kernel is not used");
            return;
        }
        const std::size_t d_in = 64, d_out = 16;
        std::vector<std::uint16_t> w(d_out * d_in, 0x3F80);  // every weight 1.0
        const Linear l = external_linear16(w.data(), true, d_in, d_out, d_in, true, nullptr);
        Cube x = Cube::from_shape({1, 3, d_in});
        x.fill(0.5f);
        const Cube y = project(x, l);
        CHECK(y(0, 2, 15) == doctest::Approx(32.0f));
        // (OpenBLAS, where an earlier product loaded it; else the vector kernels are named)
        const std::string backend = blas_backend();
        CHECK((backend.find("OpenBLAS") == 0 || backend.find("vector kernels") == 0));
    }

    TEST_CASE("linear.bf16_rows_past_128_take_the_kernel_where_openblas_has_no_avx512") {
        // An AVX-512 CPU whose OpenBLAS has older kernels: every row count goes through the
        // register-widening kernel, 128 rows at a time, so 300 rows give the bits of their
        // pieces of 128, 128 and 44 (elsewhere the widened blocks take them: the test above)
        if (!avx512_instead_of_blas()) {
            MESSAGE("OpenBLAS has AVX-512 kernels here, or the CPU has none: skipped");
            return;
        }
        Uniform next{777};
        const std::size_t d_in = 100, d_out = 37, ld = 103, rows = 300;
        std::vector<std::uint16_t> w(d_out * ld);
        for (auto& v : w) v = static_cast<std::uint16_t>(0x3C00 + (static_cast<std::uint32_t>(next() * 4096.0f + 4096.0f) & 0x7FF));
        const Linear l = external_linear16(w.data(), true, d_in, d_out, ld, true, nullptr);
        Cube x = Cube::from_shape({1, rows, d_in});
        for (float& v : x) v = next();
        const Cube y = project(x, l);
        for (std::size_t r0 = 0; r0 < rows; r0 += 128) {
            const std::size_t n = std::min<std::size_t>(128, rows - r0);
            Cube piece = Cube::from_shape({1, n, d_in});
            std::copy(&x(0, r0, 0), &x(0, r0, 0) + n * d_in, piece.begin());
            const Cube part = project(piece, l);
            CHECK(std::memcmp(part.data(), &y(0, r0, 0), 4 * n * d_out) == 0);
        }
    }

    TEST_CASE("linear.layer_norm_and_gelu") {
        const Cube x = {{{1.0f, 3.0f}}};
        const Cube y = layer_norm(x, Vec{1.0f, 1.0f}, Vec{0.0f, 0.5f}, 0.0f);  // mean 2, var 1
        CHECK(y(0, 0, 0) == doctest::Approx(-1.0));
        CHECK(y(0, 0, 1) == doctest::Approx(1.5));
        const Cube g = gelu_tanh(Cube{{{0.0f, 1.0f, -1.0f}}});
        CHECK(g(0, 0, 0) == 0.0f);
        CHECK(g(0, 0, 1) == doctest::Approx(0.841192).epsilon(1e-5));  // torch.nn.functional.gelu(1, approximate="tanh")
        CHECK(g(0, 0, 2) == doctest::Approx(-0.158808).epsilon(1e-4));
    }

    TEST_CASE("linear.gelu_and_silu_match_their_formulas_in_double_on_every_path") {
        // past 2^15 values the kernel runs on every core, in AVX2 where the CPU has it, with
        // scalar tails: every element must be the formula's value, whatever path it took
        const std::size_t n = (std::size_t{1} << 16) + 5;
        Cube x = Cube::from_shape({1, 1, n});
        for (std::size_t i = 0; i < n; ++i) x(0, 0, i) = -20.0f + 40.0f * static_cast<float>(i) / static_cast<float>(n);
        const Cube g = gelu_tanh(x), s = silu(x);
        const Cube g_small = gelu_tanh(Cube(xt::view(x, xt::all(), xt::all(), xt::range(0, 1000))));  // one thread
        for (std::size_t i = 0; i < n; ++i) {
            const double v = x(0, 0, i);
            const double gelu = 0.5 * v * (1.0 + std::tanh(std::sqrt(2.0 / M_PI) * (v + 0.044715 * v * v * v)));
            const double swish = v / (1.0 + std::exp(-v));
            INFO("x = " << v);
            CHECK(std::fabs(g(0, 0, i) - gelu) <= 1e-6 * std::fabs(gelu) + 1e-8);  // the far tail: tiny numbers, a few ulp of the inner sum
            CHECK(std::fabs(s(0, 0, i) - swish) <= 1e-6 * std::fabs(swish) + 1e-8);
            if (i < 1000) CHECK(g_small(0, 0, i) == g(0, 0, i));
        }
        const float inf = std::numeric_limits<float>::infinity();
        const Cube edge = gelu_tanh(Cube{{{inf, -inf, NAN, -100.0f, 1e13f, -1e13f, 0.0f, 88.0f, -88.0f}}});
        CHECK(edge(0, 0, 0) == inf);
        CHECK(std::isnan(edge(0, 0, 1)));  // -inf · (1 + tanh(-inf)) = -inf · 0, as PyTorch gives it
        CHECK(std::isnan(edge(0, 0, 2)));
        CHECK(edge(0, 0, 3) == 0.0f);
        CHECK(edge(0, 0, 4) == 1e13f);
        CHECK(edge(0, 0, 5) == 0.0f);
        CHECK(edge(0, 0, 6) == 0.0f);
        CHECK(edge(0, 0, 7) == 88.0f);
        CHECK(edge(0, 0, 8) == 0.0f);
    }
}
