// The trace's own arithmetic: a Summary of many values at once is the Summary of the same
// values added one by one (min, max, the double checksum in order, the non-finite count).
#include <cmath>
#include <string>
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

    TEST_CASE("trace.a_summary_shared_out_is_the_summary") {
        // Steps of different sizes, summarised by 1, 2 and 3 workers in turn, in any order.
        attnwalk::Trace base;
        for (std::size_t n : {5, 1000, 0, 64, 3000, 7, 1}) {
            attnwalk::Step s;
            s.id = "s" + std::to_string(n);
            for (std::size_t i = 0; i < n; ++i) s.tensor.data.push_back(std::sin(static_cast<float>(i * n + 1)) * 3.0f);
            s.tensor.shape = {n};
            if (n == 64) s.row_sum.data = {1.0f, 0.5f};
            base.steps.push_back(s);
        }
        attnwalk::Trace one = base;
        attnwalk::summarise(one);
        for (std::size_t workers : {1, 2, 3}) {
            CAPTURE(workers);
            attnwalk::Trace shared = base;
            const auto owner = attnwalk::share_steps(shared, workers);
            for (std::size_t w = workers; w-- > 0;) attnwalk::summarise(shared, owner, w, workers);
            REQUIRE(shared.steps.size() == one.steps.size());
            for (std::size_t i = 0; i < one.steps.size(); ++i) {
                const attnwalk::Step &a = one.steps[i], &b = shared.steps[i];
                CHECK(b.summarised);
                CHECK(a.summary.checksum == b.summary.checksum);
                CHECK(a.summary.min == b.summary.min);
                CHECK(a.summary.max == b.summary.max);
                CHECK(a.summary.count == b.summary.count);
                CHECK(a.summary.row_sum_max == b.summary.row_sum_max);
                CHECK(a.tensor.data == b.tensor.data);  // the last step keeps its numbers
            }
        }
    }
}
