// Multi-head latent attention (MLA, DeepSeek-V2/V3): the keys and values of every head are
// made from one small latent vector per token, which is all a cache has to keep, beside
// one rotary key part shared by the heads. Written as Hugging Face's DeepseekV3Attention
// computes it (its plain PyTorch path), and in the absorbed form, where W_UK moves into
// the query and the scores come straight from the latent.
//
//   X (B,T,d) -> Q = X·W_q, or RMSNorm(X·W_qa)·W_qb        (B,T,H·(d_nope+d_rope))
//   X·W_kva = [c | k_rope]                                   (B,T,r + d_rope)
//   c_KV = RMSNorm(c)                                        (B,T,r)        cached
//   c_KV·W_kvb = [k_nope | v] per head                       (B,H,T,d_nope), (B,H,T,d_v)
//   RoPE on q_rope and on k_rope (one for all heads)         cached: k_rope
//   ω = q_nope·k_nopeᵀ + q_rope·k_ropeᵀ                      (B,H,T,T)
//   A = softmax(ω·scaling, causal), scaling = (d_nope+d_rope)^(−1/2)
//   Z_h = A_h·V_h, heads concatenated, Y = Z·W_o             (B,T,d_out)
//
// Absorbed: q̃_h = q_nope,h·W_UK,hᵀ (B,H,T,r); ω_nope = q̃·c_KVᵀ; Z_h = (A_h·c_KV)·W_UV,h.
//
// With an indexer (DeepSeek-V3.2, ops/sparse_attention.hpp's latent_indexer): each query
// keeps the index_topk keys its index scores rank highest (among those it sees), and the
// others get −∞ before the softmax, as DeepseekV32Attention folds them into its mask.
#pragma once

#include <cstddef>
#include <optional>

#include "attnwalk/ops/attention.hpp"
#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/sparse_attention.hpp"
#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

struct LatentWeights {
    std::optional<Linear> q_proj;              // d → H·(d_nope + d_rope), without a query latent
    std::optional<Linear> q_a_proj, q_b_proj;  // d → r_q, r_q → H·(d_nope + d_rope): the query's own latent
    Vec q_a_norm;                              // r_q, the RMSNorm between them (with q_a_proj)
    Linear kv_a_proj;                          // d → r + d_rope ("kv_a_proj_with_mqa")
    Vec kv_a_norm;                             // r
    Linear kv_b_proj;                          // r → H·(d_nope + d_v): W_UK and W_UV, head by head
    Linear o_proj;                             // H·d_v → d_out
    std::size_t heads = 1, nope = 0, rope = 0, value = 0;  // H, d_nope, d_rope, d_v
    float eps = 1e-6f;
    std::optional<LatentIndexerWeights> indexer;  // DeepSeek-V3.2's lightning indexer (with a query latent)

    std::size_t d_in() const { return kv_a_proj.in(); }
    std::size_t rank() const { return kv_b_proj.in(); }  // r, kv_lora_rank
    std::size_t query_rank() const { return q_a_proj ? q_a_proj->out() : 0; }
    std::size_t qk_head() const { return nope + rope; }
    // UsageError when the matrices do not fit the sizes.
    void check() const;
};

struct LatentSpec {
    bool causal = true;
    RopeParams rope;                  // on the d_rope features
    bool interleave = false;          // rope_interleave: the pairs are (0,1), (2,3), … in the weights' order
    std::size_t position0 = 0;
    std::optional<float> scaling;     // multiplies the scores; default (d_nope + d_rope)^(−1/2)
    // A latent cache: the earlier tokens' c_KV (B,S,r) and rotated k_rope (B,S,d_rope), which
    // the new tokens (at position0 …) attend to before themselves. Null: none.
    const Cube* past_latent = nullptr;
    const Cube* past_k_rope = nullptr;
    // With an indexer: its keys of the cache's tokens (B,S,d_I), normed and rotated. Null: none.
    const Cube* past_index_keys = nullptr;
};

struct LatentForward {
    float scaling = 1.0f;
    Cube q_a, q_a_normed;            // (B,T,r_q), with a query latent
    Cube q;                          // (B,T,H·(d_nope+d_rope))
    Cube kv_a;                       // (B,T,r+d_rope)
    Cube latent;                     // (B,S,r) c_KV, normalised: the cache's and the new tokens' (S = cached + T)
    Hyper q_nope, q_rope_plain, q_rope;  // (B,H,T,d_nope), (B,H,T,d_rope) before and after RoPE
    Cube k_rope_plain, k_rope;       // (B,T,d_rope) the new tokens' before RoPE, (B,S,d_rope) all rotated: one for every head
    Hyper k_nope, v;                 // (B,H,S,d_nope), (B,H,S,d_v)
    std::optional<Rope> tables;
    Hyper scores_nope, scores_rope, scores;  // (B,H,T,S), before the mask
    std::optional<IndexerForward> index;  // with an indexer: its queries, keys (all S), gates and scores (B,T,S)
    std::optional<TopKeys> top;           // with an indexer: the keys each query keeps (top.kept (B,T,S): 1 kept and visible)
    Hyper weights;                   // (B,H,T,S)
    Cube row_max, row_sum;           // (B,H,T) the softmax's max and sum of exponentials per row
    Hyper head_outputs;              // (B,H,T,d_v)
    Cube context;                    // (B,T,H·d_v)
    Cube output;                     // (B,T,d_out)
};

struct LatentAbsorbed {
    Hyper q_latent;        // (B,H,T,r) q_nope,h·W_UK,hᵀ
    Hyper scores_nope;     // (B,H,T,T) q̃·c_KVᵀ
    Hyper scores, weights; // with the rotary part
    Hyper latent_context;  // (B,H,T,r) A_h·c_KV
    Hyper head_outputs;    // (B,H,T,d_v) (A_h·c_KV)·W_UV,h
    Cube output;           // (B,T,d_out)
};

LatentForward latent_attention_forward(const Cube& x, const LatentWeights& w, const LatentSpec& spec);
// The same layer with W_UK absorbed into the queries, from `f`'s latent and rotary parts.
// (T queries against f.latent's S tokens.)
LatentAbsorbed latent_attention_absorbed(const LatentForward& f, const LatentWeights& w, const LatentSpec& spec);

}  // namespace attnwalk
