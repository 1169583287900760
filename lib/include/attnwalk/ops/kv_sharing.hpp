// Cross-layer KV sharing ("cross-layer attention", Brandon et al. 2024; the textbook's
// ch04/10_kv-sharing): a stack of causal multi-head attention layers in which the first P
// layers make and cache their own keys and values, and every later layer reuses those of
// the last of them, with queries of its own.
//
//   X_1 = the input                                     (B,T,d_in)
//   layer l:  Q_l = X_l·W_q,l, split into heads          (B,H,T,d_h)
//     l ≤ P:  K_l, V_l = X_l·W_k,l, X_l·W_v,l            (B,H,T,d_h), appended to layer l's cache
//     l > P:  K_l, V_l = K_P, V_P                        read from layer P's cache; no projection
//   X_l+1 = concat_h(softmax(causal Q_l·K_lᵀ / √d_h)·V_l)·W_o,l + b_o,l   (B,T,d_out)
#pragma once

#include <cstddef>
#include <memory>
#include <vector>

#include "attnwalk/ops/attention.hpp"
#include "attnwalk/ops/kv_cache.hpp"

namespace attnwalk {

// Per layer, the layer whose keys and values it attends with (0-based): itself for the
// first `producing` layers, the last of them for the rest (GPTModel.forward's loop).
// UsageError unless 1 ≤ producing ≤ layers.
std::vector<std::size_t> kv_sources(std::size_t layers, std::size_t producing);

// The layers, first to last: each a fused AttentionWeights with out_proj (io's Weights).
using LayerStack = std::vector<std::shared_ptr<const AttentionWeights>>;

struct KvSharingForward {
    std::vector<std::size_t> source;  // kv_sources(L, P)
    std::vector<Cube> inputs;         // X_l, what layer l reads (B,T,d_in or d_out)
    std::vector<Forward> layers;      // each layer's forward; a consumer's k, v, kh, vh are its source's
    std::vector<KvCache> caches;      // one per producing layer, after the whole input
    Cube output;                      // X_L+1 (B,T,d_out)
};

// The stack on `x` (every layer fused, with out_proj; layer l + 1 reads layer l's output).
KvSharingForward kv_sharing_forward(const Cube& x, const LayerStack& layers, std::size_t producing);

// The same stack with no cache between the layers: each consumer is handed its keys and
// values as arguments (the textbook's forward(x, shared_kv=(K, V))), made afresh from its
// source layer's input through that layer's W_key and W_value. Returns the output.
Cube kv_handed_forward(const Cube& x, const LayerStack& layers, const std::vector<std::size_t>& source);

}  // namespace attnwalk
