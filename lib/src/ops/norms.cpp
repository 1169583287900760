#include "attnwalk/ops/norms.hpp"

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/rows.hpp"

namespace attnwalk {

Cube layer_norm(const Cube& x, const Vec& scale, const Vec& shift, float eps) {
    const std::size_t C = x.shape(2), rows = x.size() / (C ? C : 1);
    if (C == 0) throw UsageError("layer norm over 0 features: the model's width is 0");
    Cube y = fresh<3>(x.shape());
    for (std::size_t r = 0; r < rows; ++r) {
        const float* in = x.data() + r * C;
        float* out = y.data() + r * C;
        float mean = 0.0f;
        for (std::size_t c = 0; c < C; ++c) mean += in[c];
        mean /= static_cast<float>(C);
        float var = 0.0f;
        for (std::size_t c = 0; c < C; ++c) var += (in[c] - mean) * (in[c] - mean);
        var /= static_cast<float>(C);
        const float inv = 1.0f / std::sqrt(var + eps);
        for (std::size_t c = 0; c < C; ++c) out[c] = (in[c] - mean) * inv * scale(c) + shift(c);
    }
    return y;
}

void rms_norm_rows(float* data, std::size_t rows, std::size_t n, const Vec& scale, float eps) {
    if (n == 0) throw UsageError("RMSNorm over 0 features: the model's width is 0");
    std::vector<float> squares(n);
    for (std::size_t r = 0; r < rows; ++r) {
        float* row = data + r * n;
        for (std::size_t c = 0; c < n; ++c) squares[c] = row[c] * row[c];
        const float mean = sum_of(squares.data(), n) / static_cast<float>(n);
        const float inv = 1.0f / std::sqrt(mean + eps);  // torch.rsqrt
        for (std::size_t c = 0; c < n; ++c) row[c] = (row[c] * inv) * scale(c);
    }
}

Cube rms_norm(const Cube& x, const Vec& scale, float eps) {
    Cube y = fresh<3>(x.shape());
    std::copy(x.begin(), x.end(), y.begin());
    rms_norm_rows(y.data(), y.size() / (x.shape(2) ? x.shape(2) : 1), x.shape(2), scale, eps);
    return y;
}

Cube layer_norm_no_bias(const Cube& x, const Vec& scale, float eps) {
    const std::size_t C = x.shape(2), rows = x.size() / (C ? C : 1);
    if (C == 0) throw UsageError("layer norm over 0 features: the model's width is 0");
    Cube y = fresh<3>(x.shape());
    std::vector<float> centred(C), squares(C);
    for (std::size_t r = 0; r < rows; ++r) {
        const float* in = x.data() + r * C;
        float* out = y.data() + r * C;
        const float mean = sum_of(in, C) / static_cast<float>(C);  // torch.mean: its sum's order
        for (std::size_t c = 0; c < C; ++c) {
            centred[c] = in[c] - mean;
            squares[c] = centred[c] * centred[c];
        }
        const float variance = sum_of(squares.data(), C) / static_cast<float>(C);
        const float inv = 1.0f / std::sqrt(variance + eps);  // torch.rsqrt
        for (std::size_t c = 0; c < C; ++c) out[c] = scale(c) * (centred[c] * inv);
    }
    return y;
}

Cube normalise(const Cube& x, const Norm& norm, NormKind kind, float eps) {
    switch (kind) {
        case NormKind::layer_norm: return layer_norm(x, norm.scale, norm.shift, eps);
        case NormKind::layer_norm_no_bias: return layer_norm_no_bias(x, norm.scale, eps);
        case NormKind::rms_norm: return rms_norm(x, norm.scale, eps);
    }
    throw std::logic_error("unknown norm kind");
}

}  // namespace attnwalk
