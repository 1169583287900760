// DeepSeek Sparse Attention's selection (DSA, DeepSeek-V3.2): a lightning indexer scores
// every earlier key for every query with a few small ReLU heads, and each query keeps the
// k keys it scores highest; the attention itself is the usual softmax over those keys.
// Written as the textbook's bonus material ch04/09_dsa computes it.
//
//   X (B,T,d_in); H_I index heads of d_I
//   q^I = X·W_q_index                       (B,T,H_I·d_I)
//   k^I = X·W_k_index                       (B,T,d_I)     one key per token, shared by the heads
//   R[j,t,s] = ReLU(q^I_t,j·k^I_s · d_I^−½)   (B,H_I,T,T)
//   w = softmax_j(X·W_weights)               (B,T,H_I)     normalised across the index heads
//   I[t,s] = Σ_j w[t,j]·R[j,t,s]             (B,T,T)       −∞ after the query (causal)
//   keep the top k of each row of I, as torch.topk picks them (ties included)
//
// And as Hugging Face's DeepseekV32Indexer computes it inside a DeepSeek-V3.2 layer
// (latent_indexer, for model/blocks/latent.cpp): the queries from the layer's normed query
// latent, q^I = c_Q·W_q_bᵀ ("wq_b"); the keys k^I = LayerNorm(X·W_kᵀ) ("wk", "k_norm");
// RoPE (half-split) on the first d_rope features of both; the gate a plain linear weight,
// w = X·W_projᵀ·H_I^−½ ("weights_proj"), not softmaxed; the keys of earlier calls cached, each
// query seeing the keys up to its own.
#pragma once

#include <cstddef>
#include <vector>

#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/rope_params.hpp"
#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

struct IndexerWeights {
    Linear query;  // d_in × H_I·d_I ("W_q_index")
    Linear key;    // d_in × d_I ("W_k_index")
    Linear gates;  // d_in × H_I ("W_weights")
    std::size_t heads = 1;  // H_I

    std::size_t head_dim() const { return key.out(); }  // d_I
    // UsageError when the matrices do not fit the sizes.
    void check() const;
};

struct IndexerForward {
    float scale = 1.0f;       // d_I^−½ in float32, what each dot product is multiplied by
    float gate_scale = 1.0f;  // latent_indexer: H_I^−½ in float32, what each gate is multiplied by (lightning_indexer: 1, its gates softmaxed)
    Cube q;                   // (B,T,H_I·d_I)
    Hyper qh;                 // (B,H_I,T,d_I) the same, viewed per index head
    Cube k;                   // (B,T,d_I)
    Hyper dots;               // (B,H_I,T,T) ReLU(q·k · scale), every pair (the causal mask comes after)
    Cube gates;               // (B,T,H_I) softmax_j(X·W_weights) (lightning_indexer), X·W_projᵀ · gate_scale (latent_indexer)
    Cube scores;              // (B,T,T) I, −∞ where the key comes after the query (causal)
    // latent_indexer: q is wq_b's output, before RoPE; qh after it; k every key (B,S,d_I), the
    // cache's then the new tokens', normed and rotated; dots (B,H_I,T,S), scores (B,T,S).
    Cube k_normed;            // (B,T,d_I) the new tokens' LayerNorm(X·W_kᵀ), before RoPE
};

// Throws UsageError when the weights do not fit x.
IndexerForward lightning_indexer(const Cube& x, const IndexerWeights& w, bool causal = true);

// Index head h's q^I_t·k^I_s before the scale, its d_I products added in order (what the
// indexer multiplies by the scale and puts through the ReLU).
float index_dot(const IndexerForward& f, std::size_t b, std::size_t h, std::size_t t, std::size_t s);
// The terms gates[t,j]·dots[j,t,s] of one index score, j in order, and their sum as the
// indexer adds them in float32 (IndexerForward::scores bit for bit where the key is visible).
std::vector<float> index_terms(const IndexerForward& f, std::size_t b, std::size_t t, std::size_t s);
float index_score(const IndexerForward& f, std::size_t b, std::size_t t, std::size_t s);

// DeepSeek-V3.2's indexer (Hugging Face's DeepseekV32Indexer): its weights as a layer holds them.
struct LatentIndexerWeights {
    Linear wq_b;               // r_q → H_I·d_I: the queries, from the layer's normed query latent
    Linear wk;                 // d → d_I: one key per token
    Vec k_norm, k_norm_bias;   // the keys' LayerNorm over d_I ("k_norm", nn.LayerNorm(d_I, eps=1e-6))
    Linear weights_proj;       // d → H_I: the gates
    std::size_t heads = 1;     // H_I (index_n_heads)
    std::size_t rope = 0;      // the first d_rope features of q^I and k^I turn (qk_rope_head_dim)
    std::size_t topk = 1;      // index_topk: the keys each query keeps
    float eps = 1e-6f;

    std::size_t head_dim() const { return wk.out(); }  // d_I (index_head_dim)
    // UsageError when the matrices do not fit the sizes.
    void check() const;
};

// The indexer of T new tokens at positions position0 … (X (B,T,d), the query latent c_Q
// (B,T,r_q)), against `past_keys` (B,P,d_I, normed and rotated; null: none) and themselves:
// key s is visible to query t when s ≤ P + t, the others −∞. `rope` gives the layer's RoPE
// (its base and scaling; rotary_dim ignored, d_rope turns).
IndexerForward latent_indexer(const Cube& x, const Cube& q_latent, const LatentIndexerWeights& w, const RopeParams& rope,
                              std::size_t position0, const Cube* past_keys = nullptr);

struct TopKeys {
    std::size_t k = 0;                       // min(k asked, T): what torch.topk was asked for
    std::vector<std::size_t> indices;        // (B,T,k) the keys picked, in torch.topk's order (highest first)
    Cube kept;                               // (B,T,T) 1 where the key is picked and visible, 0 elsewhere
    Mat kth;                                 // (B,T) the k-th largest score of each row (−∞ when the row has fewer than k visible keys)
};

// The k highest scores of each row of `scores` (B,T,S), with torch.topk's CPU algorithm
// (nth_element, or partial_sort when 64·k ≤ S, with its comparison), so that ties are
// broken as PyTorch breaks them. UsageError for k = 0.
TopKeys top_k_keys(const Cube& scores, std::size_t k);

// 0 where a row keeps the key, −∞ elsewhere, of batch element b: what the attention adds
// to its scores (the textbook's sparse mask, the causal part included).
Mat sparse_bias(const TopKeys& top, std::size_t b);

// Multiply-adds of DSA's two parts for a query that sees `keys` keys: the indexer,
// H_I·(d_I + 1) per key (the dot products and the gated sum), and the attention over
// min(k, keys) keys, 2·d_out per key (the scores and the weighted values of every head).
struct SparseWork {
    double indexer = 0, full = 0, sparse = 0;
};
SparseWork sparse_work_per_query(std::size_t keys, std::size_t index_heads, std::size_t index_dim, std::size_t d_out, std::size_t k);
// The same summed over a causal sequence of `tokens` queries (query t sees t keys).
SparseWork sparse_work_per_sequence(std::size_t tokens, std::size_t index_heads, std::size_t index_dim, std::size_t d_out, std::size_t k);

}  // namespace attnwalk
