// The trace's own arithmetic: a Summary of many values at once is the Summary of the same
// values added one by one (min, max, the double checksum of its running sums, the non-finite count).
#include <algorithm>
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

    TEST_CASE("trace.a_long_summary_in_any_runs_is_the_summary_of_each") {
        // Long enough for the vector kernels: runs that start at every lane of the running
        // sums; non-finite values, and zeros of both signs where the least value is zero.
        std::vector<float> values(1000);
        for (std::size_t i = 0; i < values.size(); ++i) values[i] = std::fabs(std::sin(static_cast<float>(i) + 0.5f)) * 3.0f;
        for (std::size_t i = 5; i < values.size(); i += 9) values[i] = i % 2 ? NAN : INFINITY;
        for (std::size_t i = 40; i < values.size(); i += 97) values[i] = i % 2 ? 0.0f : -0.0f;
        for (float first_zero : {0.0f, -0.0f}) {
            values[21] = first_zero;
            attnwalk::Summary one;
            for (float v : values) one.add(v);
            CHECK(std::signbit(one.min) == std::signbit(first_zero));
            for (std::size_t run : {1, 3, 16, 17, 250, 1000}) {
                CAPTURE(run);
                attnwalk::Summary many;
                for (std::size_t at = 0; at < values.size(); at += run) many.add_all(values.data() + at, std::min(run, values.size() - at));
                CHECK(std::signbit(many.min) == std::signbit(one.min));
                CHECK(many.min == one.min);
                CHECK(many.max == one.max);
                CHECK(many.checksum == one.checksum);
                CHECK(many.mean == one.mean);
                CHECK(many.count == one.count);
                CHECK(many.non_finite == one.non_finite);
            }
            double total = 0.0;
            for (float v : values)
                if (std::isfinite(v)) total += v;
            CHECK(one.checksum == doctest::Approx(total).epsilon(1e-12));
        }
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
