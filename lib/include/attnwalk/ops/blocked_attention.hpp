// Multi-head attention at model size, for a summary: the fused MultiHeadAttention
// forward without materialising any T×T tensor of all heads.
//
//   X (B,T,d_in) -> [Q K V] = X·[W_query W_key W_value] (+ b)   one buffer, rows of 3·d_out
//   per (batch, head), in blocks of R query rows, on every core:
//     S = Q_h[rows]·K_h[0:last row]ᵀ     only the keys a causal row can see
//     P = softmax(S / √d_h) row by row   scale, max, exp, sum, × 1/sum fused (kernels.hpp)
//     Z[rows, head columns] = P·V_h[0:last row]   written straight into the concatenation
//   Y = Z·W_o + b_o
//
// Every intermediate is kept only as its Stats (min, max, mean, checksum, row sums);
// only the output keeps its data. A test checks it against attention_forward.
#pragma once

#include <vector>

#include "attnwalk/ops/attention.hpp"
#include "attnwalk/stats.hpp"

namespace attnwalk::fast {

struct BlockedResult {
    Stats queries, keys, values;  // the projections (the split views have the same numbers)
    Stats scores;                 // causal: the triangle j ≤ i only (causal_triangle)
    Stats mask;                   // causal: from its definition
    Stats weights;                // with row sums; masked weights count as exact zeros
    Stats head_outputs;           // = the concatenated context
    Stats output_summary;
    Cube output;                    // (B,T,d_out)
    struct {
        double query = 0, key = 0, value = 0, scores = 0, softmax = 0, values = 0, output = 0;
    } seconds;                      // wall time per phase (the attention's phases split by thread time)
    struct {
        Work query, key, value, scores, values, output;
    } work;                         // the products' work per phase (scores and values: half the attention's each)
};

// Fused weights with out_proj; x is (B,T,d_in).
BlockedResult blocked_attention(const Cube& x, const AttentionWeights& weights, bool causal);

// The same core for heads already made (project_heads: QK-norm and RoPE applied), as
// today's models need it: queries (B,H,T,d_h) against keys and values (B,G,Tk,d_h), query
// head h reading key/value head h / (H/G); query row r is key position Tk − T + r; causal,
// and a window W (0: none) keeps only the last W keys of each row; the scores are divided
// by `scale`; `sinks` (H learned logits, or null) join each row's softmax. Returns the
// heads' outputs concatenated, (B,T,H·d_h), with no T×T tensor.
Cube blocked_heads(const Hyper& qh, const Hyper& kh, const Hyper& vh, float scale, bool causal, std::size_t window,
                   const Vec* sinks = nullptr);

// The bytes it holds: no T×T tensor, a block of 128 rows per core.
double blocked_bytes(std::size_t batch, std::size_t tokens, std::size_t d_in, std::size_t width);

}  // namespace attnwalk::fast
