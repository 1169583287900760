#include "test_util.hpp"

#include <vector>

#include "attnwalk/ops/activations.hpp"
#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/norms.hpp"

using namespace attnwalk;

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
        CHECK(*tail.out_row(0) == 2.0f);
        const float x[] = {1.0f, 1.0f};
        const Mat y = project_row(l, x);  // W·x + b
        CHECK(y == Mat{{5.0f, 17.0f, 29.0f}});
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
}
