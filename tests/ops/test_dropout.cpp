#include "attnwalk/ops/dropout.hpp"
#include "test_util.hpp"

using attnwalk::Mat;

TEST_SUITE("dropout") {
    TEST_CASE("dropout.textbook_ones_mask") {
        attnwalk::Generator g(123);
        const Mat ones = xt::ones<float>({std::size_t{6}, std::size_t{6}});
        const auto r = attnwalk::dropout(ones, 0.5, g);
        const std::vector<float> row0{2, 2, 0, 2, 2, 0}, row1{0, 0, 0, 2, 0, 2};
        for (std::size_t j = 0; j < 6; ++j) {
            CHECK(r.output(0, j) == row0[j]);
            CHECK(r.output(1, j) == row1[j]);
        }
        CHECK(r.scale == 2.0f);
    }

    TEST_CASE("dropout.zero_rate_draws_nothing") {
        attnwalk::Generator g(7), fresh(7);
        const Mat x = {{0.5f, 0.25f}};
        const auto r = attnwalk::dropout(x, 0.0, g);
        CHECK(r.output == x);
        CHECK(g.random() == fresh.random());
    }

    TEST_CASE("dropout.kept_values_are_scaled") {
        attnwalk::Generator g(3);
        const Mat x = xt::ones<float>({std::size_t{10}, std::size_t{10}}) * 0.3f;
        const auto r = attnwalk::dropout(x, 0.2, g);
        for (std::size_t i = 0; i < x.size(); ++i)
            CHECK(r.output.data()[i] == (r.keep.data()[i] == 1.0f ? 0.3f * (1.0f / 0.8f) : 0.0f));
    }
}
