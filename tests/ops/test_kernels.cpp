// The vector kernels behind the library's public functions (lib/src/ops/kernels.hpp):
// where two instruction sets compute the same step, the same bits.
#include <cmath>
#include <cstring>
#include <random>
#include <vector>

#include "ops/kernels.hpp"
#include "test_util.hpp"

using namespace attnwalk::fast;

TEST_SUITE("kernels") {
#if defined(ATTNWALK_HAVE_AVX2)
    TEST_CASE("kernels.exp_row_avx512_gives_the_avx2_bits") {
        if (!has_avx512()) {
            MESSAGE("this CPU has no AVX-512F: skipped");
            return;
        }
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
#endif
}
