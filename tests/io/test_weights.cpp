// The projections: drawn like PyTorch, or read from a file.
#include "attnwalk/ops/attention.hpp"
#include "attnwalk/errors.hpp"
#include "attnwalk/io/weights.hpp"
#include "test_util.hpp"

using namespace attnwalk;

TEST_SUITE("weights") {
    TEST_CASE("weights.rand_init_is_the_textbook_w_query") {
        Generator g(123);
        const Weights w = draw_weights(g, {3, 2, 1, HeadLayout::fused, false}, Init::rand, false);
        // torch.manual_seed(123); torch.rand(3, 2) -> first value 0.2961
        CHECK(w->query.w(0, 0) == doctest::Approx(0.2961).epsilon(1e-3));
        const Cube x = {{{0.55f, 0.87f, 0.66f}}};
        const auto q = project(x, w->query);
        CHECK(q(0, 0, 0) == doctest::Approx(0.4306).epsilon(1e-3));
        CHECK(q(0, 0, 1) == doctest::Approx(1.4551).epsilon(1e-3));
        CHECK(w->origin.front().first == "seed");
    }

    TEST_CASE("weights.bias_is_added") {
        Linear l;
        l.w = Mat{{1.0f, 0.0f}, {0.0f, 1.0f}};
        l.b = Vec{10.0f, 20.0f};
        const Cube x = {{{1.0f, 2.0f}}};
        const auto y = project(x, l);
        CHECK(y(0, 0, 0) == 11.0f);
        CHECK(y(0, 0, 1) == 22.0f);
    }

    TEST_CASE("weights.stacked_heads_are_side_by_side") {
        Generator a(5), b(5);
        const Weights stacked = draw_weights(a, {3, 2, 2, HeadLayout::stacked, false}, Init::linear, true);
        REQUIRE(stacked->width() == 4);
        const Weights first = draw_weights(b, {3, 2, 1, HeadLayout::fused, false}, Init::linear, true);
        const Linear head0 = stacked->head_columns(stacked->query, 0);
        CHECK(head0.w == first->query.w);
        CHECK(head0.b == first->query.b);
        CHECK_THROWS_AS(draw_weights(a, {3, 2, 1, HeadLayout::fused, false}, Init::rand, true), UsageError);
    }

    TEST_CASE("weights.wrong_shapes_name_the_matrix") {
        const std::string text = R"({"W_query": [[1, 2], [3, 4], [5, 6]], "W_key": [[1, 2], [3, 4]], "W_value": [[1, 2], [3, 4], [5, 6]]})";
        try {
            parse_weights(text, "w.json", {3, 2, 1, HeadLayout::fused, false});
            FAIL("expected an error");
        } catch (const InputError& e) {
            CHECK(std::string(e.what()) == "w.json: at $.W_key: W_key has the wrong shape: expected 3×2 (d_in×d_out), got 2×2");
        }
        CHECK_THROWS_WITH_AS(parse_weights(R"({"W_query": [[1], [2], [3]]})", "w.json", {3, 2, 1, HeadLayout::fused, false}),
                             doctest::Contains("missing \"W_key\""), InputError);
    }
}
