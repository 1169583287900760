// The eigenvalues of general real matrices (ops/eigen.hpp) on matrices whose eigenvalues are
// known: triangular, a rotation's complex pair, a companion matrix, a similarity transform.
#include <cmath>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/eigen.hpp"
#include "test_util.hpp"

using attnwalk::eigenvalues;
using C = std::complex<double>;

namespace {

void check_near(const std::vector<C>& got, const std::vector<C>& want, double tol = 1e-10) {
    REQUIRE(got.size() == want.size());
    for (std::size_t i = 0; i < got.size(); ++i) {
        CAPTURE(i);
        CHECK(std::abs(got[i] - want[i]) <= tol * std::max(1.0, std::abs(want[i])));
    }
}

}  // namespace

TEST_SUITE("eigen") {
    TEST_CASE("eigen.triangular_diagonal") {  // an upper triangle: its diagonal, sorted largest first
        check_near(eigenvalues({2, 5, -1, 7,
                                0, -3, 4, 2,
                                0, 0, 0.5, 9,
                                0, 0, 0, 4}, 4),
                   {4.0, 2.0, 0.5, -3.0});
        check_near(eigenvalues({1, 0, 0, 8, 6, 0, -2, 3, -7}, 3), {6.0, 1.0, -7.0});  // a lower one
    }
    TEST_CASE("eigen.rotation_complex_pair") {  // a rotation by θ, scaled by r: r·e^{±iθ}
        const double th = 0.7, r = 1.5;
        check_near(eigenvalues({r * std::cos(th), -r * std::sin(th), r * std::sin(th), r * std::cos(th)}, 2),
                   {std::polar(r, th), std::polar(r, -th)});
        // inside a larger block-diagonal matrix, with a real eigenvalue beside it
        check_near(eigenvalues({0, -2, 0, 2, 0, 0, 0, 0, -1}, 3), {C(0, 2), C(0, -2), -1.0});
    }
    TEST_CASE("eigen.companion") {  // x⁴ − 10x³ + 35x² − 50x + 24 = (x−1)(x−2)(x−3)(x−4)
        check_near(eigenvalues({10, -35, 50, -24,
                                1, 0, 0, 0,
                                0, 1, 0, 0,
                                0, 0, 1, 0}, 4),
                   {4.0, 3.0, 2.0, 1.0}, 1e-9);
        // x³ − 1: 1 and e^{±2πi/3}
        check_near(eigenvalues({0, 0, 1, 1, 0, 0, 0, 1, 0}, 3), {1.0, std::polar(1.0, 2.0943951023931957), std::polar(1.0, -2.0943951023931957)});
    }
    TEST_CASE("eigen.similar_matrix") {  // S·diag(…)·S⁻¹ with S = I + N (N strictly upper): S⁻¹ = I − N + N² − …
        // a 6×6 with eigenvalues 3, −2, 1 ± 2i (a block), 0.25, 0 — made as B = S·D·S⁻¹
        const std::size_t n = 6;
        std::vector<double> D(n * n, 0.0), S(n * n, 0.0), Si(n * n, 0.0);
        D[0] = 3; D[1 * n + 1] = -2; D[2 * n + 2] = 1; D[2 * n + 3] = -2; D[3 * n + 2] = 2; D[3 * n + 3] = 1; D[4 * n + 4] = 0.25; D[5 * n + 5] = 0;
        for (std::size_t i = 0; i < n; ++i) {
            S[i * n + i] = 1.0;
            for (std::size_t j = i + 1; j < n; ++j) S[i * n + j] = 0.1 * static_cast<double>(i + 2 * j) - 0.6;
        }
        // S⁻¹ by back substitution (upper unit triangle)
        for (std::size_t c = 0; c < n; ++c)
            for (std::size_t i = n; i-- > 0;) {
                double v = i == c ? 1.0 : 0.0;
                for (std::size_t j = i + 1; j < n; ++j) v -= S[i * n + j] * Si[j * n + c];
                Si[i * n + c] = v;
            }
        std::vector<double> SD(n * n, 0.0), B(n * n, 0.0);
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j)
                for (std::size_t k = 0; k < n; ++k) SD[i * n + j] += S[i * n + k] * D[k * n + j];
        for (std::size_t i = 0; i < n; ++i)
            for (std::size_t j = 0; j < n; ++j)
                for (std::size_t k = 0; k < n; ++k) B[i * n + j] += SD[i * n + k] * Si[k * n + j];
        check_near(eigenvalues(B, n), {3.0, C(1, 2), C(1, -2), 0.25, 0.0, -2.0}, 1e-9);
    }
    TEST_CASE("eigen.edges") {
        CHECK(eigenvalues({}, 0).empty());
        check_near(eigenvalues({-4.5}, 1), {-4.5});
        check_near(eigenvalues(std::vector<double>(9, 0.0), 3), {0.0, 0.0, 0.0});
        CHECK_THROWS_AS(eigenvalues({1, NAN, 0, 1}, 2), attnwalk::RuntimeError);
    }
}
