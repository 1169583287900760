// The kvshare lesson's call: cross-layer KV sharing on a seeded stack (lessons/kvshare.cpp).
// A lesson's own header: its spec and its walk, included by its command alone
// (app/commands/kvshare.cpp) and its tests.
#pragma once

#include <cstddef>
#include <cstdint>

#include "attnwalk/lessons/lessons.hpp"

namespace attnwalk {

// A stack of the textbook's causal multi-head attention layers (MultiHeadAttentionWithKVSharing,
// ch04/10_kv-sharing) on weights drawn as nn.Linear draws them after torch.manual_seed(seed),
// layer after layer in construction order (W_query, W_key, W_value, out_proj): layer 1
// reads the input (d_in), the others the layer before (d_out). The first `producing`
// layers make their own keys and values; the later ones reuse the last producer's.
struct KvShareSpec {
    std::size_t layers = 4, producing = 2;  // n_layers, n_kv_producing_layers
    std::size_t heads = 2, d_out = 4;
    std::uint64_t seed = 123;
    // The cache's size, by the textbook's formula: tokens (0: the input's) and bytes per
    // number; H and d_k of another model (0: the stack's) and G key/value heads to compare
    // grouped-query attention with (0: none).
    std::size_t context_tokens = 0, bytes_per_value = 4;
    std::size_t cache_heads = 0, cache_head_dim = 0, kv_heads = 0;
};
Trace walk_kvshare(const Embeddings& input, const KvShareSpec& spec, const Recording& rec);
Cost kvshare_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, const KvShareSpec& spec);

}  // namespace attnwalk
