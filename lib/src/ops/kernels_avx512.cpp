// Built on x86-64 only, without contraction (as every file: CMakeLists.txt): AVX-512F has fused
// multiply-adds, and a contracted a·b + c would round once where the AVX2 and scalar
// kernels round twice. Called only when the CPU has AVX-512F.
#include <immintrin.h>

// GCC 12 warns inside its own avx512fintrin.h (the "undefined" source operand of the
// unmasked intrinsics); nothing here reads an uninitialised value.
#pragma GCC diagnostic ignored "-Wuninitialized"
#pragma GCC diagnostic ignored "-Wmaybe-uninitialized"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <vector>

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

// One row's exp pass as exp_row_avx2's, 16 lanes at a time: 8-lane groups, then the tail
// (exp_tail_avx2), the 8 partial sums of exp_row_avx2 each added in the same order.
struct ExpPass16 {
    float* row;
    std::size_t n, m, j = 0;  // m: the 8-lane groups' end; j: where the 16-lane steps are
    float max;
    __m512 mx;
    __m256 sum;
    __attribute__((target("avx512f"))) ExpPass16(float* r, std::size_t count, float top)
        : row(r), n(count), m(count / 8 * 8), max(top), mx(_mm512_set1_ps(top)), sum(_mm256_setzero_ps()) {}
    bool more() const { return j + 16 <= m; }
    __attribute__((target("avx512f"), always_inline)) inline void step() {
        const __m512 y = exp16(_mm512_sub_ps(_mm512_loadu_ps(row + j), mx));
        _mm512_storeu_ps(row + j, y);
        sum = _mm256_add_ps(sum, _mm512_castps512_ps256(y));
        sum = _mm256_add_ps(sum, _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(y), 1)));
        j += 16;
    }
    __attribute__((target("avx512f"))) float finish() {
        while (more()) step();
        if (j < m) {  // one group of 8 left
            const __mmask16 low = 0x00FF;
            const __m512 y = exp16(_mm512_sub_ps(_mm512_maskz_loadu_ps(low, row + j), mx));
            _mm512_mask_storeu_ps(row + j, low, y);
            sum = _mm256_add_ps(sum, _mm512_castps512_ps256(y));
        }
        float l[8];
        _mm256_storeu_ps(l, sum);
        return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7])) + exp_tail_avx2(row, n, max, m);
    }
};

}  // namespace

__attribute__((target("avx512f"))) float exp_row_avx512(float* row, std::size_t n, float max) { return ExpPass16(row, n, max).finish(); }

__attribute__((target("avx512f"))) void exp_rows_avx512(float* a, std::size_t na, float* b, std::size_t nb, const float max[2], float sum[2]) {
    ExpPass16 pa(a, na, max[0]), pb(b, nb, max[1]);
    while (pa.more() && pb.more()) {  // the two rows side by side while both have 16 lanes left
        pa.step();
        pb.step();
    }
    sum[0] = pa.finish();
    sum[1] = pb.finish();
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

// The first min(n, 16) lanes.
inline __mmask16 first_lanes(std::size_t n) { return static_cast<__mmask16>(n >= 16 ? 0xFFFF : (1u << n) - 1); }

// Rows [0, rows) of Q through one panel of 32 keys (the columns of m0 and m1 stored), 12
// rows a tile, the last rows in one smaller tile.
__attribute__((target("avx512f"))) void panel_rows(std::size_t rows, std::size_t d, const float* q, std::size_t ldq, const float* panel,
                                                   float* s, std::size_t lds, __mmask16 m0, __mmask16 m1) {
    constexpr std::size_t MR = 12;
    std::size_t i = 0;
    for (; i + MR <= rows; i += MR) scores_tile<MR>(d, q + i * ldq, ldq, panel, s + i * lds, lds, m0, m1);
    const float* qi = q + i * ldq;
    float* si = s + i * lds;
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
    for (std::size_t c0 = 0; c0 < cols; c0 += key_panel) {  // a panel (d × 32 floats) stays in L1 while every row takes it
        const float* panel = keys + c0 * d;
        const std::size_t left = std::min(key_panel, cols - c0);
        const __mmask16 m0 = first_lanes(left), m1 = first_lanes(left > 16 ? left - 16 : 0);
        panel_rows(rows, d, q, ldq, panel, s + c0, lds, m0, m1);
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

// ---- a few rows through BF16 weights -----------------------------------------------------

namespace {

// bf16_tile of kernels_avx2.cpp with two of W's rows in one register: lanes 0-7 hold row
// 2c's 8 sums and lanes 8-15 row 2c + 1's, each lane the same chain of fused multiply-adds
// as the AVX2 lane it stands for; x's 8 even and 8 odd values go into both halves. MR rows
// of x through NP pairs of W's rows over the first k16 columns, the 8 lanes of each sum left
// in lanes[(r·2NP + q)·8 …], as the AVX2 tile leaves them. Every other step of 16 columns
// also prefetches into L2 the same columns of `prefetch` rows of the next group of W's
// rows, from `next`, `stride` rows apart.
template <std::size_t MR, std::size_t NP>
__attribute__((target("avx512f"), always_inline)) inline void bf16_tile_pairs(std::size_t k16, const float* xs, const std::uint16_t* w,
                                                                             std::size_t ldw, float* lanes, const std::uint16_t* next,
                                                                             std::size_t prefetch, std::size_t stride) {
    __m512 acc[MR][NP];
    for (std::size_t r = 0; r < MR; ++r)
        for (std::size_t c = 0; c < NP; ++c) acc[r][c] = _mm512_setzero_ps();
    const __m512i high = _mm512_set1_epi32(static_cast<int>(0xFFFF0000u));
    for (std::size_t p = 0; p < k16; p += 16) {
        __m512 even[MR], odd[MR];
        for (std::size_t r = 0; r < MR; ++r) {  // the 8 values into both halves
            even[r] = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(xs + r * k16 + p))));
            odd[r] = _mm512_castpd_ps(_mm512_broadcast_f64x4(_mm256_castps_pd(_mm256_loadu_ps(xs + r * k16 + p + 8))));
        }
        if (p % 32 == 0)  // a 64-byte line of each of those rows
            for (std::size_t q = 0; q < prefetch; ++q) __builtin_prefetch(next + q * stride * ldw + p, 0, 2);
        for (std::size_t c = 0; c < NP; ++c) {
            const __m512i bits = _mm512_inserti64x4(
                _mm512_castsi256_si512(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + 2 * c * ldw + p))),
                _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + (2 * c + 1) * ldw + p)), 1);
            const __m512 we = _mm512_castsi512_ps(_mm512_slli_epi32(bits, 16));    // values p, p+2, …: the low halves
            const __m512 wo = _mm512_castsi512_ps(_mm512_and_si512(bits, high));  // p+1, p+3, …: the high halves
            for (std::size_t r = 0; r < MR; ++r) acc[r][c] = _mm512_fmadd_ps(wo, odd[r], _mm512_fmadd_ps(we, even[r], acc[r][c]));
        }
    }
    for (std::size_t r = 0; r < MR; ++r)
        for (std::size_t c = 0; c < NP; ++c) _mm512_storeu_ps(lanes + (r * 2 * NP + 2 * c) * 8, acc[r][c]);  // rows 2c and 2c + 1
}

// W's rows j … j+7 (outputs j …) for every row of x, four of x's rows at a time: W's rows
// come from memory for the first four and from the cache after. The next group's rows
// (when they are in this worker's share, below j1) are prefetched while the tiles run:
// tile g takes rows g, g + stride, … (stride: the number of tiles, at most 8), as
// bf16_group of kernels_avx2.cpp shares them over its pairs of rows. The wider tile is what
// AVX-512 buys: 8 multiply-adds of 16 lanes for 16 columns of two of W's rows and four of
// x's, where the AVX2 kernel's tile takes 16 of 8 lanes for four of W's rows and two of x's.
__attribute__((target("avx512f"))) void bf16_group8(std::size_t m, std::size_t j, std::size_t j1, std::size_t k, const float* x,
                                                    std::size_t ldx, const float* xs, const std::uint16_t* w, std::size_t ldw, float* y,
                                                    std::size_t ldy) {
    constexpr std::size_t MR = 4, NR = 8;
    const std::size_t k16 = k / 16 * 16;
    float lanes[MR * NR * 8];
    const std::size_t tiles = (m + MR - 1) / MR, stride = std::min(tiles, NR);
    const bool next = j + 2 * NR <= j1;
    for (std::size_t i = 0, g = 0; i < m; i += MR, ++g) {
        const std::size_t prefetch = !next || g >= NR ? 0 : (NR - g + stride - 1) / stride;
        const std::uint16_t* from = prefetch ? w + (j + NR + g) * ldw : nullptr;  // formed only where it lies in W
        const float* xi = xs + i * k16;
        const std::uint16_t* wj = w + j * ldw;
        const std::size_t rows = std::min(MR, m - i);
        switch (rows) {
            case 4: bf16_tile_pairs<4, NR / 2>(k16, xi, wj, ldw, lanes, from, prefetch, stride); break;
            case 3: bf16_tile_pairs<3, NR / 2>(k16, xi, wj, ldw, lanes, from, prefetch, stride); break;
            case 2: bf16_tile_pairs<2, NR / 2>(k16, xi, wj, ldw, lanes, from, prefetch, stride); break;
            default: bf16_tile_pairs<1, NR / 2>(k16, xi, wj, ldw, lanes, from, prefetch, stride); break;
        }
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t q = 0; q < NR; ++q)
                y[(i + r) * ldy + j + q] = bf16_lanes_and_tail(lanes + (r * NR + q) * 8, x + (i + r) * ldx, w + (j + q) * ldw, k16, k);
    }
}

}  // namespace

void bf16_rows_avx512(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* x, std::size_t ldx, const float* xs,
                      const std::uint16_t* w, std::size_t ldw, float* y, std::size_t ldy) {
    std::size_t j = j0;
    for (; j + 8 <= j1; j += 8) bf16_group8(m, j, j1, k, x, ldx, xs, w, ldw, y, ldy);
    if (j < j1) bf16_rows_avx2(m, j, j1, k, x, ldx, xs, w, ldw, y, ldy);  // the last few of W's rows
}

// ---- a few rows through a float32 layer (x·W) ---------------------------------------------

namespace {

// tile of kernels_avx2.cpp on 16 lanes: B's rows [0, rows) and columns [0, 16·NV) into MR
// rows of C held in registers, each element continuing its own sum over k in order with
// fused multiply-adds (from 0 when `first`), so the same bits. At every step p of k, PF
// lines of row p of a tile ahead are prefetched (`Locality` as __builtin_prefetch takes
// it): from `ahead`, `stride` lines apart, while p < ahead_rows.
template <std::size_t MR, std::size_t NV, std::size_t PF, int Locality>
__attribute__((target("avx512f"), always_inline)) inline void f32_tile(const float* a, std::size_t lda, const float* b, std::size_t ldb,
                                                                       float* c, std::size_t ldc, std::size_t rows, bool first,
                                                                       const float* ahead, std::size_t ahead_rows, std::size_t stride) {
    __m512 acc[MR][NV];
    for (std::size_t r = 0; r < MR; ++r)
        for (std::size_t q = 0; q < NV; ++q) acc[r][q] = first ? _mm512_setzero_ps() : _mm512_loadu_ps(c + r * ldc + 16 * q);
    for (std::size_t p = 0; p < rows; ++p) {
        const float* bp = b + p * ldb;
        if (PF > 0 && p < ahead_rows)
            for (std::size_t l = 0; l < PF; ++l) __builtin_prefetch(ahead + p * ldb + 16 * stride * l, 0, Locality);
        __m512 x[MR];
        for (std::size_t r = 0; r < MR; ++r) x[r] = _mm512_set1_ps(a[r * lda + p]);
        for (std::size_t q = 0; q < NV; ++q) {
            __m512 bv = _mm512_loadu_ps(bp + 16 * q);
            if (MR > 1) asm("" : "+v"(bv));  // one load for all the rows, not one folded into each FMA
            for (std::size_t r = 0; r < MR; ++r) acc[r][q] = _mm512_fmadd_ps(x[r], bv, acc[r][q]);
        }
    }
    for (std::size_t r = 0; r < MR; ++r)
        for (std::size_t q = 0; q < NV; ++q) _mm512_storeu_ps(c + r * ldc + 16 * q, acc[r][q]);
}

// A tile whose number of prefetched lines per row (0 to NV, a line per 16 columns) is known
// only at run time.
template <std::size_t MR, std::size_t NV, int Locality>
__attribute__((target("avx512f"), always_inline)) inline void f32_tile_prefetching(std::size_t lines, const float* a, std::size_t lda,
                                                                                   const float* b, std::size_t ldb, float* c,
                                                                                   std::size_t ldc, std::size_t rows, bool first,
                                                                                   const float* ahead, std::size_t ahead_rows,
                                                                                   std::size_t stride) {
    static_assert(NV <= 6, "prefetches for at most 6 lines a row");
    switch (std::min(lines, NV)) {
        case 0: f32_tile<MR, NV, 0, Locality>(a, lda, b, ldb, c, ldc, rows, first, ahead, ahead_rows, stride); break;
        case 1: f32_tile<MR, NV, 1, Locality>(a, lda, b, ldb, c, ldc, rows, first, ahead, ahead_rows, stride); break;
        case 2: f32_tile<MR, NV, 2, Locality>(a, lda, b, ldb, c, ldc, rows, first, ahead, ahead_rows, stride); break;
        case 3: f32_tile<MR, NV, 3, Locality>(a, lda, b, ldb, c, ldc, rows, first, ahead, ahead_rows, stride); break;
        case 4: f32_tile<MR, NV, 4, Locality>(a, lda, b, ldb, c, ldc, rows, first, ahead, ahead_rows, stride); break;
        case 5: f32_tile<MR, NV, 5, Locality>(a, lda, b, ldb, c, ldc, rows, first, ahead, ahead_rows, stride); break;
        default: f32_tile<MR, NV, 6, Locality>(a, lda, b, ldb, c, ldc, rows, first, ahead, ahead_rows, stride); break;
    }
}

// tile_rows of kernels_avx2.cpp: every row of C over B's rows [0, rows) and the columns
// [0, 16·NV), MR rows at a time (fewer for the last); the `lines` lines of each row of the
// tile ahead are shared out over the groups of rows: group g takes lines g, g + stride, …
template <std::size_t MR, std::size_t NV, int Locality>
__attribute__((target("avx512f"))) void f32_tile_rows(std::size_t m, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                                                      float* c, std::size_t ldc, std::size_t rows, bool first, const float* ahead,
                                                      std::size_t ahead_rows, std::size_t lines) {
    const std::size_t stride = std::max<std::size_t>(1, std::min((m + MR - 1) / MR, lines));
    for (std::size_t i = 0, g = 0; i < m; i += MR, ++g) {
        const std::size_t count = !ahead || g >= lines ? 0 : (lines - g + stride - 1) / stride;
        const float* from = count ? ahead + 16 * g : nullptr;  // formed only where it lies in B
        const float* ai = a + i * lda;
        float* ci = c + i * ldc;
        const std::size_t here = std::min(MR, m - i);
        if constexpr (MR == 4) {
            if (here == 4) {
                f32_tile_prefetching<4, NV, Locality>(count, ai, lda, b, ldb, ci, ldc, rows, first, from, ahead_rows, stride);
                continue;
            }
            if (here == 3) {
                f32_tile_prefetching<3, NV, Locality>(count, ai, lda, b, ldb, ci, ldc, rows, first, from, ahead_rows, stride);
                continue;
            }
            if (here == 2) {
                f32_tile_prefetching<2, NV, Locality>(count, ai, lda, b, ldb, ci, ldc, rows, first, from, ahead_rows, stride);
                continue;
            }
        }
        f32_tile_prefetching<1, NV, Locality>(count, ai, lda, b, ldb, ci, ldc, rows, first, from, ahead_rows, stride);
    }
}

// few_rows_avx512 with its prefetches `distance` tiles ahead, into the cache `Locality`
// names: MR rows of C by tiles of 16·NV columns, strips of 16.
template <int Locality, std::size_t distance, std::size_t MR, std::size_t NV>
__attribute__((target("avx512f"))) void f32_few_rows_with(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* a,
                                                          std::size_t lda, const float* b, std::size_t ldb, float* c, std::size_t ldc) {
    constexpr std::size_t width = 16 * NV, lines = NV;
    few_rows_order<width, 16, distance>(
        m, j0, j1, k, a, lda, b, ldb, c, ldc,
        [&](const float* ap, const float* bt, float* st, std::size_t lds, std::size_t rows, bool first, const float* ahead,
            std::size_t ahead_rows) { f32_tile_rows<MR, NV, Locality>(m, ap, lda, bt, ldb, st, lds, rows, first, ahead, ahead_rows, lines); },
        [&](const float* ap, const float* bt, float* st, std::size_t lds, std::size_t rows, bool first) {
            f32_tile_rows<MR, 1, Locality>(m, ap, lda, bt, ldb, st, lds, rows, first, nullptr, 0, 0);
        });
}

}  // namespace

void few_rows_avx512(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* a, std::size_t lda, const float* b,
                     std::size_t ldb, float* c, std::size_t ldc) {
    if (m > few_rows_most) throw std::logic_error("few_rows_avx512 takes at most few_rows_most rows");
    if (k == 0) {  // sums of nothing
        for (std::size_t i = 0; i < m; ++i) std::fill(c + i * ldc + j0, c + i * ldc + j1, 0.0f);
        return;
    }
    // In few_rows_order's order, with few_rows_avx2's prefetches and its 48 columns a tile.
    // Four rows a tile measured best for 10 and 16 rows (against 2 × 96, 4 × 32, 4 × 64 and
    // 4 × 96 columns; for one row, 96 columns could not be told from 48: docs/performance.md,
    // section 18).
    if (m >= 2)
        f32_few_rows_with<2, 4, 4, 3>(m, j0, j1, k, a, lda, b, ldb, c, ldc);  // L2, 4 tiles ahead
    else
        f32_few_rows_with<3, 2, 1, 3>(m, j0, j1, k, a, lda, b, ldb, c, ldc);  // L1, 2 tiles ahead
}

__attribute__((target("avx512f"))) void many_rows_avx512(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* a,
                                                        std::size_t lda, const float* b, std::size_t ldb, float* c, std::size_t ldc) {
    // B's columns a strip of 32 at a time, packed as pack_keys packs keys (row p of the strip
    // at strip[p·32], zeros past j1), where every tile of rows reads it in order: read in
    // place, a strip's rows lie ldb apart, often a page each, and GPT-2's forward took 2.2-2.6× as long.
    static thread_local std::vector<float> strip;
    strip.resize(k * key_panel);
    for (std::size_t c0 = j0; c0 < j1; c0 += key_panel) {
        const std::size_t left = std::min(key_panel, j1 - c0);
        const __mmask16 m0 = first_lanes(left), m1 = first_lanes(left > 16 ? left - 16 : 0);
        for (std::size_t p = 0; p < k; ++p) {
            _mm512_storeu_ps(strip.data() + p * key_panel, _mm512_maskz_loadu_ps(m0, b + p * ldb + c0));
            _mm512_storeu_ps(strip.data() + p * key_panel + 16, _mm512_maskz_loadu_ps(m1, b + p * ldb + c0 + 16));
        }
        panel_rows(m, k, a, lda, strip.data(), c + c0, ldc, m0, m1);
    }
}

// finite_sums_avx2 on 16 lanes in two registers of doubles: the same sums in the same
// order. Only the values of whole 16s are taken here; the rest one by one, as the scalar
// version does.
__attribute__((target("avx512f"))) FiniteRange finite_sums_avx512(const float* v, std::size_t n, std::size_t lane0, double* sums) {
    const std::size_t head = std::min(n, (finite_lanes - lane0 % finite_lanes) % finite_lanes);
    FiniteRange r = finite_sums_scalar(v, head, lane0, sums);
    const std::size_t end = head + (n - head) / finite_lanes * finite_lanes;
    if (end > head) {
        __m512d s0 = _mm512_loadu_pd(sums), s1 = _mm512_loadu_pd(sums + 8);
        __m512 lo = _mm512_set1_ps(INFINITY), hi = _mm512_set1_ps(-INFINITY);
        const __m512 zero = _mm512_setzero_ps();
        for (std::size_t i = head; i < end; i += finite_lanes) {
            const __m512 x = _mm512_loadu_ps(v + i);
            const __mmask16 finite = _mm512_cmp_ps_mask(_mm512_sub_ps(x, x), zero, _CMP_EQ_OQ);
            r.non_finite += static_cast<std::size_t>(16 - __builtin_popcount(static_cast<unsigned>(finite)));
            const __m256 low = _mm512_castps512_ps256(x), high = _mm256_castpd_ps(_mm512_extractf64x4_pd(_mm512_castps_pd(x), 1));
            s0 = _mm512_mask_add_pd(s0, static_cast<__mmask8>(finite), s0, _mm512_cvtps_pd(low));
            s1 = _mm512_mask_add_pd(s1, static_cast<__mmask8>(finite >> 8), s1, _mm512_cvtps_pd(high));
            lo = _mm512_mask_min_ps(lo, finite, lo, x);
            hi = _mm512_mask_max_ps(hi, finite, hi, x);
        }
        _mm512_storeu_pd(sums, s0);
        _mm512_storeu_pd(sums + 8, s1);
        alignas(64) float l[16], h[16];
        _mm512_store_ps(l, lo);
        _mm512_store_ps(h, hi);
        for (int q = 0; q < 16; ++q) r = merged(r, FiniteRange{l[q], h[q], 0});
    }
    return merged(r, finite_sums_scalar(v + end, n - end, lane0 + end, sums));
}

__attribute__((target("avx512f"))) void subtract_scaled_avx512(double* u, const double* v, double f, std::size_t n) {
    const __m512d F = _mm512_set1_pd(f);
    std::size_t c = 0;
    for (; c + 8 <= n; c += 8) _mm512_storeu_pd(u + c, _mm512_sub_pd(_mm512_loadu_pd(u + c), _mm512_mul_pd(F, _mm512_loadu_pd(v + c))));
    for (; c < n; ++c) u[c] -= f * v[c];
}

__attribute__((target("avx512f"))) void add_rounded_products_avx512(float* a, const double* u, double p, std::size_t n) {
    const __m512d P = _mm512_set1_pd(p);
    std::size_t c = 0;
    for (; c + 8 <= n; c += 8)
        _mm256_storeu_ps(a + c, _mm256_add_ps(_mm256_loadu_ps(a + c), _mm512_cvtpd_ps(_mm512_mul_pd(P, _mm512_loadu_pd(u + c)))));
    for (; c < n; ++c) a[c] += static_cast<float>(p * u[c]);
}

}  // namespace attnwalk::fast
