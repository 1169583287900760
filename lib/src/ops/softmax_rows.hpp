// The blocked path's softmax of one row: scale, max, exp, sum, × 1/sum, with the
// statistics a summary needs gathered on the way. One portable implementation
// (softmax_scalar.cpp) and, on x86-64, an AVX2 one (softmax_avx2.cpp) chosen at run time
// when the CPU has it. Both compute the same formulas with the same exp (Cephes' expf:
// range reduction by ln 2, a degree-6 polynomial, within 2 ulp of libm).
#pragma once

#include <cstddef>
#include <utility>

namespace attnwalk::fast {

struct RowStats {
    float min, max, sum;
};

// One row of raw scores -> weights, in place; returns the raw scores' and the weights'
// statistics (the weights' sum is the row sum).
std::pair<RowStats, RowStats> softmax_row_scalar(float* row, std::size_t n, float scale);
#if defined(ATTNWALK_HAVE_AVX2)
std::pair<RowStats, RowStats> softmax_row_avx2(float* row, std::size_t n, float scale);
#endif

// The best of the two for this CPU.
std::pair<RowStats, RowStats> softmax_row(float* row, std::size_t n, float scale);

// Parts the AVX2 version finishes its tails with.
RowStats scale_scalar(float* row, std::size_t n, float scale, float& max, std::size_t from);
float exp_scalar_row(float* row, std::size_t n, float max, std::size_t from);
RowStats normalise_scalar(float* row, std::size_t n, float inv, std::size_t from);
inline RowStats merge(RowStats a, RowStats b) {
    return {a.min < b.min ? a.min : b.min, a.max > b.max ? a.max : b.max, a.sum + b.sum};
}

}  // namespace attnwalk::fast
