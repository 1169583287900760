#include <xtensor/xview.hpp>

#include "attnwalk/context.hpp"
#include "attnwalk/scores.hpp"
#include "test_util.hpp"

using attnwalk::Cube;
using attnwalk::Mat;

namespace {
const Cube X = {{{0.43f, 0.15f, 0.89f}, {0.55f, 0.87f, 0.66f}, {0.57f, 0.85f, 0.64f},
                 {0.22f, 0.58f, 0.33f}, {0.77f, 0.25f, 0.10f}, {0.05f, 0.80f, 0.55f}}};
}

TEST_SUITE("scores") {
    TEST_CASE("scores.textbook_matrix") {
        const Cube s = attnwalk::attention_scores(X, X);
        REQUIRE(s.shape(1) == 6);
        REQUIRE(s.shape(2) == 6);
        CHECK(s(0, 0, 0) == doctest::Approx(0.9995f).epsilon(1e-4));
        CHECK(s(0, 1, 2) == doctest::Approx(1.4754f).epsilon(1e-4));
        CHECK(s(0, 5, 4) == doctest::Approx(0.2935f).epsilon(1e-4));
    }

    TEST_CASE("scores.one_query_equals_its_row") {
        const Mat q = xt::view(X, xt::all(), 1, xt::all());
        const Mat row = attnwalk::query_scores(q, X);
        const Cube full = attnwalk::attention_scores(X, X);
        for (std::size_t j = 0; j < 6; ++j) CHECK(row(0, j) == doctest::Approx(full(0, 1, j)));
    }

    TEST_CASE("scores.scaling_divides") {
        const Mat s = {{2.0f, 4.0f}};
        const Mat scaled = attnwalk::scale_scores(s, 2.0f);
        CHECK(scaled(0, 1) == 2.0f);
    }

    TEST_CASE("context.one_query_matches_matrix_form") {
        const Cube w = xt::ones<float>({std::size_t{1}, std::size_t{6}, std::size_t{6}}) / 6.0f;
        const Cube z = attnwalk::context_vectors(w, X);
        const Mat wq = xt::view(w, xt::all(), 2, xt::all());
        const Mat zq = attnwalk::query_context(wq, X);
        for (std::size_t c = 0; c < 3; ++c) CHECK(zq(0, c) == doctest::Approx(z(0, 2, c)));
    }
}
