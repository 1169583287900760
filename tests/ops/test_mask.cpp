#include "attnwalk/mask_rule.hpp"
#include "attnwalk/ops/mask.hpp"
#include "attnwalk/ops/softmax.hpp"
#include "test_util.hpp"

using attnwalk::Mat;

TEST_SUITE("mask") {
    TEST_CASE("mask.is_lower_triangular") {
        const Mat m = attnwalk::causal_mask(4);
        for (std::size_t i = 0; i < 4; ++i)
            for (std::size_t j = 0; j < 4; ++j) CHECK(m(i, j) == (j <= i ? 1.0f : 0.0f));
    }

    TEST_CASE("mask.both_ways_agree") {
        const Mat s = {{0.3f, 0.1f, 0.9f}, {0.2f, 0.5f, 0.4f}, {0.7f, 0.6f, 0.8f}};
        const Mat a = attnwalk::normalise_by_sum(attnwalk::mask_future_zero(attnwalk::softmax(s)));
        const Mat b = attnwalk::softmax(attnwalk::mask_future_neg_inf(s));
        CHECK_CLOSE_ALL(a, b, 1e-6);
        CHECK(b(0, 0) == 1.0f);
        CHECK(b(0, 1) == 0.0f);
    }

    TEST_CASE("mask.applies_to_every_leading_slice") {
        attnwalk::Cube s = xt::zeros<float>({std::size_t{2}, std::size_t{2}, std::size_t{2}});
        const auto m = attnwalk::mask_future_neg_inf(s);
        CHECK(std::isinf(m(0, 0, 1)));
        CHECK(std::isinf(m(1, 0, 1)));
        CHECK(m(1, 1, 0) == 0.0f);
    }

    TEST_CASE("mask.a_window_wider_than_any_sequence_masks_nothing") {  // no sum wraps at 2^64
        for (const std::size_t window : {std::size_t(-1), std::size_t(-2), std::size_t(1) << 63, std::size_t(6), std::size_t(7)})
            for (std::size_t i = 0; i < 6; ++i) {
                for (std::size_t j = 0; j <= i; ++j) CHECK_FALSE(attnwalk::masked_out(i, j, true, window));
                const attnwalk::KeyRange keys = attnwalk::visible_keys(i, 6, true, window);
                CHECK(keys.first == 0);
                CHECK(keys.end == i + 1);
            }
        CHECK(attnwalk::masked_out(5, 0, true, 2));  // a real window still masks
        CHECK_FALSE(attnwalk::masked_out(5, 4, true, 2));
        CHECK(attnwalk::masked_out(std::size_t(-1), 0, false, std::size_t(-1)));  // the last position, the widest window
    }
}
