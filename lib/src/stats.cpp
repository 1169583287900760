// Stats (stats.hpp): a tensor's statistics, added value by value or in runs.
#include "attnwalk/stats.hpp"

#include <algorithm>
#include <cmath>

#include "stats_sums.hpp"

namespace attnwalk {

void Stats::add(double value) {
    const std::size_t lane = (count + non_finite) % lanes;
    if (!std::isfinite(value)) {
        ++non_finite;
        return;
    }
    min = count ? std::min(min, value) : value;
    max = count ? std::max(max, value) : value;
    sums[lane] += value;
    ++count;
    sum_lanes();
}

void Stats::add_all(const float* values, std::size_t n) {
    const fast::FiniteRange r = fast::finite_sums(values, n, (count + non_finite) % lanes, sums);
    const std::size_t fresh = n - r.non_finite;
    non_finite += r.non_finite;
    if (fresh) {
        // As add() one by one: where the least (or greatest) value is zero, the first zero's sign.
        const auto first_zero = [&] {
            for (std::size_t i = 0;; ++i)
                if (values[i] == 0.0f) return values[i];
        };
        const float lo = r.min == 0.0f ? first_zero() : r.min, hi = r.max == 0.0f ? first_zero() : r.max;
        min = count ? std::min(min, static_cast<double>(lo)) : lo;
        max = count ? std::max(max, static_cast<double>(hi)) : hi;
        count += fresh;
    }
    sum_lanes();
}

void Stats::sum_lanes() {
    double s[lanes];
    std::copy(sums, sums + lanes, s);
    for (std::size_t half = lanes / 2; half > 0; half /= 2)
        for (std::size_t q = 0; q < half; ++q) s[q] += s[q + half];
    checksum = s[0];
    if (count) mean = checksum / static_cast<double>(count);
}

void Stats::add_row_sum(double sum) {
    row_sum_min = has_row_sums ? std::min(row_sum_min, sum) : sum;
    row_sum_max = has_row_sums ? std::max(row_sum_max, sum) : sum;
    has_row_sums = true;
}

}  // namespace attnwalk
