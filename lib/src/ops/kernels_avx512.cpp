// Built on x86-64 only, without contraction (lib/CMakeLists.txt): AVX-512F has fused
// multiply-adds, and a contracted a·b + c would round once where the AVX2 and scalar
// kernels round twice. Called only when the CPU has AVX-512F.
#include <immintrin.h>

// GCC 12 warns inside its own avx512fintrin.h (the "undefined" source operand of the
// unmasked intrinsics); nothing here reads an uninitialised value.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
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

// ---- attention's two products ------------------------------------------------------------

namespace {

// MR rows of S by one panel of 32 keys, in 2·MR registers: each element summed over p in
// order with fused multiply-adds; the columns of m0 and m1 stored.
template <int MR>
__attribute__((target("avx512f"))) void scores_tile(std::size_t d, const float* q, std::size_t ldq, const float* panel, float* s,
                                                    std::size_t lds, __mmask16 m0, __mmask16 m1) {
    __m512 acc[MR][2];
    for (int r = 0; r < MR; ++r) acc[r][0] = acc[r][1] = _mm512_setzero_ps();
    for (std::size_t p = 0; p < d; ++p) {
        const __m512 b0 = _mm512_loadu_ps(panel + p * key_panel), b1 = _mm512_loadu_ps(panel + p * key_panel + 16);
        for (int r = 0; r < MR; ++r) {
            const __m512 a = _mm512_set1_ps(q[r * ldq + p]);
            acc[r][0] = _mm512_fmadd_ps(a, b0, acc[r][0]);
            acc[r][1] = _mm512_fmadd_ps(a, b1, acc[r][1]);
        }
    }
    for (int r = 0; r < MR; ++r) {
        _mm512_mask_storeu_ps(s + r * lds, m0, acc[r][0]);
        _mm512_mask_storeu_ps(s + r * lds + 16, m1, acc[r][1]);
    }
}

// MR rows of P·V and NR·16 of its columns in MR·NR registers, over keys [j0, j1): each
// element's sum continues in order from what `out` holds (from 0 when j0 = 0).
template <int MR, int NR>
__attribute__((target("avx512f"))) void values_tile(std::size_t j0, std::size_t j1, const float* p, std::size_t ldp, const float* v,
                                                    std::size_t ldv, float* out, std::size_t ldo) {
    __m512 acc[MR][NR];
    for (int r = 0; r < MR; ++r)
        for (int c = 0; c < NR; ++c) acc[r][c] = j0 == 0 ? _mm512_setzero_ps() : _mm512_loadu_ps(out + r * ldo + 16 * c);
    for (std::size_t j = j0; j < j1; ++j) {
        __m512 b[NR];
        for (int c = 0; c < NR; ++c) b[c] = _mm512_loadu_ps(v + j * ldv + 16 * c);
        for (int r = 0; r < MR; ++r) {
            const __m512 a = _mm512_set1_ps(p[r * ldp + j]);
            for (int c = 0; c < NR; ++c) acc[r][c] = _mm512_fmadd_ps(a, b[c], acc[r][c]);
        }
    }
    for (int r = 0; r < MR; ++r)
        for (int c = 0; c < NR; ++c) _mm512_storeu_ps(out + r * ldo + 16 * c, acc[r][c]);
}

template <int NR>
void values_rows(std::size_t rows, std::size_t j0, std::size_t j1, const float* p, std::size_t ldp, const float* v, std::size_t ldv,
                 float* out, std::size_t ldo) {
    constexpr int MR = 6;
    std::size_t i = 0;
    for (; i + MR <= rows; i += MR) values_tile<MR, NR>(j0, j1, p + i * ldp, ldp, v, ldv, out + i * ldo, ldo);
    switch (rows - i) {
        case 5: values_tile<5, NR>(j0, j1, p + i * ldp, ldp, v, ldv, out + i * ldo, ldo); break;
        case 4: values_tile<4, NR>(j0, j1, p + i * ldp, ldp, v, ldv, out + i * ldo, ldo); break;
        case 3: values_tile<3, NR>(j0, j1, p + i * ldp, ldp, v, ldv, out + i * ldo, ldo); break;
        case 2: values_tile<2, NR>(j0, j1, p + i * ldp, ldp, v, ldv, out + i * ldo, ldo); break;
        case 1: values_tile<1, NR>(j0, j1, p + i * ldp, ldp, v, ldv, out + i * ldo, ldo); break;
        default: break;
    }
}

}  // namespace

void scores_avx512(std::size_t rows, std::size_t d, const float* q, std::size_t ldq, const float* keys, std::size_t cols, float* s,
                   std::size_t lds) {
    constexpr std::size_t MR = 12;
    for (std::size_t c0 = 0; c0 < cols; c0 += key_panel) {  // a panel (d × 32 floats) stays in L1 while every row takes it
        const float* panel = keys + c0 * d;
        const std::size_t left = std::min(key_panel, cols - c0);
        const auto m0 = static_cast<__mmask16>(left >= 16 ? 0xFFFF : (1u << left) - 1),
                   m1 = static_cast<__mmask16>(left >= 32 ? 0xFFFF : left > 16 ? (1u << (left - 16)) - 1 : 0);
        float* sc = s + c0;
        std::size_t i = 0;
        for (; i + MR <= rows; i += MR) scores_tile<MR>(d, q + i * ldq, ldq, panel, sc + i * lds, lds, m0, m1);
        const float* qi = q + i * ldq;
        float* si = sc + i * lds;
        switch (rows - i) {
            case 11: scores_tile<11>(d, qi, ldq, panel, si, lds, m0, m1); break;
            case 10: scores_tile<10>(d, qi, ldq, panel, si, lds, m0, m1); break;
            case 9: scores_tile<9>(d, qi, ldq, panel, si, lds, m0, m1); break;
            case 8: scores_tile<8>(d, qi, ldq, panel, si, lds, m0, m1); break;
            case 7: scores_tile<7>(d, qi, ldq, panel, si, lds, m0, m1); break;
            case 6: scores_tile<6>(d, qi, ldq, panel, si, lds, m0, m1); break;
            case 5: scores_tile<5>(d, qi, ldq, panel, si, lds, m0, m1); break;
            case 4: scores_tile<4>(d, qi, ldq, panel, si, lds, m0, m1); break;
            case 3: scores_tile<3>(d, qi, ldq, panel, si, lds, m0, m1); break;
            case 2: scores_tile<2>(d, qi, ldq, panel, si, lds, m0, m1); break;
            case 1: scores_tile<1>(d, qi, ldq, panel, si, lds, m0, m1); break;
            default: break;
        }
    }
}

void weighted_values_avx512(std::size_t rows, std::size_t n, std::size_t d, const float* p, std::size_t ldp, const float* v,
                            std::size_t ldv, float* out, std::size_t ldo) {
    // Keys in chunks whose rows of V (chunk × d floats, 32 KB) stay in L1 while every tile
    // of rows takes them; each element's sum goes on in order across the chunks.
    if (n == 0) {  // no keys: sums of nothing
        for (std::size_t i = 0; i < rows; ++i) std::fill(out + i * ldo, out + i * ldo + d, 0.0f);
        return;
    }
    const std::size_t chunk = std::max<std::size_t>(16, 8192 / d);
    for (std::size_t j0 = 0; j0 < n; j0 += chunk) {
        const std::size_t j1 = std::min(n, j0 + chunk);
        for (std::size_t c0 = 0; c0 < d; c0 += 64) {
            const float* vc = v + c0;
            float* oc = out + c0;
            switch (std::min<std::size_t>(64, d - c0) / 16) {
                case 4: values_rows<4>(rows, j0, j1, p, ldp, vc, ldv, oc, ldo); break;
                case 3: values_rows<3>(rows, j0, j1, p, ldp, vc, ldv, oc, ldo); break;
                case 2: values_rows<2>(rows, j0, j1, p, ldp, vc, ldv, oc, ldo); break;
                default: values_rows<1>(rows, j0, j1, p, ldp, vc, ldv, oc, ldo); break;
            }
        }
    }
}

}  // namespace attnwalk::fast
