#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "kernels.hpp"

namespace attnwalk::fast {

namespace {

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

// scale: statistics of the raw scores, row /= scale, max of the result.
RowStats scale_scalar(float* row, std::size_t n, float scale, float& max, std::size_t from) {
    RowStats r{INFINITY, -INFINITY, 0.0f};
    for (std::size_t j = from; j < n; ++j) {
        r.min = std::min(r.min, row[j]);
        r.max = std::max(r.max, row[j]);
        r.sum += row[j];
        row[j] = row[j] / scale;
        max = std::max(max, row[j]);
    }
    return r;
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

namespace {
#if defined(ATTNWALK_HAVE_AVX2)
bool has_avx2() {
    static const bool avx2 = __builtin_cpu_supports("avx2");
    return avx2;
}
#endif
}  // namespace

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

void x_sigmoid_scalar(float* x, const float* times, std::size_t n, Sigmoid kind, std::size_t from) {
    const float k = gelu_k;
    for (std::size_t i = from; i < n; ++i) {
        const float v = x[i];
        const float z = kind == Sigmoid::silu ? v : 2.0f * (k * (v + 0.044715f * (v * v * v)));
        const float y = v / (1.0f + exp_scalar(-z));
        x[i] = times ? y * times[i] : y;
    }
}

void x_sigmoid(float* x, const float* times, std::size_t n, Sigmoid kind) {
#if defined(ATTNWALK_HAVE_AVX2)
    if (has_avx2()) return x_sigmoid_avx2(x, times, n, kind);
#endif
    x_sigmoid_scalar(x, times, n, kind, 0);
}

}  // namespace attnwalk::fast
