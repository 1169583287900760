#include "test_util.hpp"

#include <numeric>

#include "attnwalk/ops/sampling.hpp"

using namespace attnwalk;

TEST_SUITE("sampling") {
    TEST_CASE("sampling.probabilities_are_a_softmax_at_the_temperature") {
        const float logits[] = {1.0f, 2.0f, 3.0f};
        const auto p = token_probabilities(logits, 3, 1.0);
        CHECK(std::accumulate(p.begin(), p.end(), 0.0) == doctest::Approx(1.0));
        CHECK(p[2] / p[1] == doctest::Approx(std::exp(1.0)));
        const auto cold = token_probabilities(logits, 3, 0.5);  // a lower temperature sharpens
        CHECK(cold[2] / cold[1] == doctest::Approx(std::exp(2.0)));
    }

    TEST_CASE("sampling.top_k_highest_first_ties_by_id") {
        const float logits[] = {0.1f, 0.3f, 0.2f, 0.3f, 0.1f};
        CHECK(top_k(logits, 5, 3) == std::vector<std::size_t>{1, 3, 2});
        CHECK(top_k(logits, 5, 10).size() == 5);
    }

    TEST_CASE("sampling.top_k_ranks_by_the_logits_where_the_probabilities_round_to_0") {
        // at temperature 0.02 every p below the first is exactly 0 in double: the ranking is
        // still the logits' (the model lesson listed 3 0 1 where 3 140 176 was meant)
        const float logits[] = {-1.5f, -4.2f, 3.0f, 39.9f, 17.1f, 15.9f};
        const auto p = token_probabilities(logits, 6, 0.02);
        CHECK(p[4] == 0.0);
        CHECK(p[0] == 0.0);
        CHECK(top_k(logits, 6, 4) == std::vector<std::size_t>{3, 4, 5, 2});
    }

    TEST_CASE("sampling.nucleus_is_the_smallest_prefix_reaching_p") {
        const std::vector<double> p = {0.5, 0.3, 0.2};
        const float logits[] = {2.0f, 1.5f, 1.0f};
        const auto order = top_k(logits, 3, 3);
        CHECK(nucleus(p, order, 0.5).count == 1);
        CHECK(nucleus(p, order, 0.75).count == 2);
        CHECK(nucleus(p, order, 0.75).mass == doctest::Approx(0.8));
        CHECK(nucleus(p, {0}, 0.9).count == 1);  // never reached within the order given
    }

    TEST_CASE("sampling.argmax_takes_the_first_of_equals") {
        const float logits[] = {0.0f, 2.0f, 2.0f, -1.0f};
        CHECK(argmax(logits, 4) == 1);
    }
}
