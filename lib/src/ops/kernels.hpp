// Vector kernels over one row of floats, each in one portable implementation
// (kernels_scalar.cpp) and, on x86-64, an AVX2 one (kernels_avx2.cpp) chosen at run time
// when the CPU has it. Both compute the same formulas with the same exp (Cephes' expf:
// range reduction by ln 2, a degree-6 polynomial, within 2 ulp of libm).
//
// - the blocked path's softmax of one row: scale, max, exp, sum, × 1/sum, with the
//   statistics a summary needs gathered on the way;
// - the activations' x·σ(z): SiLU (z = x) and GELU's tanh form (z = 2u, since
//   0.5·x·(1 + tanh u) = x·σ(2u)), optionally times a gate's other half;
// - and, beside them, sgemm's plain loop for small products, and the products that stream
//   a large matrix (one column, a few rows, BF16 rows) or take attention's heads.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "../stats_sums.hpp"
#include "attnwalk/ops/work.hpp"

namespace attnwalk::fast {

// Cephes' expf, the constants every version uses (exp_scalar, exp8, exp16): arguments are
// clamped to [exp_lowest, exp_highest] (above it: inf), reduced by ln 2 in two parts, and
// exp of the remainder is a degree-6 polynomial.
namespace cephes {
inline constexpr float exp_lowest = -87.3f, exp_highest = 88.3762626647949f, log2e = 1.44269504088896341f;
inline constexpr float ln2_hi = 0.693359375f, ln2_lo = -2.12194440e-4f;  // ln 2 = ln2_hi + ln2_lo
inline constexpr float exp_poly[6] = {1.9875691500e-4f, 1.3981999507e-3f, 8.3334519073e-3f,
                                      4.1665795894e-2f, 1.6666665459e-1f, 5.0000001201e-1f};
}  // namespace cephes

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

// Two rows (a of na values, b of nb, not overlapping), each as softmax_row gives it, bit
// for bit; the AVX2 version interleaves the rows' passes, so one row's chain of additions
// does not leave the core waiting.
#if defined(ATTNWALK_HAVE_AVX2)
std::array<std::pair<RowStats, RowStats>, 2> softmax_rows_avx2(float* a, std::size_t na, float* b, std::size_t nb, float scale);
#endif
std::array<std::pair<RowStats, RowStats>, 2> softmax_rows(float* a, std::size_t na, float* b, std::size_t nb, float scale);

// x[i] = x[i] / (1 + exp(−z_i)) · (times ? times[i] : 1), in place, where z = x (SiLU) or
// z = 2·√(2/π)·(x + 0.044715·x³) (GELU, tanh form; the inner sum rounded as PyTorch's).
enum class Sigmoid { silu, gelu_tanh };
// √(2/π) as the book's GELU computes it in float32, sqrt(float32(2/π)) = 0.797884524.
inline constexpr float gelu_k = 0x1.988452p-1f;
void x_sigmoid_scalar(float* x, const float* times, std::size_t n, Sigmoid kind, std::size_t from);
#if defined(ATTNWALK_HAVE_AVX2)
void x_sigmoid_avx2(float* x, const float* times, std::size_t n, Sigmoid kind);
#endif
void x_sigmoid(float* x, const float* times, std::size_t n, Sigmoid kind);

// The plain product C[m×n, ldc] = alpha·op(A)·op(B) + beta·C, for products too small for
// a BLAS: row by row of C, accumulating in float over k in order with fused multiply-adds.
// OpenBLAS's kernels (and so PyTorch's CPU matmul, where PyTorch calls OpenBLAS) sum many
// shapes in that order, not all: which depends on the CPU's kernel and the shape, and an
// element can then differ in its last bits (up to 7.4e-7 of the product's largest value
// in the plain loop's shapes of tests/blas_sum_order.py; docs/performance.md section 30).
// One body, built twice: sgemm_loop_plain (std::fma: on a build for any x86-64, a call into
// libm for every multiply-add) and sgemm_loop_avx2 (in an optimised build, the same fused
// multiply-adds as instructions). Both round once per multiply-add, so they give the same
// bits; only where two NaNs meet may each return a different one of them. A GPT-2 layer's
// 10-token attention heads took 0.19 ms on the calls, 0.045 ms on the instructions.
__attribute__((always_inline)) inline void sgemm_loop_body(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k,
                                                           float alpha, const float* a, std::size_t lda, const float* b,
                                                           std::size_t ldb, float beta, float* c, std::size_t ldc) {
    for (std::size_t i = 0; i < m; ++i) {
        float* ci = c + i * ldc;
        if (beta == 0.0f) {
            for (std::size_t j = 0; j < n; ++j) ci[j] = 0.0f;
        } else if (beta != 1.0f) {
            for (std::size_t j = 0; j < n; ++j) ci[j] *= beta;
        }
        for (std::size_t p = 0; p < k; ++p) {
            const float aip = alpha * (trans_a ? a[p * lda + i] : a[i * lda + p]);
            if (trans_b)
                for (std::size_t j = 0; j < n; ++j) ci[j] = std::fma(aip, b[j * ldb + p], ci[j]);
            else
                for (std::size_t j = 0; j < n; ++j) ci[j] = std::fma(aip, b[p * ldb + j], ci[j]);
        }
    }
}
void sgemm_loop_plain(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
                      std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc);
#if defined(ATTNWALK_HAVE_AVX2)
void sgemm_loop_avx2(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
                     std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc);  // AVX2 + FMA only
#endif
void sgemm_loop(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a, std::size_t lda,
                const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc);  // the best of the two for this CPU

// Products of at most this many rows through a matrix in x·W layout read it with
// few_rows_avx2 or few_rows_avx512 (measured against OpenBLAS here, GPT-2's four shapes:
// 1–12 rows 1.1–1.8× faster, 16 about even, 24 slower; docs/performance.md, section 10).
constexpr std::size_t few_rows_most = 16;

// The order of few_rows_avx2 and few_rows_avx512 (the same bits, whatever the tile):
// columns [j0, j1) of C = A·B a chunk at a time; within a chunk B is read once, in tiles of
// `panel` rows × `width` columns, left to right along a panel of rows and panel after panel.
// `tile(a, b, sums, lds, rows, first, ahead, ahead_rows)` takes every row of C through one
// tile (B's rows at b, ldb apart) into `sums` (from 0 when `first`), prefetching the tile
// `distance` ahead (ahead_rows of its rows from `ahead`, or none); `strip` the same for
// `strip_width` columns without prefetching; the last columns are summed one by one. Each
// element of C is one chain of fused multiply-adds over k in order. A panel is 16 rows, or
// 8 where ldb is a multiple of 4 KB (B's rows would share one L1 set, which holds 8);
// C's chunk is summed in `sums`, its rows a little more than a chunk apart, since C's own
// rows may lie a multiple of 4 KB apart too (docs/performance.md, sections 15 and 16).
template <std::size_t width, std::size_t strip_width, std::size_t distance, class Tile, class Strip>
__attribute__((always_inline)) inline void few_rows_order(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* a,
                                                          std::size_t lda, const float* b, std::size_t ldb, float* c, std::size_t ldc,
                                                          Tile tile, Strip strip) {
    constexpr std::size_t chunk = 768;
    const std::size_t panel = ldb % 1024 == 0 ? 8 : 16;
    alignas(64) float sums[few_rows_most * (chunk + width + 32)];
    const auto chunk_end = [&](std::size_t from) { return j1 - from < chunk + width ? j1 : from + chunk; };  // the last takes the rest
    for (std::size_t jc = j0; jc < j1;) {
        const std::size_t end = chunk_end(jc), wide = end - jc, lds = (wide + 15) / 16 * 16 + 16, tiles = wide / width;
        const std::size_t next_tiles = (chunk_end(end) - end) / width;
        for (std::size_t p0 = 0; p0 < k; p0 += panel) {
            const std::size_t rows = std::min(k - p0, panel), panels_left = (k - p0 + panel - 1) / panel;
            const bool first = p0 == 0;
            std::size_t j = 0;
            for (std::size_t t = 0; t < tiles; ++t, j += width) {
                // the tile `distance` ahead: in this chunk, or the next chunk's first panel
                const float* ahead = nullptr;
                std::size_t ahead_rows = 0;
                const std::size_t u = t + distance;
                if (u < panels_left * tiles) {
                    const std::size_t q0 = p0 + u / tiles * panel;
                    ahead = b + q0 * ldb + jc + u % tiles * width;
                    ahead_rows = std::min(k - q0, panel);
                } else if (u - panels_left * tiles < next_tiles) {
                    ahead = b + end + (u - panels_left * tiles) * width;
                    ahead_rows = std::min(k, panel);
                }
                tile(a + p0, b + p0 * ldb + jc + j, sums + j, lds, rows, first, ahead, ahead_rows);
            }
            for (; j + strip_width <= wide; j += strip_width) strip(a + p0, b + p0 * ldb + jc + j, sums + j, lds, rows, first);
            for (; j < wide; ++j)
                for (std::size_t i = 0; i < m; ++i) {
                    float sum = first ? 0.0f : sums[i * lds + j];
                    for (std::size_t p = p0; p < p0 + rows; ++p) sum = std::fma(a[i * lda + p], b[p * ldb + jc + j], sum);
                    sums[i * lds + j] = sum;
                }
        }
        for (std::size_t i = 0; i < m; ++i)
            for (std::size_t j = 0; j < wide; ++j) c[i * ldc + jc + j] = sums[i * lds + j];
        jc = end;
    }
}

// The BF16 kernels' sums (bf16_rows_avx2 and bf16_rows_avx512, the same bits): 8 lanes
// added as ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), then x's columns [k16, k) times
// W's row w, in order.
inline float bf16_lanes_and_tail(const float* lanes, const float* x, const std::uint16_t* w, std::size_t k16, std::size_t k) {
    float s = ((lanes[0] + lanes[1]) + (lanes[2] + lanes[3])) + ((lanes[4] + lanes[5]) + (lanes[6] + lanes[7]));
    for (std::size_t p = k16; p < k; ++p) {
        const std::uint32_t bits = static_cast<std::uint32_t>(w[p]) << 16;
        float v;
        __builtin_memcpy(&v, &bits, sizeof v);
        s = std::fma(x[p], v, s);
    }
    return s;
}

// A product that reads a large matrix once for one column (the head's logits of the last
// position), where a BLAS spends its time packing: y[i] = A[i, :]·x for rows [i0, i1) of
// A[·×k, lda], 4 × 8 lanes summed at the end. AVX2 + FMA only (has_avx2_fma); the caller
// splits the rows over the cores.
bool has_avx2_fma();
#if defined(ATTNWALK_HAVE_AVX2)
void one_column_avx2(std::size_t i0, std::size_t i1, std::size_t k, const float* a, std::size_t lda, const float* x, float* y);
// A few rows (at most few_rows_most) through a large matrix (a short prompt or a generated
// token through a layer, x·W layout):
// C[m×n, ldc] = A[m×k, lda]·B[k×n, ldb] for columns [j0, j1) of C, B read once, in tiles;
// each element accumulated over k in order with fused multiply-adds, as sgemm's plain loop.
void few_rows_avx2(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* a, std::size_t lda, const float* b,
                   std::size_t ldb, float* c, std::size_t ldc);
// The same on AVX-512F (kernels_avx512.cpp; has_avx512), its tiles 16 lanes wide: each
// element the same chain, so the same bits (a test checks).
void few_rows_avx512(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* a, std::size_t lda, const float* b,
                     std::size_t ldb, float* c, std::size_t ldc);
void few_rows(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* a, std::size_t lda, const float* b,
              std::size_t ldb, float* c, std::size_t ldc);  // the better of the two for this CPU (AVX2 + FMA at least)
// More rows than few_rows takes, at most many_rows_most (a prompt through a layer, x·W
// layout), on AVX-512F (has_avx512): C[m×n, ldc] = A[m×k, lda]·B[k×n, ldb] for columns
// [j0, j1) of C, B packed a strip of 32 columns at a time, every tile of 12 rows taking the
// strip from L2 (scores_avx512's tiles); each element summed over all of k in a register,
// one chain of fused multiply-adds in order, as sgemm's plain loop and few_rows (the same
// bits; a test checks).
constexpr std::size_t many_rows_most = 128;
void many_rows_avx512(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* a, std::size_t lda, const float* b,
                      std::size_t ldb, float* c, std::size_t ldc);
// A few rows through a layer of brain floats in nn.Linear's layout (a short prompt, or a
// generated token, through a BF16 checkpoint): y[i, j] = Σ_p x[i, p]·W[j, p] for W's rows
// [j0, j1) of W[n × k, ldw] (bfloat16 bits) and i < m, in float32. W is read once and each
// 16 of its values widened in registers — the even ones shifted up, the odd ones masked,
// no shuffles — never into a float32 copy; x is read from `xs`, x de-interleaved by
// deinterleave16 (in each 16 values the 8 even, then the 8 odd; k/16·16 values a row).
// Sums run over the even and the odd places in 8 lanes each, then the tail in order.
void deinterleave16(const float* x, std::size_t m, std::size_t k, std::size_t ldx, float* xs);

// MXFP4 rows decoded, as mxfp4_row_loop below: the table's 8 magnitudes at the group's scale
// permuted by each code's low 3 bits, its bit 3 set as the sign bit (the table's codes 8-15
// are codes 0-7 negated, -0 and -inf included): the same bits.
void mxfp4_row_avx2(const std::uint8_t* blocks, const std::uint8_t* scales, std::size_t groups, float* out);

// MXFP4 experts, two rows at a time: see mxfp4_dots_loop below.
void mxfp4_dots_avx2(const float* row0, const float* row1, std::size_t k, const float* x, std::size_t n, float* y, std::size_t ldy);

void bf16_rows_avx2(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* x, std::size_t ldx, const float* xs,
                    const std::uint16_t* w, std::size_t ldw, float* y, std::size_t ldy);
// The same on AVX-512F (kernels_avx512.cpp; has_avx512), two of W's rows in one register:
// each lane the same chain as its AVX2 lane, so the same bits (a test checks).
void bf16_rows_avx512(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* x, std::size_t ldx, const float* xs,
                      const std::uint16_t* w, std::size_t ldw, float* y, std::size_t ldy);
void bf16_rows(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* x, std::size_t ldx, const float* xs,
               const std::uint16_t* w, std::size_t ldw, float* y, std::size_t ldy);  // the better of the two for this CPU (AVX2 + FMA at least)
#endif

// MXFP4 experts (moe.cpp): y[t·ldy] = row · x_t for n tokens x_t (k apart), k a multiple of 16,
// as 16 lanes (lane q: the products of elements q, q + 16, … added in order, each product
// rounded before its sum) then lane 0 + lane 1 + … + lane 15. mxfp4_dots_avx2 does the same
// for two rows at once, y[t·ldy] and y[t·ldy + 1] (row1 == row0: one row, y[t·ldy] alone),
// in registers of 8 lanes, multiplying and adding apart as the loop does: the same bits
// (x86 only, where has_avx2_fma).
void mxfp4_dots_loop(const float* row, std::size_t k, const float* x, std::size_t n, float* y, std::size_t ldy);
// MXFP4 values (moe.cpp): code v at scale s is mxfp4_table()[16·s + v] = FP4[v]·2^(s − 127).
// mxfp4_row_loop writes `groups` groups of 32 values, each from 16 bytes (value 2i the low
// nibble of byte i, 2i + 1 its high one) at its byte of scale.
const float* mxfp4_table();
void mxfp4_row_loop(const std::uint8_t* blocks, const std::uint8_t* scales, std::size_t groups, float* out);

// The two inner loops of the delta rule's effective matrix (ops/delta_rule.cpp), each entry on
// its own: u[c] −= f·v[c] in double, and a[c] += float(p·u[c]), for c < n. The product is
// rounded, then subtracted or added (never fused), so the AVX2 and AVX-512 versions give the
// plain loop's bits (a test checks); these pick the best for this CPU.
void subtract_scaled(double* u, const double* v, double f, std::size_t n);
void add_rounded_products(float* a, const double* u, double p, std::size_t n);
#if defined(ATTNWALK_HAVE_AVX2)
void subtract_scaled_avx2(double* u, const double* v, double f, std::size_t n);
void add_rounded_products_avx2(float* a, const double* u, double p, std::size_t n);
void subtract_scaled_avx512(double* u, const double* v, double f, std::size_t n);
void add_rounded_products_avx512(float* a, const double* u, double p, std::size_t n);
#endif

// A summary's pass over n floats, finite_sums (declared on stats' side: stats_sums.hpp), in
// its three versions, which give the same bits (a test checks): portable, AVX2, AVX-512.
// merged: two runs' ranges as one (where the least or greatest is zero, either's sign).
inline FiniteRange merged(FiniteRange a, const FiniteRange& b) {
    a.min = b.min < a.min ? b.min : a.min;
    a.max = b.max > a.max ? b.max : a.max;
    a.non_finite += b.non_finite;
    return a;
}
FiniteRange finite_sums_scalar(const float* v, std::size_t n, std::size_t lane0, double* sums);
#if defined(ATTNWALK_HAVE_AVX2)
FiniteRange finite_sums_avx2(const float* v, std::size_t n, std::size_t lane0, double* sums);
FiniteRange finite_sums_avx512(const float* v, std::size_t n, std::size_t lane0, double* sums);  // has_avx512 only
#endif

// exp(row[j] − max) in place for j < n, returning their sum: the softmax's middle step.
// The AVX-512 version (kernels_avx512.cpp; has_avx512) takes 16 lanes at a time and gives
// the AVX2 version's bits, row and sum alike (a test checks), so a result does not depend
// on which of the two the CPU has.
#if defined(ATTNWALK_HAVE_AVX2)
float exp_row_avx2(float* row, std::size_t n, float max);
float exp_row_avx512(float* row, std::size_t n, float max);
// exp_scalar_row's tail of at most 8 values [from, n) on 8 lanes (the same bits; AVX2).
float exp_tail_avx2(float* row, std::size_t n, float max, std::size_t from);
// Both on two rows at once (sum[i] of row i, from max[i]), the same bits as two calls.
void exp_rows_avx2(float* a, std::size_t na, float* b, std::size_t nb, const float max[2], float sum[2]);
void exp_rows_avx512(float* a, std::size_t na, float* b, std::size_t nb, const float max[2], float sum[2]);
#endif
bool has_avx512();

// Attention's two products for one head on AVX-512F (has_avx512; kernels_avx512.cpp), where
// a BLAS would pack both operands of every block and zero its output first:
// - pack_keys: keys [0, n) of K[n × d, ldk] as panels of 32 keys into `out` (resized),
//   panel c holding out[c·d·32 + p·32 + j] = K[32c + j, p] (zeros past n);
// - scores_avx512: S[rows × cols, lds] = Q[rows × d, ldq]·Kᵀ for keys [0, cols) of the
//   packed ones;
// - weighted_values_avx512: O[rows × d, ldo] = P[rows × n, ldp]·V[n × d, ldv]; d a multiple
//   of 16.
// Every element is summed over its products in order with fused multiply-adds.
// use_attention_kernels: whether these kernels take a head's products on this CPU, for
// heads of d values (whole registers) and `rows` query rows (at least a panel's worth:
// for fewer, packing would cost what the products do).
inline constexpr std::size_t key_panel = 32;
bool use_attention_kernels(std::size_t d, std::size_t rows);
void pack_keys(const float* k, std::size_t ldk, std::size_t n, std::size_t d, std::vector<float>& out);
#if defined(ATTNWALK_HAVE_AVX2)
void scores_avx512(std::size_t rows, std::size_t d, const float* q, std::size_t ldq, const float* keys, std::size_t cols, float* s,
                   std::size_t lds);
void weighted_values_avx512(std::size_t rows, std::size_t n, std::size_t d, const float* p, std::size_t ldp, const float* v,
                            std::size_t ldv, float* out, std::size_t ldo);
#endif
// A head's two products where attention computes them: with `kernels` (use_attention_kernels
// said yes) on the kernels above, reading the keys from `packed` (pack_keys of K) and V as
// given; else through sgemm on K[cols × d, ldk] and V[cols × d, ldv] (blas.cpp).
// S[rows × cols, lds] = Q[rows × d, ldq]·Kᵀ, and O[rows × d, ldo] = P[rows × cols, ldp]·V.
// Each counts its work (ops/work.hpp) and returns it, for a caller that shares out phases.
Work head_scores(bool kernels, std::size_t rows, std::size_t cols, std::size_t d, const float* q, std::size_t ldq, const float* k,
                 std::size_t ldk, const float* packed, float* s, std::size_t lds);
Work head_values(bool kernels, std::size_t rows, std::size_t cols, std::size_t d, const float* p, std::size_t ldp, const float* v,
                 std::size_t ldv, float* out, std::size_t ldo);

// Minimum, maximum and sum of one row (a summary's statistics of queries, keys, values and
// outputs). The sum runs in 8 lanes, lane q adding elements q, q + 8, … in order, then
// ((l0 + l1) + (l2 + l3)) + ((l4 + l5) + (l6 + l7)), then the tail past the last whole
// group of 8 in order: the scalar and AVX2 versions give the same bits (a test checks).
// n ≥ 1.
RowStats row_stats_scalar(const float* v, std::size_t n);
#if defined(ATTNWALK_HAVE_AVX2)
RowStats row_stats_avx2(const float* v, std::size_t n);
#endif
RowStats row_stats(const float* v, std::size_t n);

// x / scale is x · (1 / scale), bit for bit, when scale is a power of two (d_k = 64: scale 8):
// both are the same real number rounded once. The softmax then multiplies.
bool is_power_of_two(float scale);

// Parts the AVX2 version finishes its tails with.
RowStats scale_scalar(float* row, std::size_t n, float scale, float& max, std::size_t from);
float exp_scalar_row(float* row, std::size_t n, float max, std::size_t from);
RowStats normalise_scalar(float* row, std::size_t n, float inv, std::size_t from);
inline RowStats merge(RowStats a, RowStats b) {
    return {a.min < b.min ? a.min : b.min, a.max > b.max ? a.max : b.max, a.sum + b.sum};
}

}  // namespace attnwalk::fast
