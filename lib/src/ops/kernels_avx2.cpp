// Built on x86-64 only (lib/CMakeLists.txt); called only when the CPU has AVX2.
#include <immintrin.h>

#include <algorithm>
#include <cmath>

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

__attribute__((target("avx2"))) RowStats scale_avx2(float* row, std::size_t n, float scale, float& max) {
    const std::size_t m = n / 8 * 8;
    if (m == 0) return scale_scalar(row, n, scale, max, 0);
    __m256 lo = _mm256_set1_ps(INFINITY), hi = _mm256_set1_ps(-INFINITY), sum = _mm256_setzero_ps(), top = hi;
    const __m256 s = _mm256_set1_ps(scale);
    for (std::size_t j = 0; j < m; j += 8) {
        const __m256 x = _mm256_loadu_ps(row + j);
        lo = _mm256_min_ps(lo, x);
        hi = _mm256_max_ps(hi, x);
        sum = _mm256_add_ps(sum, x);
        const __m256 y = _mm256_div_ps(x, s);
        _mm256_storeu_ps(row + j, y);
        top = _mm256_max_ps(top, y);
    }
    max = hmax(top);
    return merge({hmin(lo), hmax(hi), hsum(sum)}, scale_scalar(row, n, scale, max, m));
}

// Cephes' expf on 8 lanes, the same steps as exp_scalar (kernels_scalar.cpp): arguments
// below −87.3 give about 1e-38, above 88.38 inf.
__attribute__((target("avx2"))) __m256 exp8(__m256 v) {
    const __m256 lowest = _mm256_set1_ps(-87.3f), highest = _mm256_set1_ps(88.3762626647949f),
                 log2e = _mm256_set1_ps(1.44269504088896341f), half = _mm256_set1_ps(0.5f), c1 = _mm256_set1_ps(0.693359375f),
                 c2 = _mm256_set1_ps(-2.12194440e-4f), one = _mm256_set1_ps(1.0f);
    const __m256 p[6] = {_mm256_set1_ps(1.9875691500e-4f), _mm256_set1_ps(1.3981999507e-3f), _mm256_set1_ps(8.3334519073e-3f),
                         _mm256_set1_ps(4.1665795894e-2f), _mm256_set1_ps(1.6666665459e-1f), _mm256_set1_ps(5.0000001201e-1f)};
    const __m256 overflow = _mm256_cmp_ps(v, highest, _CMP_GT_OQ);
    v = _mm256_min_ps(_mm256_max_ps(v, lowest), highest);
    const __m256 fx = _mm256_floor_ps(_mm256_add_ps(_mm256_mul_ps(v, log2e), half));
    v = _mm256_sub_ps(_mm256_sub_ps(v, _mm256_mul_ps(fx, c1)), _mm256_mul_ps(fx, c2));
    __m256 y = p[0];
    for (int i = 1; i < 6; ++i) y = _mm256_add_ps(_mm256_mul_ps(y, v), p[i]);
    y = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(y, v), v), v), one);
    const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
    y = _mm256_mul_ps(y, _mm256_castsi256_ps(bits));
    return _mm256_blendv_ps(y, _mm256_set1_ps(INFINITY), overflow);
}

__attribute__((target("avx2"))) float exp_avx2(float* row, std::size_t n, float max) {
    const std::size_t m = n / 8 * 8;
    __m256 sum = _mm256_setzero_ps();
    const __m256 mx = _mm256_set1_ps(max);
    for (std::size_t j = 0; j < m; j += 8) {
        const __m256 y = exp8(_mm256_sub_ps(_mm256_loadu_ps(row + j), mx));
        _mm256_storeu_ps(row + j, y);
        sum = _mm256_add_ps(sum, y);
    }
    return hsum(sum) + exp_scalar_row(row, n, max, m);
}

__attribute__((target("avx2"))) RowStats normalise_avx2(float* row, std::size_t n, float inv) {
    const std::size_t m = n / 8 * 8;
    if (m == 0) return normalise_scalar(row, n, inv, 0);
    __m256 lo = _mm256_set1_ps(INFINITY), hi = _mm256_set1_ps(-INFINITY), sum = _mm256_setzero_ps();
    const __m256 k = _mm256_set1_ps(inv);
    for (std::size_t j = 0; j < m; j += 8) {
        const __m256 w = _mm256_mul_ps(_mm256_loadu_ps(row + j), k);
        _mm256_storeu_ps(row + j, w);
        lo = _mm256_min_ps(lo, w);
        hi = _mm256_max_ps(hi, w);
        sum = _mm256_add_ps(sum, w);
    }
    return merge({hmin(lo), hmax(hi), hsum(sum)}, normalise_scalar(row, n, inv, m));
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

__attribute__((target("avx2,fma"))) void few_rows_avx2(std::size_t m, std::size_t j0, std::size_t j1, std::size_t k, const float* a,
                                                        std::size_t lda, const float* b, std::size_t ldb, float* c, std::size_t ldc) {
    // B's rows pass once, in order, 4 at a time, each over the whole column range (long
    // contiguous runs); every row of C takes its 4 multiply-adds per element from them while
    // they sit in L1. Each element is accumulated over k in order with fused multiply-adds,
    // as sgemm's plain loop does.
    const std::size_t w = j1 - j0, w8 = w / 8 * 8;
    for (std::size_t i = 0; i < m; ++i) std::fill(c + i * ldc + j0, c + i * ldc + j1, 0.0f);
    std::size_t p = 0;
    for (; p + 4 <= k; p += 4) {
        const float *b0 = b + p * ldb + j0, *b1 = b0 + ldb, *b2 = b1 + ldb, *b3 = b2 + ldb;
        for (std::size_t i = 0; i < m; ++i) {
            const float* ai = a + i * lda + p;
            const __m256 x0 = _mm256_broadcast_ss(ai), x1 = _mm256_broadcast_ss(ai + 1), x2 = _mm256_broadcast_ss(ai + 2),
                         x3 = _mm256_broadcast_ss(ai + 3);
            float* ci = c + i * ldc + j0;
            for (std::size_t v = 0; v < w8; v += 8) {
                __m256 acc = _mm256_loadu_ps(ci + v);
                acc = _mm256_fmadd_ps(x0, _mm256_loadu_ps(b0 + v), acc);
                acc = _mm256_fmadd_ps(x1, _mm256_loadu_ps(b1 + v), acc);
                acc = _mm256_fmadd_ps(x2, _mm256_loadu_ps(b2 + v), acc);
                acc = _mm256_fmadd_ps(x3, _mm256_loadu_ps(b3 + v), acc);
                _mm256_storeu_ps(ci + v, acc);
            }
            for (std::size_t v = w8; v < w; ++v)
                ci[v] = std::fma(ai[3], b3[v], std::fma(ai[2], b2[v], std::fma(ai[1], b1[v], std::fma(ai[0], b0[v], ci[v]))));
        }
    }
    for (; p < k; ++p) {  // the last rows of B one at a time
        const float* bp = b + p * ldb + j0;
        for (std::size_t i = 0; i < m; ++i) {
            const float aip = a[i * lda + p];
            const __m256 x = _mm256_set1_ps(aip);
            float* ci = c + i * ldc + j0;
            for (std::size_t v = 0; v < w8; v += 8) _mm256_storeu_ps(ci + v, _mm256_fmadd_ps(x, _mm256_loadu_ps(bp + v), _mm256_loadu_ps(ci + v)));
            for (std::size_t v = w8; v < w; ++v) ci[v] = std::fma(aip, bp[v], ci[v]);
        }
    }
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

std::pair<RowStats, RowStats> softmax_row_avx2(float* row, std::size_t n, float scale) {
    float max = -INFINITY;
    const RowStats raw = scale_avx2(row, n, scale, max);
    const float inv = 1.0f / exp_avx2(row, n, max);
    return {raw, normalise_avx2(row, n, inv)};
}

}  // namespace attnwalk::fast
