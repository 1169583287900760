// Built on x86-64 only, without contraction (lib/CMakeLists.txt): AVX-512F has fused
// multiply-adds, and a contracted a·b + c would round once where the AVX2 and scalar
// kernels round twice. Called only when the CPU has AVX-512F.
#include <immintrin.h>

// GCC 12 warns inside its own avx512fintrin.h (the "undefined" source operand of the
// unmasked intrinsics); nothing here reads an uninitialised value.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <cmath>

#include "kernels.hpp"

namespace attnwalk::fast {

namespace {

// exp8 of kernels_avx2.cpp on 16 lanes, step for step (the same roundings in the same order,
// the same operand order for min and max, so NaN and ±inf lanes end the same).
inline __attribute__((target("avx512f"), always_inline)) __m512 exp16(__m512 v) {
    using namespace cephes;
    const __m512 lowest = _mm512_set1_ps(exp_lowest), highest = _mm512_set1_ps(exp_highest), log2 = _mm512_set1_ps(log2e),
                 half = _mm512_set1_ps(0.5f), c1 = _mm512_set1_ps(ln2_hi), c2 = _mm512_set1_ps(ln2_lo), one = _mm512_set1_ps(1.0f);
    __m512 p[6];
    for (int i = 0; i < 6; ++i) p[i] = _mm512_set1_ps(exp_poly[i]);
    const __mmask16 overflow = _mm512_cmp_ps_mask(v, highest, _CMP_GT_OQ);
    v = _mm512_min_ps(_mm512_max_ps(v, lowest), highest);
    const __m512 fx = _mm512_floor_ps(_mm512_add_ps(_mm512_mul_ps(v, log2), half));
    v = _mm512_sub_ps(_mm512_sub_ps(v, _mm512_mul_ps(fx, c1)), _mm512_mul_ps(fx, c2));
    __m512 y = p[0];
    for (int i = 1; i < 6; ++i) y = _mm512_add_ps(_mm512_mul_ps(y, v), p[i]);
    y = _mm512_add_ps(_mm512_add_ps(_mm512_mul_ps(_mm512_mul_ps(y, v), v), v), one);
    const __m512i bits = _mm512_slli_epi32(_mm512_add_epi32(_mm512_cvttps_epi32(fx), _mm512_set1_epi32(127)), 23);
    y = _mm512_mul_ps(y, _mm512_castsi512_ps(bits));
    return _mm512_mask_blend_ps(overflow, y, _mm512_set1_ps(INFINITY));
}

}  // namespace

__attribute__((target("avx512f"))) float exp_row_avx512(float* row, std::size_t n, float max) {
    const std::size_t m = n / 8 * 8;  // as exp_row_avx2: 8-lane groups, then the scalar tail
    __m256 sum = _mm256_setzero_ps();  // the 8 partial sums of exp_row_avx2, each added in the same order
    const __m512 mx = _mm512_set1_ps(max);
    std::size_t j = 0;
    for (; j + 16 <= m; j += 16) {
        const __m512 y = exp16(_mm512_sub_ps(_mm512_loadu_ps(row + j), mx));
        _mm512_storeu_ps(row + j, y);
        sum = _mm256_add_ps(sum, _mm512_castps512_ps256(y));
        sum = _mm256_add_ps(sum, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(y), 1)));
    }
    if (j < m) {  // one group of 8 left
        const __mmask16 low = 0x00FF;
        const __m512 y = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(low, row + j), mx));
        _mm512_mask_storeu_ps(row + j, low, y);
        sum = _mm256_add_ps(sum, _mm512_castps512_ps256(y));
    }
    float l[8];
    _mm256_storeu_ps(l, sum);
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])) + exp_scalar_row(row, n, max, m);
}

}  // namespace attnwalk::fast
