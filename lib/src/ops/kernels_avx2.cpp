// Built on x86-64 only (lib/CMakeLists.txt); called only when the CPU has AVX2.
#include <immintrin.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <stdexcept>

#include "kernels.hpp"

namespace attnwalk::fast {

namespace {

__attribute__((target("avx2"))) float hsum(__m256 v) {
    float l[8];
    _mm256_storeu_ps(l, v);
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}
__attribute__((target("avx2"))) float hmin(__m256 v) {
    float l[8];
    _mm256_storeu_ps(l, v);
    return *std::min_element(l, l + 8);
}
__attribute__((target("avx2"))) float hmax(__m256 v) {
    float l[8];
    _mm256_storeu_ps(l, v);
    return *std::max_element(l, l + 8);
}

// One row's first pass, 8 lanes at a time: the raw scores' statistics, the row divided by
// the scale (with `multiply`, times 1 / scale: the same bits where scale is a power of two)
// and the scaled row's max. Its chains (min, max, sum, top) run one group after another, so
// two rows' passes can be interleaved (scale_rows_avx2) and each row keeps its own bits.
template <bool multiply>
struct ScalePass {
    float* row;
    std::size_t n, m;
    float scale;
    __m256 s, lo, hi, sum, top;
    __attribute__((target("avx2"))) ScalePass(float* r, std::size_t count, float sc)
        : row(r), n(count), m(count / 8 * 8), scale(sc), s(_mm256_set1_ps(multiply ? 1.0f / sc : sc)),
          lo(_mm256_set1_ps(INFINITY)), hi(_mm256_set1_ps(-INFINITY)), sum(_mm256_setzero_ps()), top(hi) {}
    __attribute__((target("avx2"), always_inline)) inline void step(std::size_t j) {
        const __m256 x = _mm256_loadu_ps(row + j);
        lo = _mm256_min_ps(lo, x);
        hi = _mm256_max_ps(hi, x);
        sum = _mm256_add_ps(sum, x);
        const __m256 y = multiply ? _mm256_mul_ps(x, s) : _mm256_div_ps(x, s);
        _mm256_storeu_ps(row + j, y);
        top = _mm256_max_ps(top, y);
    }
    __attribute__((target("avx2"))) RowStats finish(float& max) const {
        if (m == 0) return scale_scalar(row, n, scale, max, 0);
        max = hmax(top);
        return merge({hmin(lo), hmax(hi), hsum(sum)}, scale_scalar(row, n, scale, max, m));
    }
};

// Two passes' groups [0, a.m) and [0, b.m) of 8, interleaved while both have some: each
// pass's own order, the two chains side by side.
template <class Pass>
__attribute__((target("avx2"), always_inline)) inline void interleaved(Pass& a, Pass& b) {
    std::size_t j = 0;
    for (; j < a.m && j < b.m; j += 8) {
        a.step(j);
        b.step(j);
    }
    for (std::size_t i = j; i < a.m; i += 8) a.step(i);
    for (std::size_t i = j; i < b.m; i += 8) b.step(i);
}

template <bool multiply>
__attribute__((target("avx2"))) RowStats scale_avx2(float* row, std::size_t n, float scale, float& max) {
    ScalePass<multiply> p(row, n, scale);
    for (std::size_t j = 0; j < p.m; j += 8) p.step(j);
    return p.finish(max);
}

template <bool multiply>
__attribute__((target("avx2"))) void scale_rows_avx2(float* a, std::size_t na, float* b, std::size_t nb, float scale, float max[2],
                                                     RowStats raw[2]) {
    ScalePass<multiply> pa(a, na, scale), pb(b, nb, scale);
    interleaved(pa, pb);
    raw[0] = pa.finish(max[0]);
    raw[1] = pb.finish(max[1]);
}

// Cephes' expf on 8 lanes, the same steps as exp_scalar (kernels_scalar.cpp): arguments
// below −87.3 give about 1e-38, above 88.38 inf.
__attribute__((target("avx2"))) __m256 exp8(__m256 v) {
    using namespace cephes;
    const __m256 lowest = _mm256_set1_ps(exp_lowest), highest = _mm256_set1_ps(exp_highest), log2 = _mm256_set1_ps(log2e),
                 half = _mm256_set1_ps(0.5f), c1 = _mm256_set1_ps(ln2_hi), c2 = _mm256_set1_ps(ln2_lo), one = _mm256_set1_ps(1.0f);
    __m256 p[6];
    for (int i = 0; i < 6; ++i) p[i] = _mm256_set1_ps(exp_poly[i]);
    const __m256 overflow = _mm256_cmp_ps(v, highest, _CMP_GT_OQ);
    v = _mm256_min_ps(_mm256_max_ps(v, lowest), highest);
    const __m256 fx = _mm256_floor_ps(_mm256_add_ps(_mm256_mul_ps(v, log2), half));
    v = _mm256_sub_ps(_mm256_sub_ps(v, _mm256_mul_ps(fx, c1)), _mm256_mul_ps(fx, c2));
    __m256 y = p[0];
    for (int i = 1; i < 6; ++i) y = _mm256_add_ps(_mm256_mul_ps(y, v), p[i]);
    y = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(y, v), v), v), one);
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
    y = _mm256_mul_ps(y, _mm256_castsi256_ps(bits));
    return _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), overflow);
}

}  // namespace

// exp_scalar_row's tail [m, n), at most 8 values, on 8 lanes: each value exp_scalar's (a
// NaN stays itself, as exp_scalar returns it), summed one by one in order.
__attribute__((target("avx2"))) float exp_tail_avx2(float* row, std::size_t n, float max, std::size_t m) {
    if (m >= n) return 0.0f;
    if (n - m > 8) throw std::logic_error("exp_tail_avx2 takes at most 8 values");
    const __m256i lanes = _mm256_cmpgt_epi32(_mm256_set1_epi32(static_cast<int>(n - m)), _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7));
    const __m256 x = _mm256_sub_ps(_mm256_maskload_ps(row + m, lanes), _mm256_set1_ps(max));
    const __m256 y = _mm256_blendv_ps(exp8(x), x, _mm256_cmp_ps(x, x, _CMP_UNORD_Q));
    _mm256_maskstore_ps(row + m, lanes, y);
    float lane[8];
    _mm256_storeu_ps(lane, y);  // summed from here, not read back through the masked store
    float sum = 0.0f;
    for (std::size_t j = 0; j < n - m; ++j) sum += lane[j];
    return sum;
}

namespace {

// One row's exp pass, 8 lanes at a time: exp(x − max) in place, and the 8 partial sums.
struct ExpPass {
    float* row;
    std::size_t n, m;
    float max;
    __m256 mx, sum;
    __attribute__((target("avx2"))) ExpPass(float* r, std::size_t count, float top)
        : row(r), n(count), m(count / 8 * 8), max(top), mx(_mm256_set1_ps(top)), sum(_mm256_setzero_ps()) {}
    __attribute__((target("avx2"), always_inline)) inline void step(std::size_t j) {
        const __m256 y = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j), mx));
        _mm256_storeu_ps(row + j, y);
        sum = _mm256_add_ps(sum, y);
    }
    __attribute__((target("avx2"))) float finish() const { return hsum(sum) + exp_tail_avx2(row, n, max, m); }
};

}  // namespace

__attribute__((target("avx2"))) float exp_row_avx2(float* row, std::size_t n, float max) {
    ExpPass p(row, n, max);
    for (std::size_t j = 0; j < p.m; j += 8) p.step(j);
    return p.finish();
}

__attribute__((target("avx2"))) void exp_rows_avx2(float* a, std::size_t na, float* b, std::size_t nb, const float max[2], float sum[2]) {
    ExpPass pa(a, na, max[0]), pb(b, nb, max[1]);
    interleaved(pa, pb);
    sum[0] = pa.finish();
    sum[1] = pb.finish();
}

namespace {

// One row's last pass, 8 lanes at a time: row × inv in place, and the weights' statistics.
struct NormalisePass {
    float* row;
    std::size_t n, m;
    float inv;
    __m256 k, lo, hi, sum;
    __attribute__((target("avx2"))) NormalisePass(float* r, std::size_t count, float by)
        : row(r), n(count), m(count / 8 * 8), inv(by), k(_mm256_set1_ps(by)), lo(_mm256_set1_ps(INFINITY)), hi(_mm256_set1_ps(-INFINITY)),
          sum(_mm256_setzero_ps()) {}
    __attribute__((target("avx2"), always_inline)) inline void step(std::size_t j) {
        const __m256 w = _mm256_mul_ps(_mm256_loadu_ps(row + j), k);
        _mm256_storeu_ps(row + j, w);
        lo = _mm256_min_ps(lo, w);
        hi = _mm256_max_ps(hi, w);
        sum = _mm256_add_ps(sum, w);
    }
    __attribute__((target("avx2"))) RowStats finish() const {
        if (m == 0) return normalise_scalar(row, n, inv, 0);
        return merge({hmin(lo), hmax(hi), hsum(sum)}, normalise_scalar(row, n, inv, m));
    }
};

__attribute__((target("avx2"))) RowStats normalise_avx2(float* row, std::size_t n, float inv) {
    NormalisePass p(row, n, inv);
    for (std::size_t j = 0; j < p.m; j += 8) p.step(j);
    return p.finish();
}

}  // namespace

__attribute__((target("avx2"))) void x_sigmoid_avx2(float* x, const float* times, std::size_t n, Sigmoid kind) {
    const std::size_t m = n / 8 * 8;
    const __m256 k = _mm256_set1_ps(gelu_k), c = _mm256_set1_ps(0.044715f), two = _mm256_set1_ps(2.0f), one = _mm256_set1_ps(1.0f),
                 zero = _mm256_setzero_ps();
    for (std::size_t i = 0; i < m; i += 8) {
        const __m256 v = _mm256_loadu_ps(x + i);
        const __m256 z = kind == Sigmoid::silu
                             ? v
                             : _mm256_mul_ps(two, _mm256_mul_ps(k, _mm256_add_ps(v, _mm256_mul_ps(c, _mm256_mul_ps(_mm256_mul_ps(v, v), v)))));
        __m256 y = _mm256_div_ps(v, _mm256_add_ps(one, exp8(_mm256_sub_ps(zero, z))));
        if (times) y = _mm256_mul_ps(y, _mm256_loadu_ps(times + i));
        _mm256_storeu_ps(x + i, y);
    }
    x_sigmoid_scalar(x, times, n, kind, m);
}

namespace {

// B's rows [0, rows) (at b, ldb apart) and columns [0, 8·NR) into MR rows of C held in
// registers: each element continues its sum over k in order with fused multiply-adds (from
// 0 when `first`). At every step p of k, PF lines of row p of a tile ahead are prefetched
// (`Locality` as __builtin_prefetch takes it: 3 into L1, 2 into L2): from `ahead`,
// `stride` lines apart, while p < ahead_rows.
template <int MR, int NR, int PF, int Locality>
__attribute__((target("avx2,fma"), always_inline)) inline void tile(const float* a, std::size_t lda, const float* b, std::size_t ldb,
                                                                    float* c, std::size_t ldc, std::size_t rows, bool first,
                                                                    const float* ahead, std::size_t ahead_rows, std::size_t stride) {
    __m256 acc[MR][NR];
    for (int r = 0; r < MR; ++r)
        for (int q = 0; q < NR; ++q) acc[r][q] = first ? _mm256_setzero_ps() : _mm256_loadu_ps(c + r * ldc + 8 * q);
    for (std::size_t p = 0; p < rows; ++p) {
        const float* bp = b + p * ldb;
        if (PF > 0 && p < ahead_rows)
            for (int l = 0; l < PF; ++l) __builtin_prefetch(ahead + p * ldb + 16 * stride * l, 0, Locality);
        __m256 x[MR];
        for (int r = 0; r < MR; ++r) x[r] = _mm256_broadcast_ss(a + r * lda + p);
        for (int q = 0; q < NR; ++q) {
            __m256 bv = _mm256_loadu_ps(bp + 8 * q);
            if (MR > 1) asm("" : "+x"(bv));  // one load for all the rows, not one folded into each FMA
            for (int r = 0; r < MR; ++r) acc[r][q] = _mm256_fmadd_ps(x[r], bv, acc[r][q]);
        }
    }
    for (int r = 0; r < MR; ++r)
        for (int q = 0; q < NR; ++q) _mm256_storeu_ps(c + r * ldc + 8 * q, acc[r][q]);
}

// A tile whose number of prefetched lines per row (0 to 3) is known only at run time.
template <int MR, int NR, int Locality>
__attribute__((target("avx2,fma"), always_inline)) inline void tile_prefetching(int lines, const float* a, std::size_t lda, const float* b,
                                                                                std::size_t ldb, float* c, std::size_t ldc, std::size_t rows,
                                                                                bool first, const float* ahead, std::size_t ahead_rows,
                                                                                std::size_t stride) {
    switch (lines) {
        case 0: tile<MR, NR, 0, Locality>(a, lda, b, ldb, c, ldc, rows, first, ahead, ahead_rows, stride); break;
        case 1: tile<MR, NR, 1, Locality>(a, lda, b, ldb, c, ldc, rows, first, ahead, ahead_rows, stride); break;
        case 2: tile<MR, NR, 2, Locality>(a, lda, b, ldb, c, ldc, rows, first, ahead, ahead_rows, stride); break;
        default: tile<MR, NR, 3, Locality>(a, lda, b, ldb, c, ldc, rows, first, ahead, ahead_rows, stride); break;
    }
}

// Every row of C over B's rows [0, rows) and the columns [0, 8·NR) at b and c, a pair of
// rows at a time. The `lines` lines of each row of the tile ahead (ahead_rows rows from
// `ahead`, or none) are shared out over the pairs: pair g takes lines g, g + stride, …
template <int NR, int Locality>
__attribute__((target("avx2,fma"))) void tile_rows(std::size_t m, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                                                   float* c, std::size_t ldc, std::size_t rows, bool first, const float* ahead,
                                                   std::size_t ahead_rows, std::size_t lines) {
    const std::size_t stride = std::max<std::size_t>(1, std::min((m + 1) / 2, lines));
    for (std::size_t i = 0, g = 0; i < m; i += 2, ++g) {
        const int count = !ahead || g >= lines ? 0 : static_cast<int>((lines - g + stride - 1) / stride);
        const float* from = count ? ahead + 16 * g : nullptr;  // formed only where it lies in B
        if (i + 2 <= m)
            tile_prefetching<2, NR, Locality>(count, a + i * lda, lda, b, ldb, c + i * ldc, ldc, rows, first, from, ahead_rows, stride);
        else
            tile_prefetching<1, NR, Locality>(count, a + i * lda, lda, b, ldb, c + i * ldc, ldc, rows, first, from, ahead_rows, stride);
    }
}

// few_rows_avx2 with its prefetches `distance` tiles ahead, into the cache `Locality` names:
// tiles of 48 columns, strips of 8.
template <int Locality, std::size_t distance>
__attribute__((target("avx2,fma"))) void few_rows_with(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* a,
                                                       std::size_t lda, const float* b, std::size_t ldb, float* c, std::size_t ldc) {
    constexpr std::size_t width = 48, lines = width / 16;
    few_rows_order<width, 8, distance>(
        m, j0, j1, k, a, lda, b, ldb, c, ldc,
        [&](const float* ap, const float* bt, float* st, std::size_t lds, std::size_t rows, bool first, const float* ahead,
            std::size_t ahead_rows) { tile_rows<6, Locality>(m, ap, lda, bt, ldb, st, lds, rows, first, ahead, ahead_rows, lines); },
        [&](const float* ap, const float* bt, float* st, std::size_t lds, std::size_t rows, bool first) {
            tile_rows<1, Locality>(m, ap, lda, bt, ldb, st, lds, rows, first, nullptr, 0, 0);
        });
}

}  // namespace

__attribute__((target("avx2,fma"))) void few_rows_avx2(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* a,
                                                        std::size_t lda, const float* b, std::size_t ldb, float* c, std::size_t ldc) {
    // In few_rows_order's order (kernels.hpp), tiles of `panel` rows × 48 columns, each kept
    // in L1 while every pair of rows of C takes its products from it in 12 registers. A
    // tile's rows lie ldb apart, which the hardware's prefetchers do not follow: a tile
    // further on is prefetched a row per step of k, its lines shared out over the pairs, so
    // that memory is kept busy all along. With two rows or more, 4 tiles ahead into L2 (the
    // arithmetic between requests is longer); with one, 2 tiles ahead into L1. Each element
    // is summed over k in order with fused multiply-adds, as sgemm's plain loop does: the
    // same bits. (docs/performance.md, sections 15 and 16.)
    if (m > few_rows_most) throw std::logic_error("few_rows_avx2 takes at most few_rows_most rows");
    if (k == 0) {  // sums of nothing (sgemm never asks: no work goes to its plain loop)
        for (std::size_t i = 0; i < m; ++i) std::fill(c + i * ldc + j0, c + i * ldc + j1, 0.0f);
        return;
    }
    if (m >= 2)
        few_rows_with<2, 4>(m, j0, j1, k, a, lda, b, ldb, c, ldc);  // L2, 4 tiles ahead
    else
        few_rows_with<3, 2>(m, j0, j1, k, a, lda, b, ldb, c, ldc);  // L1, 2 tiles ahead
}

void deinterleave16(const float* x, std::size_t m, std::size_t k, std::size_t ldx, float* xs) {
    const std::size_t k16 = k / 16 * 16;
    for (std::size_t i = 0; i < m; ++i)
        for (std::size_t p = 0; p < k16; p += 16)
            for (std::size_t l = 0; l < 8; ++l) {
                xs[i * k16 + p + l] = x[i * ldx + p + 2 * l];
                xs[i * k16 + p + 8 + l] = x[i * ldx + p + 2 * l + 1];
            }
}

namespace {

// MR rows of x through NR rows of W over the first k16 columns, the 8 lanes of each sum
// left in lanes[(r·NR + q)·8 …].
// Every other step of 16 columns also prefetches into L2 the same columns of PF rows of
// the next group of W's rows, from `next`, `stride` rows apart.
template <int MR, int NR, int PF>
__attribute__((target("avx2,fma"), always_inline)) inline void bf16_tile(std::size_t k16, const float* xs, const std::uint16_t* w,
                                                                        std::size_t ldw, float* lanes, const std::uint16_t* next,
                                                                        std::size_t stride) {
    __m256 acc[MR][NR];
    for (int r = 0; r < MR; ++r)
        for (int q = 0; q < NR; ++q) acc[r][q] = _mm256_setzero_ps();
    const __m256i high = _mm256_set1_epi32(static_cast<int>(0xFFFF0000u));
    for (std::size_t p = 0; p < k16; p += 16) {
        __m256 even[MR], odd[MR];
        for (int r = 0; r < MR; ++r) {
            even[r] = _mm256_loadu_ps(xs + r * k16 + p);
            odd[r] = _mm256_loadu_ps(xs + r * k16 + p + 8);
        }
        if (PF > 0 && p % 32 == 0)  // a 64-byte line of each of those rows
            for (int q = 0; q < PF; ++q) __builtin_prefetch(next + q * stride * ldw + p, 0, 2);
        for (int q = 0; q < NR; ++q) {
            const __m256i bits = _mm256_loadu_si256(reinterpret_cast<const __m256i*>(w + q * ldw + p));
            const __m256 we = _mm256_castsi256_ps(_mm256_slli_epi32(bits, 16));     // values p, p+2, …: the low halves
            const __m256 wo = _mm256_castsi256_ps(_mm256_and_si256(bits, high));   // p+1, p+3, …: the high halves
            for (int r = 0; r < MR; ++r) acc[r][q] = _mm256_fmadd_ps(wo, odd[r], _mm256_fmadd_ps(we, even[r], acc[r][q]));
        }
    }
    for (int r = 0; r < MR; ++r)
        for (int q = 0; q < NR; ++q) _mm256_storeu_ps(lanes + (r * NR + q) * 8, acc[r][q]);
}

// A tile whose number of prefetched rows (0, 1, 2 or NR) is known only at run time.
template <int MR, int NR>
__attribute__((target("avx2,fma"), always_inline)) inline void bf16_tile_prefetching(int rows, std::size_t k16, const float* xs,
                                                                                    const std::uint16_t* w, std::size_t ldw, float* lanes,
                                                                                    const std::uint16_t* next, std::size_t stride) {
    switch (rows) {
        case 0: bf16_tile<MR, NR, 0>(k16, xs, w, ldw, lanes, next, stride); break;
        case 1: bf16_tile<MR, NR, 1>(k16, xs, w, ldw, lanes, next, stride); break;
        case 2: bf16_tile<MR, NR, 2>(k16, xs, w, ldw, lanes, next, stride); break;
        default: bf16_tile<MR, NR, NR>(k16, xs, w, ldw, lanes, next, stride); break;
    }
}

// W's rows j … j+NR-1 (outputs j …) for every row of x, a pair of rows at a time: W's rows
// come from memory for the first pair and from the cache after. While the pairs run, the
// next group's NR rows (when they are in this worker's share, below j1) are prefetched, a
// row per pair: pair g takes rows g, g + stride, … (stride: the number of pairs, at most
// NR), so that memory is busy all along rather than only while the first pair waits
// (docs/performance.md, section 16).
template <std::size_t NR>
__attribute__((target("avx2,fma"))) void bf16_group(std::size_t m, std::size_t j, std::size_t j1, std::size_t k, const float* x,
                                                    std::size_t ldx, const float* xs, const std::uint16_t* w, std::size_t ldw, float* y,
                                                    std::size_t ldy) {
    const std::size_t k16 = k / 16 * 16;
    float lanes[2 * NR * 8];
    const auto finish = [&](std::size_t i, std::size_t rows) {
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t q = 0; q < NR; ++q)
                y[(i + r) * ldy + j + q] = bf16_lanes_and_tail(lanes + (r * NR + q) * 8, x + (i + r) * ldx, w + (j + q) * ldw, k16, k);
    };
    const std::size_t pairs = (m + 1) / 2, stride = std::min<std::size_t>(pairs, NR);
    const bool next = j + 2 * NR <= j1;
    for (std::size_t i = 0, g = 0; i < m; i += 2, ++g) {
        const int rows = !next || g >= NR ? 0 : static_cast<int>((NR - g + stride - 1) / stride);
        const std::uint16_t* from = rows ? w + (j + NR + g) * ldw : nullptr;  // formed only where it lies in W
        if (i + 2 <= m) {
            bf16_tile_prefetching<2, NR>(rows, k16, xs + i * k16, w + j * ldw, ldw, lanes, from, stride);
            finish(i, 2);
        } else {
            bf16_tile_prefetching<1, NR>(rows, k16, xs + i * k16, w + j * ldw, ldw, lanes, from, stride);
            finish(i, 1);
        }
    }
}

}  // namespace

__attribute__((target("avx2,fma"))) void bf16_rows_avx2(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* x,
                                                         std::size_t ldx, const float* xs, const std::uint16_t* w, std::size_t ldw,
                                                         float* y, std::size_t ldy) {
    std::size_t j = j0;
    for (; j + 4 <= j1; j += 4) bf16_group<4>(m, j, j1, k, x, ldx, xs, w, ldw, y, ldy);
    for (; j < j1; ++j) bf16_group<1>(m, j, j1, k, x, ldx, xs, w, ldw, y, ldy);
}

__attribute__((target("avx2,fma"))) void one_column_avx2(std::size_t i0, std::size_t i1, std::size_t k, const float* a, std::size_t lda,
                                                          const float* x, float* y) {
    const std::size_t k32 = k / 32 * 32;
    for (std::size_t i = i0; i < i1; ++i) {
        const float* row = a + i * lda;
        __m256 s0 = _mm256_setzero_ps(), s1 = s0, s2 = s0, s3 = s0;
        for (std::size_t p = 0; p < k32; p += 32) {
            s0 = _mm256_fmadd_ps(_mm256_loadu_ps(row + p), _mm256_loadu_ps(x + p), s0);
            s1 = _mm256_fmadd_ps(_mm256_loadu_ps(row + p + 8), _mm256_loadu_ps(x + p + 8), s1);
            s2 = _mm256_fmadd_ps(_mm256_loadu_ps(row + p + 16), _mm256_loadu_ps(x + p + 16), s2);
            s3 = _mm256_fmadd_ps(_mm256_loadu_ps(row + p + 24), _mm256_loadu_ps(x + p + 24), s3);
        }
        float sum = hsum(_mm256_add_ps(_mm256_add_ps(s0, s1), _mm256_add_ps(s2, s3)));
        for (std::size_t p = k32; p < k; ++p) sum = std::fma(row[p], x[p], sum);
        y[i] = sum;
    }
}

// The values before lane 0 and after the last whole 16 one by one, as the scalar version;
// between them 16 at a time, each double lane summing the same values in the same order.

__attribute__((target("avx2"))) FiniteRange finite_sums_avx2(const float* v, std::size_t n, std::size_t lane0, double* sums) {
    const std::size_t head = std::min(n, (finite_lanes - lane0 % finite_lanes) % finite_lanes);
    FiniteRange r = finite_sums_scalar(v, head, lane0, sums);
    const std::size_t end = head + (n - head) / finite_lanes * finite_lanes;
    if (end > head) {
        __m256d s[4];
        for (int q = 0; q < 4; ++q) s[q] = _mm256_loadu_pd(sums + 4 * q);
        __m256 lo = _mm256_set1_ps(INFINITY), hi = _mm256_set1_ps(-INFINITY);
        const __m256 zero = _mm256_setzero_ps(), up = _mm256_set1_ps(INFINITY), down = _mm256_set1_ps(-INFINITY);
        for (std::size_t i = head; i < end; i += finite_lanes)
            for (int half = 0; half < 2; ++half) {
                const __m256 x = _mm256_loadu_ps(v + i + 8 * half);
                const __m256 finite = _mm256_cmp_ps(_mm256_sub_ps(x, x), zero, _CMP_EQ_OQ);
                r.non_finite += static_cast<std::size_t>(8 - __builtin_popcount(static_cast<unsigned>(_mm256_movemask_ps(finite))));
                // A value that is not finite adds +0, which leaves a lane as it is: a lane
                // starts at +0 and a sum of doubles is never −0 in rounding to nearest.
                const __m256 kept = _mm256_and_ps(x, finite);
                s[2 * half] = _mm256_add_pd(s[2 * half], _mm256_cvtps_pd(_mm256_castps256_ps128(kept)));
                s[2 * half + 1] = _mm256_add_pd(s[2 * half + 1], _mm256_cvtps_pd(_mm256_extractf128_ps(kept, 1)));
                lo = _mm256_min_ps(lo, _mm256_blendv_ps(up, x, finite));
                hi = _mm256_max_ps(hi, _mm256_blendv_ps(down, x, finite));
            }
        for (int q = 0; q < 4; ++q) _mm256_storeu_pd(sums + 4 * q, s[q]);
        r = merged(r, FiniteRange{hmin(lo), hmax(hi), 0});
    }
    return merged(r, finite_sums_scalar(v + end, n - end, lane0 + end, sums));
}

__attribute__((target("avx2"))) RowStats row_stats_avx2(const float* v, std::size_t n) {
    const std::size_t m = n / 8 * 8;
    if (m == 0) return row_stats_scalar(v, n);
    __m256 lo = _mm256_set1_ps(INFINITY), hi = _mm256_set1_ps(-INFINITY), sum = _mm256_setzero_ps();
    for (std::size_t j = 0; j < m; j += 8) {
        const __m256 x = _mm256_loadu_ps(v + j);
        lo = _mm256_min_ps(lo, x);
        hi = _mm256_max_ps(hi, x);
        sum = _mm256_add_ps(sum, x);
    }
    RowStats r{hmin(lo), hmax(hi), hsum(sum)};
    for (std::size_t j = m; j < n; ++j) {
        r.min = std::min(r.min, v[j]);
        r.max = std::max(r.max, v[j]);
        r.sum += v[j];
    }
    return r;
}

std::pair<RowStats, RowStats> softmax_row_avx2(float* row, std::size_t n, float scale) {
    float max = -INFINITY;
    const RowStats raw = is_power_of_two(scale) ? scale_avx2<true>(row, n, scale, max) : scale_avx2<false>(row, n, scale, max);
    const float inv = 1.0f / (has_avx512() ? exp_row_avx512(row, n, max) : exp_row_avx2(row, n, max));
    return {raw, normalise_avx2(row, n, inv)};
}

// softmax_row_avx2 on two rows, each pass interleaving them: a row's three passes each
// wait on a chain of additions, so two rows side by side keep the core busier. The same
// operations per row, so the same bits as two calls.
__attribute__((target("avx2"))) std::array<std::pair<RowStats, RowStats>, 2> softmax_rows_avx2(float* a, std::size_t na, float* b, std::size_t nb, float scale) {
    float max[2] = {-INFINITY, -INFINITY}, sum[2];
    RowStats raw[2];
    if (is_power_of_two(scale))
        scale_rows_avx2<true>(a, na, b, nb, scale, max, raw);
    else
        scale_rows_avx2<false>(a, na, b, nb, scale, max, raw);
    if (has_avx512())
        exp_rows_avx512(a, na, b, nb, max, sum);
    else
        exp_rows_avx2(a, na, b, nb, max, sum);
    NormalisePass pa(a, na, 1.0f / sum[0]), pb(b, nb, 1.0f / sum[1]);
    interleaved(pa, pb);
    return {{{raw[0], pa.finish()}, {raw[1], pb.finish()}}};
}

__attribute__((target("avx2,fma"))) void sgemm_loop_avx2(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k,
                                                     float alpha, const float* a, std::size_t lda, const float* b, std::size_t ldb,
                                                     float beta, float* c, std::size_t ldc) {
    sgemm_loop_body(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}


namespace {
// Lanes 0-7 (lo) and 8-15 (hi) added in that order, one by one.
__attribute__((target("avx2"))) float lanes_in_order(__m256 lo, __m256 hi) {
    alignas(32) float lane[16];
    _mm256_store_ps(lane, lo);
    _mm256_store_ps(lane + 8, hi);
    float sum = 0.0f;
    for (float v : lane) sum += v;
    return sum;
}
}  // namespace

__attribute__((target("avx2"))) void mxfp4_row_avx2(const std::uint8_t* blocks, const std::uint8_t* scales, std::size_t groups, float* out) {
    const float* table = mxfp4_table();
    const __m128i low4 = _mm_set1_epi8(0x0F);
    const __m256i seven = _mm256_set1_epi32(7);
    for (std::size_t g = 0; g < groups; ++g) {
        const __m256 magnitudes = _mm256_loadu_ps(table + 16 * scales[g]);
        const __m128i b = _mm_loadu_si128(reinterpret_cast<const __m128i*>(blocks + 16 * g));
        const __m128i lo = _mm_and_si128(b, low4), hi = _mm_and_si128(_mm_srli_epi16(b, 4), low4);
        const __m128i codes[2] = {_mm_unpacklo_epi8(lo, hi), _mm_unpackhi_epi8(lo, hi)};  // values 0-15, 16-31 in order
        for (int h = 0; h < 4; ++h) {
            const __m128i part = h % 2 ? _mm_srli_si128(codes[h / 2], 8) : codes[h / 2];
            const __m256i code = _mm256_cvtepu8_epi32(part);
            const __m256 magnitude = _mm256_permutevar8x32_ps(magnitudes, _mm256_and_si256(code, seven));
            const __m256i sign = _mm256_slli_epi32(_mm256_srli_epi32(code, 3), 31);
            _mm256_storeu_ps(out + 32 * g + 8 * h, _mm256_or_ps(magnitude, _mm256_castsi256_ps(sign)));
        }
    }
}

// Lane by lane as mxfp4_dots_loop: products rounded, then added, never fused. Two rows (the
// second may be the first again) against two tokens at a time: eight chains of additions, and
// each token's 16 numbers loaded once for both rows.
__attribute__((target("avx2"))) void mxfp4_dots_avx2(const float* row0, const float* row1, std::size_t k, const float* x, std::size_t n,
                                                     float* y, std::size_t ldy) {
    std::size_t t = 0;
    for (; t + 2 <= n; t += 2) {
        const float* x0 = x + t * k;
        const float* x1 = x0 + k;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, b0 = a0, b1 = a0, c0 = a0, c1 = a0, d0 = a0, d1 = a0;  // a, b: row 0; c, d: row 1
        for (std::size_t c = 0; c < k; c += 16) {
            const __m256 p0 = _mm256_loadu_ps(row0 + c), p1 = _mm256_loadu_ps(row0 + c + 8);
            const __m256 q0 = _mm256_loadu_ps(row1 + c), q1 = _mm256_loadu_ps(row1 + c + 8);
            const __m256 u0 = _mm256_loadu_ps(x0 + c), u1 = _mm256_loadu_ps(x0 + c + 8);
            const __m256 v0 = _mm256_loadu_ps(x1 + c), v1 = _mm256_loadu_ps(x1 + c + 8);
            a0 = _mm256_add_ps(a0, _mm256_mul_ps(u0, p0));
            a1 = _mm256_add_ps(a1, _mm256_mul_ps(u1, p1));
            b0 = _mm256_add_ps(b0, _mm256_mul_ps(v0, p0));
            b1 = _mm256_add_ps(b1, _mm256_mul_ps(v1, p1));
            c0 = _mm256_add_ps(c0, _mm256_mul_ps(u0, q0));
            c1 = _mm256_add_ps(c1, _mm256_mul_ps(u1, q1));
            d0 = _mm256_add_ps(d0, _mm256_mul_ps(v0, q0));
            d1 = _mm256_add_ps(d1, _mm256_mul_ps(v1, q1));
        }
        y[t * ldy] = lanes_in_order(a0, a1);
        y[(t + 1) * ldy] = lanes_in_order(b0, b1);
        if (row1 != row0) {
            y[t * ldy + 1] = lanes_in_order(c0, c1);
            y[(t + 1) * ldy + 1] = lanes_in_order(d0, d1);
        }
    }
    for (; t < n; ++t) {
        const float* x0 = x + t * k;
        __m256 a0 = _mm256_setzero_ps(), a1 = a0, c0 = a0, c1 = a0;
        for (std::size_t c = 0; c < k; c += 16) {
            const __m256 u0 = _mm256_loadu_ps(x0 + c), u1 = _mm256_loadu_ps(x0 + c + 8);
            a0 = _mm256_add_ps(a0, _mm256_mul_ps(u0, _mm256_loadu_ps(row0 + c)));
            a1 = _mm256_add_ps(a1, _mm256_mul_ps(u1, _mm256_loadu_ps(row0 + c + 8)));
            c0 = _mm256_add_ps(c0, _mm256_mul_ps(u0, _mm256_loadu_ps(row1 + c)));
            c1 = _mm256_add_ps(c1, _mm256_mul_ps(u1, _mm256_loadu_ps(row1 + c + 8)));
        }
        y[t * ldy] = lanes_in_order(a0, a1);
        if (row1 != row0) y[t * ldy + 1] = lanes_in_order(c0, c1);
    }
}

__attribute__((target("avx2"))) void subtract_scaled_avx2(double* u, const double* v, double f, std::size_t n) {
    const __m256d F = _mm256_set1_pd(f);
    std::size_t c = 0;
    for (; c + 4 <= n; c += 4) _mm256_storeu_pd(u + c, _mm256_sub_pd(_mm256_loadu_pd(u + c), _mm256_mul_pd(F, _mm256_loadu_pd(v + c))));
    for (; c < n; ++c) u[c] -= f * v[c];
}

__attribute__((target("avx2"))) void add_rounded_products_avx2(float* a, const double* u, double p, std::size_t n) {
    const __m256d P = _mm256_set1_pd(p);
    std::size_t c = 0;
    for (; c + 4 <= n; c += 4) _mm_storeu_ps(a + c, _mm_add_ps(_mm_loadu_ps(a + c), _mm256_cvtpd_ps(_mm256_mul_pd(P, _mm256_loadu_pd(u + c)))));
    for (; c < n; ++c) a[c] += static_cast<float>(p * u[c]);
}

}  // namespace attnwalk::fast
