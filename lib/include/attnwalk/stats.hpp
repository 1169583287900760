// The statistics of a tensor too big to keep: what a summary shows of a step (trace.hpp)
// and what the blocked attention computes where the numbers lie (ops/blocked_attention.hpp).
// Numbers only; light.
#pragma once

#include <cstddef>

namespace attnwalk {

struct Stats {
    double min = 0.0, max = 0.0;   // over the finite values
    double mean = 0.0;             // over the finite values
    double checksum = 0.0;         // the sum of the finite values, in double (below)
    std::size_t count = 0;         // finite values summarised
    std::size_t non_finite = 0;    // inf, −∞ (masks) and NaN, not summarised
    bool has_row_sums = false;     // a weights step: the range of its row sums
    double row_sum_min = 0.0, row_sum_max = 0.0;
    bool causal_triangle = false;  // only the entries j ≤ i were summarised (the others were never computed)

    // add and add_all sum in 16 running sums: the i-th value added (counting the non-finite
    // ones too) goes into sums[i mod 16] when finite, and the checksum is the 16 added
    // pairwise, sums[q] + sums[q + 8], then + [q + 4], + [q + 2], + [q + 1]. Every sum
    // is in order, so the result is the same on every CPU and however the values are
    // handed, and add_all takes them a vector at a time (a single sum in order took four
    // cycles a value). A Stats made otherwise (the blocked path's) sets its checksum alone.
    static constexpr std::size_t lanes = 16;
    double sums[lanes] = {};

    void add(double value);        // one more value
    void add_all(const float* values, std::size_t n);  // n more, in order (the same as add, one by one)
    void add_row_sum(double sum);  // one more row sum

private:
    void sum_lanes();              // checksum and mean from the running sums
};

}  // namespace attnwalk
