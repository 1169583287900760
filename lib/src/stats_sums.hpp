// The one kernel Stats needs (Stats::add_all, stats.hpp), declared here on stats' side so
// that the includes run one way: ops/ includes stats, stats includes nothing of ops/.
// ops/ defines it beside its other vector kernels, portable and for AVX2 and AVX-512
// (ops/kernels.hpp: finite_sums_scalar, finite_sums_avx2, finite_sums_avx512).
#pragma once

#include <cstddef>

#include "attnwalk/stats.hpp"

namespace attnwalk::fast {

// A summary's pass over n floats: finite value i is added, as a double, to running sum
// (lane0 + i) mod finite_lanes of `sums`, in order; returns the least and the greatest
// finite value (+inf and −inf when none; where they are zero, either sign: the caller takes
// the first zero's) and how many values were not finite. Every version gives the same
// bits (a test checks), so a checksum does not depend on the CPU.
inline constexpr std::size_t finite_lanes = Stats::lanes;
struct FiniteRange {
    float min, max;
    std::size_t non_finite;
};
FiniteRange finite_sums(const float* v, std::size_t n, std::size_t lane0, double* sums);  // the best for this CPU

}  // namespace attnwalk::fast
