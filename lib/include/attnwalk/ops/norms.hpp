// Normalisation over the last axis (C features) of (B,T,C).
#pragma once

#include "attnwalk/ops/kinds.hpp"
#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

// NormKind: ops/kinds.hpp.

// The weights of one norm: scale (and shift) of C.
struct Norm {
    Vec scale, shift;  // shift: empty for RMSNorm
};

// y = (x − mean) / √(var + eps) · scale + shift, the biased variance (nn.LayerNorm).
Cube layer_norm(const Cube& x, const Vec& scale, const Vec& shift, float eps);
// y = scale · ((x − mean) / √(var + eps)), mean and var as torch.mean sums them (Cohere's
// LayerNorm: no shift).
Cube layer_norm_no_bias(const Cube& x, const Vec& scale, float eps);
// y = x / √(mean(x²) + eps) · scale, in float32 with torch's sum order for the mean
// (HF's LlamaRMSNorm and the textbook's RMSNorm).
Cube rms_norm(const Cube& x, const Vec& scale, float eps);
// The same on each row of `rows`×`n` floats in place: the per-head QK-norm of Qwen3 and Gemma 3.
void rms_norm_rows(float* data, std::size_t rows, std::size_t n, const Vec& scale, float eps);
// The norm of this kind.
Cube normalise(const Cube& x, const Norm& norm, NormKind kind, float eps);

}  // namespace attnwalk
