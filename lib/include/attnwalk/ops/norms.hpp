// Normalisation over the last axis (C features) of (B,T,C).
#pragma once

#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

// The kinds a model family may choose; a family adds its kind here and in normalise().
enum class NormKind { layer_norm };  // nn.LayerNorm: scale and shift

// The weights of one norm: scale (and shift) of C.
struct Norm {
    Vec scale, shift;
};

// y = (x − mean) / √(var + eps) · scale + shift, the biased variance (nn.LayerNorm).
Cube layer_norm(const Cube& x, const Vec& scale, const Vec& shift, float eps);
// The norm of this kind.
Cube normalise(const Cube& x, const Norm& norm, NormKind kind, float eps);

}  // namespace attnwalk
