// The trace's own arithmetic: a Summary of many values at once is the Summary of the same
// values added one by one (min, max, the double checksum in order, the non-finite count).
#include <cmath>
#include <vector>

#include <doctest/doctest.h>

#include "attnwalk/trace.hpp"

TEST_SUITE("trace") {
    TEST_CASE("trace.summary_of_many_is_the_summary_of_each") {
        const std::vector<float> values = {0.5f, -0.0f, 0.0f, INFINITY, 3.25f, NAN, -7.0f, 1e-30f, -INFINITY, 2.0f, 0.1f};
        for (std::size_t split = 0; split <= values.size(); ++split) {  // also in two calls, after a seed value
            CAPTURE(split);
            attnwalk::Summary one, many;
            one.add(0.3);
            many.add(0.3);
            for (float v : values) one.add(v);
            many.add_all(values.data(), split);
            many.add_all(values.data() + split, values.size() - split);
            CHECK(many.min == one.min);
            CHECK(many.max == one.max);
            CHECK(many.checksum == one.checksum);
            CHECK(many.mean == one.mean);
            CHECK(many.count == one.count);
            CHECK(many.non_finite == one.non_finite);
        }
        attnwalk::Summary empty;
        empty.add_all(nullptr, 0);
        CHECK(empty.count == 0);
    }
}
