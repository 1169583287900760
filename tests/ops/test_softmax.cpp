#include "attnwalk/ops/softmax.hpp"
#include "test_util.hpp"

using attnwalk::Vec;
using attnwalk::Mat;

TEST_SUITE("softmax") {
    TEST_CASE("softmax.textbook_query_journey") {
        const Vec scores = {0.9544f, 1.4950f, 1.4754f, 0.8434f, 0.7070f, 1.0865f};
        const Vec w = attnwalk::softmax(scores);
        const std::vector<float> expected{0.1385f, 0.2379f, 0.2333f, 0.1240f, 0.1082f, 0.1581f};
        CHECK_CLOSE_ALL(w, expected, 1e-4);
        const Vec by_sum = attnwalk::normalise_by_sum(scores);
        const std::vector<float> expected_sum{0.1455f, 0.2278f, 0.2249f, 0.1285f, 0.1077f, 0.1656f};
        CHECK_CLOSE_ALL(by_sum, expected_sum, 1e-4);
    }

    TEST_CASE("softmax.rows_sum_to_one") {
        const Mat s = {{1.0f, 2.0f, 3.0f}, {-5.0f, 0.0f, 5.0f}, {100.0f, 100.0f, 100.0f}};
        const Mat w = attnwalk::softmax(s);
        const auto sums = attnwalk::row_sums(w);
        for (float v : sums) CHECK(v == doctest::Approx(1.0f).epsilon(1e-6));
    }

    TEST_CASE("softmax.naive_overflows_stable_does_not") {
        const Vec s = {300.0f, 299.0f, 10.0f};
        const Vec naive = attnwalk::softmax_naive(s);
        CHECK(std::isnan(naive(0)));
        const Vec stable = attnwalk::softmax(s);
        CHECK(stable(0) == doctest::Approx(0.7310586f));
        CHECK(stable(2) == doctest::Approx(0.0f));
    }

    TEST_CASE("softmax.masked_entries_are_exactly_zero") {
        const float inf = std::numeric_limits<float>::infinity();
        const Vec s = {0.5f, -inf, 0.25f};
        const Vec w = attnwalk::softmax(s);
        CHECK(w(1) == 0.0f);
        CHECK(w(0) + w(2) == doctest::Approx(1.0f));
    }

    TEST_CASE("softmax.fully_masked_row_is_nan_like_pytorch") {
        const float inf = std::numeric_limits<float>::infinity();
        const Vec s = {-inf, -inf};
        const Vec w = attnwalk::softmax(s);
        CHECK(std::isnan(w(0)));
    }

    TEST_CASE("softmax.shift_makes_row_max_zero") {
        const Mat s = {{1.0f, 3.0f}, {-2.0f, -7.0f}};
        const Mat shifted = attnwalk::shift_by_row_max(s);
        CHECK(shifted(0, 1) == 0.0f);
        CHECK(shifted(1, 0) == 0.0f);
        CHECK(shifted(1, 1) == -5.0f);
    }
}
