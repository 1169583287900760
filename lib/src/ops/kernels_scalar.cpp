#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels.hpp"

namespace attnwalk::fast {

namespace {

#if defined(ATTNWALK_HAVE_AVX2)
bool has_avx2() {
    static const bool avx2 = __builtin_cpu_supports("avx2");
    return avx2;
}
#endif

// Cephes' expf. Arguments below −87.3 give about 1e-38 instead of a denormal or 0; NaN
// stays NaN and arguments above 88.38 give inf (the power of two is built from an
// integer: NaN or a large one would be undefined behaviour).
float exp_scalar(float v) {
    using namespace cephes;
    if (std::isnan(v)) return v;
    if (v > exp_highest) return INFINITY;
    v = std::max(v, exp_lowest);
    const float fx = std::floor(v * log2e + 0.5f);
    v = v - fx * ln2_hi - fx * ln2_lo;
    float y = exp_poly[0];
    for (int i = 1; i < 6; ++i) y = y * v + exp_poly[i];
    y = y * v * v + v + 1.0f;
    const std::uint32_t bits = static_cast<std::uint32_t>(static_cast<std::int32_t>(fx) + 127) << 23;
    float two_fx;
    std::memcpy(&two_fx, &bits, sizeof two_fx);
    return y * two_fx;
}

}  // namespace

bool is_power_of_two(float scale) {
    std::uint32_t bits;
    std::memcpy(&bits, &scale, sizeof bits);
    const std::uint32_t exponent = (bits >> 23) & 0xFF;
    return (bits & 0x7FFFFFu) == 0 && exponent != 0 && exponent != 0xFF;  // ±2^e, a normal float (1/scale exact then)
}

// scale: statistics of the raw scores, row /= scale, max of the result.
RowStats scale_scalar(float* row, std::size_t n, float scale, float& max, std::size_t from) {
    RowStats r{INFINITY, -INFINITY, 0.0f};
    const bool multiply = is_power_of_two(scale);
    const float inverse = 1.0f / scale;
    for (std::size_t j = from; j < n; ++j) {
        r.min = std::min(r.min, row[j]);
        r.max = std::max(r.max, row[j]);
        r.sum += row[j];
        row[j] = multiply ? row[j] * inverse : row[j] / scale;
        max = std::max(max, row[j]);
    }
    return r;
}

RowStats row_stats_scalar(const float* v, std::size_t n) {
    const std::size_t m = n / 8 * 8;
    RowStats r{v[0], v[0], 0.0f};
    if (m) {
        float lo[8], hi[8], l[8];
        for (int q = 0; q < 8; ++q) lo[q] = INFINITY, hi[q] = -INFINITY, l[q] = 0.0f;
        for (std::size_t j = 0; j < m; j += 8)
            for (int q = 0; q < 8; ++q) {  // as _mm256_min_ps(lo, x) and _mm256_max_ps(hi, x)
                const float x = v[j + q];
                lo[q] = lo[q] < x ? lo[q] : x;
                hi[q] = hi[q] > x ? hi[q] : x;
                l[q] += x;
            }
        r.min = *std::min_element(lo, lo + 8);
        r.max = *std::max_element(hi, hi + 8);
        r.sum = ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
    }
    for (std::size_t j = m; j < n; ++j) {
        r.min = std::min(r.min, v[j]);
        r.max = std::max(r.max, v[j]);
        r.sum += v[j];
    }
    return r;
}

FiniteRange finite_sums_scalar(const float* v, std::size_t n, std::size_t lane0, double* sums) {
    FiniteRange r{INFINITY, -INFINITY, 0};
    for (std::size_t i = 0, lane = lane0 % finite_lanes; i < n; ++i, lane = lane + 1 == finite_lanes ? 0 : lane + 1) {
        const float x = v[i];
        if (!(x - x == 0.0f)) {  // inf or NaN
            ++r.non_finite;
            continue;
        }
        sums[lane] += static_cast<double>(x);
        r.min = x < r.min ? x : r.min;
        r.max = x > r.max ? x : r.max;
    }
    return r;
}

FiniteRange finite_sums(const float* v, std::size_t n, std::size_t lane0, double* sums) {
#if defined(ATTNWALK_HAVE_AVX2)
    if (has_avx512()) return finite_sums_avx512(v, n, lane0, sums);
    if (has_avx2()) return finite_sums_avx2(v, n, lane0, sums);
#endif
    return finite_sums_scalar(v, n, lane0, sums);
}

void pack_keys(const float* k, std::size_t ldk, std::size_t n, std::size_t d, std::vector<float>& out) {
    out.resize((n + key_panel - 1) / key_panel * key_panel * d);
    float* panel = out.data();
    for (std::size_t c0 = 0; c0 < n; c0 += key_panel, panel += d * key_panel)
        for (std::size_t p = 0; p < d; ++p)
            for (std::size_t c = 0; c < key_panel; ++c) panel[p * key_panel + c] = c0 + c < n ? k[(c0 + c) * ldk + p] : 0.0f;
}

void sgemm_loop_plain(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a,
                      std::size_t lda, const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
    sgemm_loop_body(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

bool use_attention_kernels(std::size_t d, std::size_t rows) { return has_avx512() && d % 16 == 0 && rows >= key_panel; }

RowStats row_stats(const float* v, std::size_t n) {
#if defined(ATTNWALK_HAVE_AVX2)
    if (has_avx2()) return row_stats_avx2(v, n);
#endif
    return row_stats_scalar(v, n);
}

// row = exp(row − max); returns the sum.
float exp_scalar_row(float* row, std::size_t n, float max, std::size_t from) {
    float sum = 0.0f;
    for (std::size_t j = from; j < n; ++j) sum += (row[j] = exp_scalar(row[j] - max));
    return sum;
}

// row *= inv; returns the weights' statistics.
RowStats normalise_scalar(float* row, std::size_t n, float inv, std::size_t from) {
    RowStats r{INFINITY, -INFINITY, 0.0f};
    for (std::size_t j = from; j < n; ++j) {
        row[j] *= inv;
        r.min = std::min(r.min, row[j]);
        r.max = std::max(r.max, row[j]);
        r.sum += row[j];
    }
    return r;
}

std::pair<RowStats, RowStats> softmax_row_scalar(float* row, std::size_t n, float scale) {
    float max = -INFINITY;
    const RowStats raw = scale_scalar(row, n, scale, max, 0);
    const float inv = 1.0f / exp_scalar_row(row, n, max, 0);
    return {raw, normalise_scalar(row, n, inv, 0)};
}

const float* mxfp4_table() {
    // every code at every scale, once: FP4[code] · 2^(s − 127) is exact in float32 (or ±inf)
    static const std::vector<float> table = [] {
        constexpr float fp4_values[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
        std::vector<float> t(256 * 16);
        for (int s = 0; s < 256; ++s)
            for (int v = 0; v < 16; ++v) t[static_cast<std::size_t>(s * 16 + v)] = std::ldexp(fp4_values[v], s - 127);
        return t;
    }();
    return table.data();
}

void mxfp4_row_loop(const std::uint8_t* blocks, const std::uint8_t* scales, std::size_t groups, float* out) {
    const float* table = mxfp4_table();
    for (std::size_t g = 0; g < groups; ++g) {
        const float* scaled = table + scales[g] * 16;  // the 16 values at this group's scale
        for (std::size_t i = 0; i < 16; ++i) {
            const std::uint8_t byte = blocks[g * 16 + i];
            out[g * 32 + 2 * i] = scaled[byte & 0x0F];
            out[g * 32 + 2 * i + 1] = scaled[byte >> 4];
        }
    }
}

void mxfp4_dots_loop(const float* row, std::size_t k, const float* x, std::size_t n, float* y, std::size_t ldy) {
    for (std::size_t t = 0; t < n; ++t) {
        const float* xt = x + t * k;
        float lane[16] = {};
        for (std::size_t c = 0; c < k; c += 16)
            for (std::size_t q = 0; q < 16; ++q) lane[q] += xt[c + q] * row[c + q];
        float sum = 0.0f;
        for (float v : lane) sum += v;
        y[t * ldy] = sum;
    }
}

bool has_avx2_fma() {
#if defined(ATTNWALK_HAVE_AVX2)
    static const bool yes = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
    return yes;
#else
    return false;
#endif
}

bool has_avx512() {
#if defined(ATTNWALK_HAVE_AVX2)
    static const bool yes = __builtin_cpu_supports("avx512f");
    return yes;
#else
    return false;
#endif
}

std::pair<RowStats, RowStats> softmax_row(float* row, std::size_t n, float scale) {
#if defined(ATTNWALK_HAVE_AVX2)
    if (has_avx2()) return softmax_row_avx2(row, n, scale);
#endif
    return softmax_row_scalar(row, n, scale);
}

std::array<std::pair<RowStats, RowStats>, 2> softmax_rows(float* a, std::size_t na, float* b, std::size_t nb, float scale) {
#if defined(ATTNWALK_HAVE_AVX2)
    if (has_avx2()) return softmax_rows_avx2(a, na, b, nb, scale);
#endif
    return {softmax_row_scalar(a, na, scale), softmax_row_scalar(b, nb, scale)};
}

void x_sigmoid_scalar(float* x, const float* times, std::size_t n, Sigmoid kind, std::size_t from) {
    const float k = gelu_k;
    for (std::size_t i = from; i < n; ++i) {
        const float v = x[i];
        const float z = kind == Sigmoid::silu ? v : 2.0f * (k * (v + 0.044715f * (v * v * v)));
        const float y = v / (1.0f + exp_scalar(-z));
        x[i] = times ? y * times[i] : y;
    }
}

void sgemm_loop(bool trans_a, bool trans_b, std::size_t m, std::size_t n, std::size_t k, float alpha, const float* a, std::size_t lda,
                const float* b, std::size_t ldb, float beta, float* c, std::size_t ldc) {
#if defined(ATTNWALK_HAVE_AVX2)
    if (has_avx2_fma()) return sgemm_loop_avx2(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
#endif
    sgemm_loop_plain(trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
}

#if defined(ATTNWALK_HAVE_AVX2)
void few_rows(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* a, std::size_t lda, const float* b,
              std::size_t ldb, float* c, std::size_t ldc) {
    if (has_avx512()) return few_rows_avx512(m, j0, j1, k, a, lda, b, ldb, c, ldc);
    few_rows_avx2(m, j0, j1, k, a, lda, b, ldb, c, ldc);
}

void bf16_rows(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* x, std::size_t ldx, const float* xs,
               const std::uint16_t* w, std::size_t ldw, float* y, std::size_t ldy) {
    if (has_avx512()) return bf16_rows_avx512(m, j0, j1, k, x, ldx, xs, w, ldw, y, ldy);
    bf16_rows_avx2(m, j0, j1, k, x, ldx, xs, w, ldw, y, ldy);
}
#endif

void subtract_scaled(double* u, const double* v, double f, std::size_t n) {
#if defined(ATTNWALK_HAVE_AVX2)
    if (has_avx512()) return subtract_scaled_avx512(u, v, f, n);
    if (has_avx2()) return subtract_scaled_avx2(u, v, f, n);
#endif
    for (std::size_t c = 0; c < n; ++c) u[c] -= f * v[c];
}

void add_rounded_products(float* a, const double* u, double p, std::size_t n) {
#if defined(ATTNWALK_HAVE_AVX2)
    if (has_avx512()) return add_rounded_products_avx512(a, u, p, n);
    if (has_avx2()) return add_rounded_products_avx2(a, u, p, n);
#endif
    for (std::size_t c = 0; c < n; ++c) a[c] += static_cast<float>(p * u[c]);
}

void x_sigmoid(float* x, const float* times, std::size_t n, Sigmoid kind) {
#if defined(ATTNWALK_HAVE_AVX2)
    if (has_avx2()) return x_sigmoid_avx2(x, times, n, kind);
#endif
    x_sigmoid_scalar(x, times, n, kind, 0);
}

}  // namespace attnwalk::fast
