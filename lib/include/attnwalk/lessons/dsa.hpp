// The dsa lesson's call: DeepSeek Sparse Attention on seeded weights (lessons/dsa.cpp).
// A lesson's own header: its spec and its walk, included by its command alone
// (app/commands/dsa.cpp) and its tests; what lessons share is lessons.hpp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>

#include "attnwalk/lessons/lessons.hpp"

namespace attnwalk {

// The textbook's MultiHeadAttentionWithDSA (ch04/09_dsa) on weights drawn as nn.Linear draws
// them after torch.manual_seed(seed), in its construction order: W_query, W_key, W_value
// (no bias), out_proj, then the indexer's W_q_index, W_k_index, W_weights (no bias).
struct DsaSpec {
    std::size_t d_out = 4, heads = 2;             // the attention: H heads of d_out / H
    std::size_t index_heads = 2, index_dim = 2;   // H_I index heads of d_I features
    std::size_t topk = 3;                          // k: the keys each query keeps (capped at T)
    std::uint64_t seed = 123;
    std::size_t context_tokens = 0;                // the work table's tokens (0: the input's)
    std::optional<Cell> explain;                   // one cell of one head, written out
    std::size_t explain_head = 0;
};
Trace walk_dsa(const Embeddings& input, const DsaSpec& spec, const Recording& rec);
Cost dsa_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, const DsaSpec& spec);

}  // namespace attnwalk
