// The mla lesson's call: multi-head latent attention on seeded weights (lessons/mla.cpp).
// A lesson's own header: its spec and its walk, included by its command alone
// (app/commands/mla.cpp) and its tests; what lessons share is lessons.hpp.
#pragma once

#include <cstddef>
#include <cstdint>

#include "attnwalk/lessons/lessons.hpp"

namespace attnwalk {

// Multi-head latent attention (DeepSeek-V2/V3) on weights drawn as nn.Linear draws them
// (torch.manual_seed(seed), DeepseekV3Attention's construction order, no biases).
struct MlaSpec {
    std::size_t heads = 2;
    std::size_t rank = 2;        // r, kv_lora_rank: the latent per token
    std::size_t query_rank = 0;  // r_q, q_lora_rank: 0 = the queries straight from X
    std::size_t nope = 2, rope = 2, value = 2;  // qk_nope_head_dim, qk_rope_head_dim, v_head_dim
    double rope_base = 10000.0;
    bool interleave = false;     // rope_interleave (DeepSeek-V3's checkpoints)
    std::uint64_t seed = 123;
    // The cache's size: GQA's G for the comparison (0: H/2, or 1 for odd H), layers,
    // tokens (0: the input's) and bytes per number.
    std::size_t kv_heads = 0, layers = 1, context_tokens = 0, bytes_per_value = 4;
};
Trace walk_mla(const Embeddings& input, const MlaSpec& spec, const Recording& rec);
Cost mla_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, const MlaSpec& spec);

}  // namespace attnwalk
