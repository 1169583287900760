// Multi-head attention, the textbook's two forms.
//
//   fused (MultiHeadAttention): one W_query/W_key/W_value of d_in×d_out; Q, K, V are
//     split into H heads of d_h = d_out/H columns (view (B,T,H,d_h) + transpose to
//     (B,H,T,d_h)); scaled causal attention per head; the heads are concatenated back to
//     (B,T,d_out) and projected by out_proj = Linear(d_out, d_out) with bias.
//   wrapper (MultiHeadAttentionWrapper): H independent causal heads of width d_out each,
//     concatenated to (B,T,H·d_out), no out_proj.
//
// The walk itself is walk_mha (walk.hpp); this header holds its building blocks.
#pragma once

#include <cstddef>

#include "attnwalk/tensor.hpp"

namespace attnwalk {

// (B,T,H·d_h) -> (B,H,T,d_h): the view + transpose(1, 2) of the fused form.
Hyper split_heads(const Cube& x, std::size_t heads);
// (B,H,T,d_h) -> (B,T,H·d_h): transpose(1, 2) + contiguous view, the inverse of split_heads.
Cube merge_heads(const Hyper& x);

}  // namespace attnwalk
