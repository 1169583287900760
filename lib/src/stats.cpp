// Stats (stats.hpp): a tensor's statistics, added value by value or in runs.
#include "attnwalk/stats.hpp"

#include <algorithm>
#include <cmath>

namespace attnwalk {

void Stats::add(double value) {
    if (!std::isfinite(value)) {
        ++non_finite;
        return;
    }
    min = count ? std::min(min, value) : value;
    max = count ? std::max(max, value) : value;
    checksum += value;
    ++count;
    mean = checksum / static_cast<double>(count);
}

void Stats::add_all(const float* values, std::size_t n) {
    // as add() one by one: min and max of the new values in float (exact), the sum in double in order
    float lo = 0.0f, hi = 0.0f;
    double sum = checksum;
    std::size_t fresh = 0;
    for (std::size_t i = 0; i < n; ++i) {
        const float v = values[i];
        if (!(v - v == 0.0f)) {  // inf or NaN
            ++non_finite;
            continue;
        }
        if (fresh++ == 0) lo = hi = v;
        lo = v < lo ? v : lo;
        hi = v > hi ? v : hi;
        sum += static_cast<double>(v);
    }
    if (fresh) {
        min = count ? std::min(min, static_cast<double>(lo)) : lo;
        max = count ? std::max(max, static_cast<double>(hi)) : hi;
        count += fresh;
    }
    checksum = sum;
    if (count) mean = checksum / static_cast<double>(count);
}

void Stats::add_row_sum(double sum) {
    row_sum_min = has_row_sums ? std::min(row_sum_min, sum) : sum;
    row_sum_max = has_row_sums ? std::max(row_sum_max, sum) : sum;
    has_row_sums = true;
}

}  // namespace attnwalk
