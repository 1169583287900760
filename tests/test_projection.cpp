#include <nlohmann/json.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/projection.hpp"
#include "test_util.hpp"

TEST_SUITE("projection") {
    TEST_CASE("projection.rand_init_is_the_textbook_w_query") {
        attnwalk::Generator g(123);
        const auto qkv = attnwalk::draw_qkv(g, 3, 2, attnwalk::Init::rand, false);
        // torch.manual_seed(123); torch.rand(3, 2) -> first value 0.2961
        CHECK(qkv.query.w(0, 0) == doctest::Approx(0.2961).epsilon(1e-3));
        const attnwalk::Cube x = {{{0.55f, 0.87f, 0.66f}}};
        const auto q = attnwalk::project(x, qkv.query);
        CHECK(q(0, 0, 0) == doctest::Approx(0.4306).epsilon(1e-3));
        CHECK(q(0, 0, 1) == doctest::Approx(1.4551).epsilon(1e-3));
    }

    TEST_CASE("projection.bias_is_added") {
        attnwalk::Linear l{attnwalk::Mat{{1.0f, 0.0f}, {0.0f, 1.0f}}, attnwalk::Vec{10.0f, 20.0f}};
        const attnwalk::Cube x = {{{1.0f, 2.0f}}};
        const auto y = attnwalk::project(x, l);
        CHECK(y(0, 0, 0) == 11.0f);
        CHECK(y(0, 0, 1) == 22.0f);
    }

    TEST_CASE("projection.wrong_shapes_name_the_matrix") {
        const auto doc = nlohmann::json::parse(R"({"W_query": [[1, 2], [3, 4], [5, 6]], "W_key": [[1, 2], [3, 4]], "W_value": [[1, 2], [3, 4], [5, 6]]})");
        try {
            attnwalk::read_qkv(doc, "w.json", "$", 3);
            FAIL("expected an error");
        } catch (const attnwalk::InputError& e) {
            CHECK(std::string(e.what()) == "w.json: at $.W_key: W_key has the wrong shape: expected 3×2 (d_in×d_out), got 2×2");
        }
        const auto missing = nlohmann::json::parse(R"({"W_query": [[1], [2], [3]]})");
        CHECK_THROWS_WITH_AS(attnwalk::read_qkv(missing, "w.json", "$", 3), doctest::Contains("missing \"W_key\""), attnwalk::InputError);
    }
}
