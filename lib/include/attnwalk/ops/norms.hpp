// Normalisation over the last axis (C features) of (B,T,C).
#pragma once

#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

// y = (x − mean) / √(var + eps) · scale + shift, the biased variance (nn.LayerNorm).
Cube layer_norm(const Cube& x, const Vec& scale, const Vec& shift, float eps);

}  // namespace attnwalk
