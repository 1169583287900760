// The vector kernels behind the library's public functions (lib/src/ops/kernels.hpp):
// where two instruction sets compute the same step, the same bits.
#include <algorithm>
#include <array>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <random>
#include <vector>

#include "ops/kernels.hpp"
#include "test_util.hpp"

using namespace attnwalk::fast;

namespace {

// Whether the CPU has the instructions a test needs; says so when it skips.
[[maybe_unused]] bool cpu_has(bool has, const char* what) {  // no test calls it off x86-64
    if (!has) MESSAGE("this CPU has no " << what << ": skipped");
    return has;
}

// The same floats bit for bit, but where both are NaN: which NaN an addition or a product of
// two NaNs gives depends on its operands' order, which a compiler may swap (the sanitizers'
// build did, in one sum of 40,000). Empty ranges are equal.
[[maybe_unused]] bool same_bits(const float* a, const float* b, std::size_t n) {
    for (std::size_t i = 0; i < n; ++i)
        if (!(std::isnan(a[i]) && std::isnan(b[i])) && std::memcmp(a + i, b + i, sizeof(float)) != 0) return false;
    return true;
}
[[maybe_unused]] bool same_bits(const RowStats& a, const RowStats& b) {
    const float x[3] = {a.min, a.max, a.sum}, y[3] = {b.min, b.max, b.sum};
    return same_bits(x, y, 3);
}

}  // namespace

TEST_SUITE("kernels") {
#if defined(ATTNWALK_HAVE_AVX2)
    TEST_CASE("kernels.exp_row_avx512_gives_the_avx2_bits") {
        if (!cpu_has(has_avx512(), "AVX-512F")) return;
        std::mt19937 gen(7);
        std::normal_distribution<float> normal(0.0f, 6.0f);
        std::size_t rows = 0;
        for (std::size_t n : {1, 7, 8, 9, 15, 16, 17, 23, 24, 31, 32, 33, 40, 100, 128, 1000, 2048}) {
            for (int trial = 0; trial < 4; ++trial, ++rows) {
                std::vector<float> row(n);
                for (float& v : row) v = normal(gen) * (trial == 3 ? 20.0f : 1.0f);  // trial 3: beyond exp's range
                if (trial == 2 && n > 5) {  // masked and odd entries
                    row[1] = -INFINITY;
                    row[n - 2] = NAN;
                    row[n / 2] = 100.0f;
                }
                float max = -INFINITY;
                for (float v : row) max = std::fmax(max, v);
                if (trial == 1) max = 0.0f;  // not the row's max: large arguments too
                std::vector<float> a = row, b = row;
                const float sa = exp_row_avx2(a.data(), n, max), sb = exp_row_avx512(b.data(), n, max);
                CHECK(std::memcmp(&sa, &sb, sizeof sa) == 0);
                CHECK(std::memcmp(a.data(), b.data(), 4 * n) == 0);
            }
        }
        CHECK(rows == 68);
    }

    TEST_CASE("kernels.the_vector_exp_tail_gives_exp_scalars_bits") {
        // A row's last n mod 8 values go through exp8 on masked lanes: each must be what
        // exp_scalar gives (NaN, ±inf, beyond the clamps, subnormal results included) and the
        // sum the same one-by-one sum, lanes past the row untouched.
        if (!cpu_has(has_avx2_fma(), "AVX2")) return;
        std::mt19937 gen(17);
        std::uniform_int_distribution<std::uint32_t> bits;
        std::normal_distribution<float> normal(0.0f, 30.0f);
        std::size_t rows = 0;
        for (int trial = 0; trial < 20000; ++trial) {
            const std::size_t m = static_cast<std::size_t>(trial % 3) * 8, n = m + static_cast<std::size_t>(trial % 8);
            std::vector<float> row(n + 8);
            for (float& v : row) {
                const std::uint32_t b = bits(gen);
                std::memcpy(&v, &b, sizeof v);
                if (trial % 2) v = normal(gen);
            }
            if (trial % 5 == 0 && n > m) row[m] = trial % 10 ? -INFINITY : INFINITY;
            const float max = trial % 97 == 0 ? -INFINITY : trial % 89 == 0 ? NAN : trial % 4 ? normal(gen) : 0.0f;  // −∞: a row masked whole
            std::vector<float> a = row, b = row;
            const float sa = exp_scalar_row(a.data(), n, max, m), sb = exp_tail_avx2(b.data(), n, max, m);
            CHECK(same_bits(&sa, &sb, 1));
            CHECK(same_bits(a.data(), b.data(), row.size()));
            ++rows;
        }
        CHECK(rows == 20000);
    }

    TEST_CASE("kernels.the_vector_softmax_sums_in_its_lanes_order") {
        // softmax_row on AVX2 against a scalar model of its order, so that a change inside a
        // pass shows (the two-row test only compares the passes with themselves): 8 lanes,
        // lane l summing values j ≡ l (mod 8) before the last whole 8 in order, the lanes
        // added ((0+1)+(2+3))+((4+5)+(6+7)), then the rest one by one; rows shorter than 8
        // one by one throughout. Finite values, so min and max have one answer.
        if (!cpu_has(has_avx2_fma(), "AVX2")) return;
        struct Lanes {  // one pass's min, max and sum in the kernels' order
            static RowStats of(const std::vector<float>& v) {
                const std::size_t n = v.size(), m = n / 8 * 8;
                RowStats r{INFINITY, -INFINITY, 0.0f};
                if (m > 0) {
                    float lane[8] = {};
                    for (std::size_t j = 0; j < m; ++j) lane[j % 8] += v[j];
                    r.sum = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
                }
                float tail = 0.0f;
                for (std::size_t j = m; j < n; ++j) tail += v[j];
                r.sum = m > 0 ? r.sum + tail : tail;
                for (float x : v) r.min = std::min(r.min, x), r.max = std::max(r.max, x);
                return r;
            }
        };
        std::mt19937 gen(19);
        std::normal_distribution<float> normal(0.0f, 5.0f);
        std::size_t rows = 0;
        for (std::size_t n : {1, 3, 7, 8, 9, 15, 16, 17, 31, 40, 100, 257, 1000})
            for (float scale : {8.0f, 11.3137083f, 0.7f}) {
                std::vector<float> row(n);
                for (float& x : row) x = normal(gen);
                const bool multiply = scale == 8.0f;  // a power of two: × 1/scale, the same bits
                std::vector<float> scaled(n);
                for (std::size_t j = 0; j < n; ++j) scaled[j] = multiply ? row[j] * (1.0f / scale) : row[j] / scale;
                const float max = *std::max_element(scaled.begin(), scaled.end());
                std::vector<float> e = scaled;
                exp_scalar_row(e.data(), n, max, 0);  // each value's exp (its sum is not the kernels')
                const float inv = 1.0f / Lanes::of(e).sum;
                std::vector<float> w(n);
                for (std::size_t j = 0; j < n; ++j) w[j] = e[j] * inv;
                std::vector<float> got = row;
                const auto [raw, weights] = softmax_row(got.data(), n, scale);
                CAPTURE(n);
                CAPTURE(scale);
                CHECK(std::memcmp(got.data(), w.data(), 4 * n) == 0);
                const RowStats want_raw = Lanes::of(row), want_weights = Lanes::of(w);
                CHECK(std::memcmp(&raw, &want_raw, sizeof raw) == 0);
                CHECK(std::memcmp(&weights, &want_weights, sizeof weights) == 0);
                ++rows;
            }
        CHECK(rows == 39);
    }

    TEST_CASE("kernels.two_rows_at_once_give_each_rows_own_bits") {
        // softmax_rows interleaves two rows' passes (and exp_rows_avx2/avx512 their exps):
        // each row must come out as softmax_row and exp_row make it alone, whatever the two
        // lengths (either shorter, a multiple of 8 or 16 or not, none), the scale (a power of
        // two multiplies) and the values (masked, NaN, beyond exp's range).
        if (!cpu_has(has_avx2_fma(), "AVX2")) return;
        std::mt19937 gen(13);
        std::normal_distribution<float> normal(0.0f, 6.0f);
        const std::size_t lengths[] = {0, 1, 7, 8, 9, 15, 16, 17, 24, 31, 33, 40, 129, 1000};
        std::size_t pairs = 0;
        for (std::size_t na : lengths)
            for (std::size_t nb : lengths)
                for (float scale : {8.0f, 11.3137083f}) {
                    const int trial = static_cast<int>(pairs++ % 3);
                    std::vector<float> a(na), b(nb);
                    for (float& v : a) v = normal(gen) * (trial == 2 ? 40.0f : 1.0f);  // trial 2: beyond exp's range
                    for (float& v : b) v = normal(gen);
                    if (trial == 1 && na > 5) {
                        a[1] = -INFINITY;
                        a[na - 2] = NAN;
                    }
                    std::vector<float> a1 = a, b1 = b, a2 = a, b2 = b;
                    const auto one_a = softmax_row(a1.data(), na, scale), one_b = softmax_row(b1.data(), nb, scale);
                    const auto two = softmax_rows(a2.data(), na, b2.data(), nb, scale);
                    CAPTURE(na);
                    CAPTURE(nb);
                    CHECK(same_bits(a1.data(), a2.data(), na));
                    CHECK(same_bits(b1.data(), b2.data(), nb));
                    const RowStats stats[] = {one_a.first, one_a.second, one_b.first, one_b.second,
                                              two[0].first, two[0].second, two[1].first, two[1].second};
                    for (int i = 0; i < 4; ++i) CHECK(same_bits(stats[i], stats[i + 4]));
                    // the exps alone, from each row's own max, on both kernels
                    const float max[2] = {na ? a[0] : 0.0f, nb ? b[nb - 1] : 0.0f};
                    std::vector<float> ea = a, eb = b, fa = a, fb = b;
                    const float single[2] = {exp_row_avx2(ea.data(), na, max[0]), exp_row_avx2(eb.data(), nb, max[1])};
                    float sums[2];
                    exp_rows_avx2(fa.data(), na, fb.data(), nb, max, sums);
                    CHECK(same_bits(single, sums, 2));
                    CHECK(same_bits(ea.data(), fa.data(), na));
                    CHECK(same_bits(eb.data(), fb.data(), nb));
                    // both rows in one block, lds apart as the blocked path lays them, guards between
                    const std::size_t lds = std::max(na, nb) + 9;
                    std::vector<float> block(2 * lds + 9, -7.0f);
                    std::copy(a.begin(), a.end(), block.begin());
                    std::copy(b.begin(), b.end(), block.begin() + static_cast<std::ptrdiff_t>(lds));
                    const auto in_block = softmax_rows(block.data(), na, block.data() + lds, nb, scale);
                    CHECK(same_bits(block.data(), a1.data(), na));
                    CHECK(same_bits(block.data() + lds, b1.data(), nb));
                    for (int i = 0; i < 2; ++i) CHECK((same_bits(in_block[i].first, two[i].first) && same_bits(in_block[i].second, two[i].second)));
                    for (std::size_t j = na; j < lds; ++j) CHECK(block[j] == -7.0f);
                    for (std::size_t j = lds + nb; j < block.size(); ++j) CHECK(block[j] == -7.0f);
                    if (has_avx512()) {
                        std::vector<float> ga = a, gb = b;
                        exp_rows_avx512(ga.data(), na, gb.data(), nb, max, sums);
                        CHECK(same_bits(single, sums, 2));
                        CHECK(same_bits(ea.data(), ga.data(), na));
                        CHECK(same_bits(eb.data(), gb.data(), nb));
                    }
                }
        CHECK(pairs == 392);
    }

    TEST_CASE("kernels.the_effective_matrixs_loops_give_the_plain_loops_bits") {
        // u −= f·v and a += float(p·u), every tail of 4 and 8 lanes; the doubles from 2^-500 to 2^500,
        // so that float(p·u) overflows, underflows and falls among the subnormals too
        if (!cpu_has(has_avx2_fma(), "AVX2")) return;
        std::mt19937 gen(3);
        std::uniform_real_distribution<double> mantissa(-1.0, 1.0);
        std::uniform_int_distribution<int> exponent(-500, 500);
        const auto draw = [&] { return std::ldexp(mantissa(gen), exponent(gen)); };
        for (std::size_t n = 0; n <= 41; ++n) {
            std::vector<double> u(n), v(n);
            std::vector<float> a(n);
            for (std::size_t c = 0; c < n; ++c) {
                u[c] = draw();
                v[c] = draw();
                a[c] = static_cast<float>(std::ldexp(mantissa(gen), exponent(gen) / 4));
            }
            const double f = draw(), p = draw();
            std::vector<double> plain_u = u;
            std::vector<float> plain_a = a;
            for (std::size_t c = 0; c < n; ++c) {
                plain_u[c] -= f * v[c];
                plain_a[c] += static_cast<float>(p * u[c]);
            }
            std::vector<std::pair<void (*)(double*, const double*, double, std::size_t), void (*)(float*, const double*, double, std::size_t)>> versions = {
                {subtract_scaled_avx2, add_rounded_products_avx2}, {subtract_scaled, add_rounded_products}};
            if (has_avx512()) versions.emplace_back(subtract_scaled_avx512, add_rounded_products_avx512);
            for (const auto& [sub, add] : versions) {
                std::vector<double> uu = u;
                std::vector<float> aa = a;
                sub(uu.data(), v.data(), f, n);
                add(aa.data(), u.data(), p, n);
                CHECK(std::equal(uu.begin(), uu.end(), plain_u.begin(), [](double x, double y) { return std::memcmp(&x, &y, sizeof x) == 0; }));
                CHECK(std::equal(aa.begin(), aa.end(), plain_a.begin(), [](float x, float y) { return std::memcmp(&x, &y, sizeof x) == 0; }));
            }
        }
    }

    TEST_CASE("kernels.few_rows_avx512_gives_the_avx2_bits") {
        // tiles of 4 rows, every tail of rows and columns (past a tile of 48, past a strip of
        // 16), several chunks of 768 columns (the last one just past 768 + 48), a share that
        // starts inside B, k not a multiple of a panel, and B's rows 1024 floats apart
        // (panels of 8)
        if (!cpu_has(has_avx512(), "AVX-512F")) return;
        std::mt19937 gen(13);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::size_t products = 0;
        for (std::size_t k : {0, 1, 16, 37, 100})
            for (std::size_t m : {1, 2, 3, 4, 5, 7, 10, 16})
                for (auto [j0, j1, ldb] : {std::array<std::size_t, 3>{0, 48, 48}, {0, 7, 50}, {5, 100, 120}, {0, 1700, 1700}, {20, 1024, 1024},
                                               {0, 830, 830}}) {
                    std::vector<float> a(m * (k + 3)), b(std::max<std::size_t>(k, 1) * ldb);
                    for (float& v : a) v = normal(gen);
                    for (float& v : b) v = normal(gen);
                    std::vector<float> x(m * ldb, NAN), y(m * ldb, NAN);
                    few_rows_avx2(m, j0, j1, k, a.data(), k + 3, b.data(), ldb, x.data(), ldb);
                    few_rows_avx512(m, j0, j1, k, a.data(), k + 3, b.data(), ldb, y.data(), ldb);
                    INFO("k " << k << " m " << m << " columns " << j0 << ".." << j1 << " ldb " << ldb);
                    CHECK(std::memcmp(x.data(), y.data(), 4 * x.size()) == 0);  // the columns outside [j0, j1) untouched (NaN) in both
                    ++products;
                }
        CHECK(products == 240);
    }

    TEST_CASE("kernels.many_rows_avx512_gives_the_plain_loops_bits") {
        // tiles of 12 rows and every tail of them, strips of 32 columns and tails past 16 and
        // below it, a share that starts inside B, k of 0, 1 and not a multiple of anything,
        // and B's rows 1024 floats apart
        if (!cpu_has(has_avx512(), "AVX-512F")) return;
        std::mt19937 gen(17);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::size_t products = 0;
        for (std::size_t k : {0, 1, 37, 300})
            for (std::size_t m : {17, 23, 24, 29, 36, 128})
                for (auto [j0, j1, ldb] : {std::array<std::size_t, 3>{0, 32, 32}, {0, 7, 50}, {5, 100, 120}, {16, 1024, 1024}, {0, 49, 64}}) {
                    std::vector<float> a(m * (k + 3)), b(std::max<std::size_t>(k, 1) * ldb);
                    for (float& v : a) v = normal(gen);
                    for (float& v : b) v = normal(gen);
                    std::vector<float> x(m * ldb, NAN), y(m * ldb, NAN);
                    sgemm_loop_plain(false, false, m, j1 - j0, k, 1.0f, a.data(), k + 3, b.data() + j0, ldb, 0.0f, x.data() + j0, ldb);
                    many_rows_avx512(m, j0, j1, k, a.data(), k + 3, b.data(), ldb, y.data(), ldb);
                    INFO("k " << k << " m " << m << " columns " << j0 << ".." << j1 << " ldb " << ldb);
                    CHECK(std::memcmp(x.data(), y.data(), 4 * x.size()) == 0);  // the columns outside [j0, j1) untouched (NaN) in both
                    ++products;
                }
        CHECK(products == 120);
    }

    TEST_CASE("kernels.bf16_rows_avx512_gives_the_avx2_bits") {
        // two of W's rows a register, four of x's rows a tile: every tail (rows of x past a
        // tile, 1 to 7 of W's rows past a group of 8, columns past 16, k below 16), a share
        // that starts inside W, shares long enough to prefetch the next group, rows of W
        // packed or with room after them, and the 128 rows the Linear layer sends here at most
        if (!cpu_has(has_avx512(), "AVX-512F")) return;
        std::mt19937 gen(11);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::size_t products = 0;
        for (std::size_t k : {0, 1, 8, 16, 37, 64, 250})
            for (std::size_t m : {1, 2, 3, 4, 5, 7, 10, 33, 128})
                for (auto [j0, j1] : {std::pair<std::size_t, std::size_t>{0, 8}, {0, 3}, {5, 29}, {0, 40}, {16, 57}, {0, 13}, {3, 17}}) {
                    const std::size_t ldw = j1 == 57 ? k : k + 5, n = 57;  // rows of W packed (j1 = 57: the last row ends the buffer)
                    std::vector<std::uint16_t> w(n * ldw);
                    for (auto& b : w) {
                        const float v = normal(gen);
                        std::uint32_t bits;
                        std::memcpy(&bits, &v, sizeof bits);
                        b = static_cast<std::uint16_t>(bits >> 16);
                    }
                    std::vector<float> x(m * k);
                    for (float& v : x) v = normal(gen);
                    std::vector<float> xs(m * (k / 16 * 16));
                    deinterleave16(x.data(), m, k, k, xs.data());
                    std::vector<float> a(m * n, NAN), b(m * n, NAN);
                    bf16_rows_avx2(m, j0, j1, k, x.data(), k, xs.data(), w.data(), ldw, a.data(), n);
                    bf16_rows_avx512(m, j0, j1, k, x.data(), k, xs.data(), w.data(), ldw, b.data(), n);
                    INFO("k " << k << " m " << m << " outputs " << j0 << ".." << j1);
                    CHECK(std::memcmp(a.data(), b.data(), 4 * a.size()) == 0);  // the columns outside [j0, j1) untouched (NaN) in both
                    ++products;
                }
        CHECK(products == 441);
    }

    TEST_CASE("kernels.few_rows_over_nothing_are_zeros") {
        // k = 0: every sum is of nothing, in the columns asked for only (sgemm sends such a
        // product to its plain loop; the kernel answers the same if called)
        if (!cpu_has(has_avx2_fma(), "AVX2")) return;
        const std::size_t m = 3, n = 20;
        std::vector<float> c(m * n, NAN);
        const float none = 0.0f;
        few_rows_avx2(m, 4, 12, 0, &none, 1, &none, n, c.data(), n);
        for (std::size_t i = 0; i < m; ++i)
            for (std::size_t j = 0; j < n; ++j) {
                CAPTURE(i);
                CAPTURE(j);
                if (j >= 4 && j < 12) CHECK(c[i * n + j] == 0.0f);
                else CHECK(std::isnan(c[i * n + j]));
            }
    }

    TEST_CASE("kernels.sgemm_loop_avx2_gives_the_plain_bits") {
        // The small products' loop built twice: fused multiply-adds as instructions give the
        // bits of std::fma's calls, in every layout, with alpha and beta (one that rounds),
        // odd shapes included. No NaNs: where two meet, either may come out.
        if (!cpu_has(has_avx2_fma(), "AVX2")) return;
        std::mt19937 gen(5);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        std::size_t products = 0;
        for (const auto& [m, n, k] : {std::array<std::size_t, 3>{1, 1, 1}, {3, 7, 5}, {10, 10, 64}, {10, 64, 10}, {9, 17, 33}, {16, 40, 1}}) {
            for (int layout = 0; layout < 4; ++layout) {
                const bool ta = layout & 1, tb = layout & 2;
                const std::size_t lda = (ta ? m : k) + 3, ldb = (tb ? k : n) + 2, ldc = n + 1;
                std::vector<float> a((ta ? k : m) * lda), b((tb ? n : k) * ldb), c0(m * ldc);
                for (float& v : a) v = normal(gen);
                for (float& v : b) v = normal(gen);
                for (float& v : c0) v = normal(gen);
                for (const auto& [alpha, beta] : {std::array<float, 2>{1.0f, 0.0f}, {0.7f, 1.0f}, {-1.3f, 0.25f}, {0.9f, 0.3f}}) {
                    std::vector<float> plain = c0, avx2 = c0;
                    sgemm_loop_plain(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, plain.data(), ldc);
                    sgemm_loop_avx2(ta, tb, m, n, k, alpha, a.data(), lda, b.data(), ldb, beta, avx2.data(), ldc);
                    CAPTURE(m);
                    CAPTURE(n);
                    CAPTURE(k);
                    CAPTURE(layout);
                    CHECK(std::memcmp(plain.data(), avx2.data(), 4 * plain.size()) == 0);
                    ++products;
                }
            }
        }
        CHECK(products == 96);
    }

    TEST_CASE("kernels.row_stats_avx2_gives_the_scalar_bits") {
        if (!cpu_has(has_avx2_fma(), "AVX2")) return;
        std::mt19937 gen(11);
        std::normal_distribution<float> normal(0.0f, 3.0f);
        for (std::size_t n : {1, 5, 8, 9, 16, 63, 64, 65, 768, 1001}) {
            std::vector<float> v(n);
            for (float& x : v) x = normal(gen);
            const RowStats a = row_stats_scalar(v.data(), n), b = row_stats_avx2(v.data(), n);
            CHECK(std::memcmp(&a, &b, sizeof a) == 0);
            CHECK(a.min == *std::min_element(v.begin(), v.end()));
            CHECK(a.max == *std::max_element(v.begin(), v.end()));
            double exact = 0.0;
            for (float x : v) exact += x;
            CHECK(a.sum == doctest::Approx(exact).epsilon(1e-5).scale(1.0));
        }
    }

    TEST_CASE("kernels.finite_sums_give_the_same_bits_on_every_cpu") {
        // A summary's running sums: each lane the same values in the same order, whatever the
        // vector width; values not finite skipped; every start lane and every remainder.
        std::mt19937 gen(5);
        std::normal_distribution<float> normal(0.0f, 4.0f);
        std::size_t cases = 0;
        for (std::size_t n : {0, 1, 7, 15, 16, 17, 31, 32, 33, 100, 257, 1000}) {
            std::vector<float> v(n);
            for (float& x : v) x = normal(gen);
            for (std::size_t i = 0; i < n; i += 7) v[i] = i % 3 == 0 ? NAN : i % 3 == 1 ? INFINITY : -INFINITY;
            for (std::size_t i = 3; i < n; i += 11) v[i] = i % 2 ? 0.0f : -0.0f;
            for (std::size_t lane0 = 0; lane0 < 2 * finite_lanes; lane0 += 3, ++cases) {
                double plain[finite_lanes], avx2[finite_lanes], avx512[finite_lanes];
                for (std::size_t q = 0; q < finite_lanes; ++q) plain[q] = avx2[q] = avx512[q] = 0.25 * static_cast<double>(q);
                const FiniteRange a = finite_sums_scalar(v.data(), n, lane0, plain);
                double expected[finite_lanes];
                for (std::size_t q = 0; q < finite_lanes; ++q) expected[q] = 0.25 * static_cast<double>(q);
                std::size_t non_finite = 0;
                for (std::size_t i = 0; i < n; ++i)
                    if (std::isfinite(v[i])) expected[(lane0 + i) % finite_lanes] += v[i];
                    else ++non_finite;
                CHECK(std::memcmp(plain, expected, sizeof plain) == 0);
                CHECK(a.non_finite == non_finite);
                if (cpu_has(has_avx2_fma(), "AVX2")) {
                    const FiniteRange b = finite_sums_avx2(v.data(), n, lane0, avx2);
                    CHECK(std::memcmp(plain, avx2, sizeof plain) == 0);
                    CHECK((b.min == a.min && b.max == a.max && b.non_finite == a.non_finite));
                }
                if (cpu_has(has_avx512(), "AVX-512F")) {
                    const FiniteRange c = finite_sums_avx512(v.data(), n, lane0, avx512);
                    CHECK(std::memcmp(plain, avx512, sizeof plain) == 0);
                    CHECK((c.min == a.min && c.max == a.max && c.non_finite == a.non_finite));
                }
            }
        }
        CHECK(cases == 132);
    }

    TEST_CASE("kernels.attention_products_sum_in_order") {
        // Against the plain loop: each element a chain of fused multiply-adds over p (or j) in
        // order, so the same bits; rows and widths that leave every kind of remainder.
        if (!cpu_has(has_avx512(), "AVX-512F")) return;
        std::mt19937 gen(3);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        for (std::size_t d : {16, 48, 64, 80, 128}) {
            for (std::size_t rows = 1; rows <= 25; rows += rows < 24 ? 1 : 6) {  // every remainder of the 12-row tiles, and 30
                for (std::size_t n : {0, 1, 31, 32, 33, 64, 65, 200, 700}) {
                    CAPTURE(d);
                    CAPTURE(rows);
                    CAPTURE(n);
                    const std::size_t ld = 3 * d + 5, panels = (n + key_panel - 1) / key_panel, lds = panels * key_panel;
                    std::vector<float> q(rows * ld), k(n * ld), v(n * d);
                    for (float& x : q) x = normal(gen);
                    for (float& x : k) x = normal(gen);
                    for (float& x : v) x = normal(gen);
                    std::vector<float> packed, s(rows * lds, NAN);
                    pack_keys(k.data(), ld, n, d, packed);
                    scores_avx512(rows, d, q.data(), ld, packed.data(), n, s.data(), lds);
                    std::size_t wrong = 0;
                    for (std::size_t i = 0; i < rows; ++i)
                        for (std::size_t j = 0; j < lds; ++j) {
                            float want = NAN;  // past n: not written
                            if (j < n) {
                                want = 0.0f;
                                for (std::size_t p = 0; p < d; ++p) want = std::fma(q[i * ld + p], k[j * ld + p], want);
                            }
                            wrong += std::memcmp(&want, &s[i * lds + j], sizeof want) != 0;
                        }
                    CHECK(wrong == 0);
                    const std::size_t ldo = d + 3;
                    std::vector<float> out(rows * ldo, NAN);
                    weighted_values_avx512(rows, n, d, s.data(), lds, v.data(), d, out.data(), ldo);
                    wrong = 0;
                    for (std::size_t i = 0; i < rows; ++i)
                        for (std::size_t c = 0; c < d; ++c) {
                            float want = 0.0f;
                            for (std::size_t j = 0; j < n; ++j) want = std::fma(s[i * lds + j], v[j * d + c], want);
                            wrong += std::memcmp(&want, &out[i * ldo + c], sizeof want) != 0;
                        }
                    CHECK(wrong == 0);
                }
            }
        }
    }
#endif

    TEST_CASE("kernels.a_power_of_two_scale_divides_as_it_multiplies") {
        CHECK(is_power_of_two(8.0f));
        CHECK(is_power_of_two(1.0f));
        CHECK(is_power_of_two(0.5f));
        CHECK(is_power_of_two(-4.0f));
        CHECK_FALSE(is_power_of_two(std::sqrt(96.0f)));
        CHECK_FALSE(is_power_of_two(3.0f));
        CHECK_FALSE(is_power_of_two(0.0f));
        CHECK_FALSE(is_power_of_two(INFINITY));
        CHECK_FALSE(is_power_of_two(NAN));
        CHECK_FALSE(is_power_of_two(1e-40f));  // a denormal: its inverse overflows
        // x / 8 and x · 0.125 agree on every float of these ranges, denormal results included.
        std::mt19937 gen(5);
        std::uniform_int_distribution<std::uint32_t> bits;
        std::size_t differ = 0;
        for (int i = 0; i < 1000000; ++i) {
            const std::uint32_t b = bits(gen);
            float x;
            std::memcpy(&x, &b, sizeof x);
            if (std::isnan(x)) continue;
            for (float s : {8.0f, 0.25f, 0x1p100f}) {
                const float d = x / s, m = x * (1.0f / s);
                differ += std::memcmp(&d, &m, sizeof d) != 0;
            }
        }
        CHECK(differ == 0);
        // The softmax's raw scores scaled both ways: the same weights.
        std::vector<float> row = {3.0f, -1.5f, 0.25f, 7.0f, 1e-39f, -2.0f, 5.5f, 0.0f, 1.0f, 2.0f};
        std::vector<float> by_scale = row, divided = row;
        softmax_row(by_scale.data(), row.size(), 8.0f);
        for (float& x : divided) x = x / 8.0f;
        softmax_row(divided.data(), row.size(), 1.0f);
        CHECK(std::memcmp(by_scale.data(), divided.data(), 4 * row.size()) == 0);
    }
}
