// Multi-head attention at model size (--summary): the fused MultiHeadAttention forward
// pass without materialising any T×T tensor of all heads.
//
//   X (B,T,d_in) -> [Q K V] = X·[W_query W_key W_value] (+ b)   one BLAS product
//   per (batch, head), in blocks of R query rows, on every core:
//     S = Q_h[rows]·K_h[0:last row]ᵀ     only the keys a causal row can see
//     P = softmax(S / √d_h) row by row   scale, mask, max, exp, sum, × 1/sum fused
//     Z[rows, head columns] = P·V_h[0:last row]   written straight into the concatenation
//   Y = Z·W_o + b_o
//
// Each step is recorded as a Summary (min, max, mean, checksum, row sums) with its wall
// time; only the output keeps its data.
#pragma once

#include "attnwalk/projection.hpp"
#include "attnwalk/recorder.hpp"
#include "attnwalk/walk.hpp"

namespace attnwalk {

// Whether `attnwalk mha` takes this path: --summary, the fused variant, no dropout draw.
inline bool mha_at_scale_applies(const WalkOptions& o) {
    return o.summary && !o.wrapper && !(o.dropout > 0.0 && !o.eval);
}

// Records the steps of the fused mha walk (queries … output) for input x (B,T,d_in),
// `heads` heads, causal or not, no dropout.
void mha_at_scale(Recorder& rec, const Cube& x, const MultiHeadWeights& weights, std::size_t heads, bool causal);

}  // namespace attnwalk
