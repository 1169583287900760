#include "attnwalk/multi_head.hpp"
#include "test_util.hpp"

using attnwalk::Cube;

TEST_SUITE("multi_head") {
    TEST_CASE("multi_head.split_then_merge_is_identity") {
        Cube x({2, 3, 6});
        for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(i);
        const auto split = attnwalk::split_heads(x, 3);
        REQUIRE(split.shape(1) == 3);
        REQUIRE(split.shape(3) == 2);
        CHECK(split(1, 2, 0, 1) == x(1, 0, 5));  // head 2 holds columns 4..5
        CHECK(attnwalk::merge_heads(split) == x);
    }
}
