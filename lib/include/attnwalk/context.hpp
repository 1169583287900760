// Context vectors: each token's weighted sum of the value vectors.
#pragma once

#include "attnwalk/tensor.hpp"

namespace attnwalk {

// Z = W·V for every batch element: (B,T,T)·(B,T,d) -> (B,T,d)
inline Cube context_vectors(const Cube& weights, const Cube& values) {
    return matmul_batched(weights, values);
}

// z = Σ_j w_j·v_j for one query per batch element: (B,T)·(B,T,d) -> (B,d)
Mat query_context(const Mat& weights, const Cube& values);

}  // namespace attnwalk
