// A Gated DeltaNet layer as Qwen3-Next's linear-attention layers compute it (Hugging Face's
// Qwen3NextGatedDeltaNet, its plain PyTorch path): no softmax and no cache growing with the
// tokens, but a state of d_k × d_v numbers per head written by the delta rule
// (ops/delta_rule.hpp), and a few tokens of a short convolution.
//
//   x (B,T,C) -> x·W_qkvzᵀ: per key head [q (d_k) | k (d_k) | v (r·d_v) | z (r·d_v)], r = H_v/H_k
//                x·W_baᵀ:   per key head [b (r) | a (r)]
//                (Qwen3.5: x·W_qkvᵀ = [q | k | v], x·W_zᵀ, x·W_bᵀ, x·W_aᵀ, each in the heads' order)
//   [q | k | v] through a causal depthwise convolution of K taps, then SiLU
//   β = σ(b), g = −exp(A_log)·softplus(a + dt_bias), α = exp(g)          (B,T,H_v)
//   q, k repeated to the H_v heads, L2-normalised, q × 1/√d_k; the delta rule   (B,H_v,T,d_v)
//   o = RMSNorm(o)·w ⊙ SiLU(z) per head; y = o·W_outᵀ                    (B,T,C)
#pragma once

#include <cstddef>
#include <optional>

#include "attnwalk/ops/delta_rule.hpp"
#include "attnwalk/ops/deltanet_cache.hpp"
#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

struct GatedDeltaNetWeights {
    Linear in_qkvz, in_ba, out_proj;     // Qwen3-Next's fused projections (per key head [q | k | v | z], [b | a])
    std::optional<Linear> in_qkv, in_z, in_b, in_a;  // or Qwen3.5's four, [q | k | v] already in order
    Mat conv;           // (conv_dim, K): conv1d.weight [conv_dim, 1, K], conv_dim = 2·H_k·d_k + H_v·d_v
    Vec a_log, dt_bias; // (H_v)
    Vec norm;           // (d_v) the gated RMSNorm's weight (multiplied as it is)
    std::size_t k_heads = 1, v_heads = 1, d_k = 0, d_v = 0;
    float eps = 1e-6f;
    std::size_t key_dim() const { return k_heads * d_k; }
    std::size_t value_dim() const { return v_heads * d_v; }
    std::size_t conv_dim() const { return 2 * key_dim() + value_dim(); }
    std::size_t taps() const { return conv.shape(1); }
    void check() const;  // UsageError when the sizes do not fit
};

struct GatedDeltaNetForward {
    Cube q, k, v;      // (B,T,H_k·d_k), (B,T,H_k·d_k), (B,T,H_v·d_v): after the convolution and SiLU
    Cube z;            // (B,T,H_v·d_v) the output gate
    Cube beta, decay;  // (B,T,H_v) β = σ(b) and α = exp(g)
    Cube g;            // (B,T,H_v) the log decays g, as the delta rule reads them
    Hyper outputs;     // (B,H_v,T,d_v) the delta rule's
    Hyper state;       // (B,H_v,d_k,d_v) after the last token
    Hyper effective;   // (B,H_v,T,T) when asked and no state came before: o = A·V
    Cube normed;       // (B,T,H_v·d_v) RMSNorm(o)·w ⊙ SiLU(z), what out_proj reads
    Cube output;       // (B,T,C)
};

// The gates of each token and value head from its two projections b and a (B,T,H_v) and
// the parameters A_log and dt_bias (H_v): β = σ(b), g = −exp(A_log)·softplus(a + dt_bias)
// (torch's softplus, threshold 20), α = exp(g); each in float32, in that order. The
// layer's forward takes them here, and so does the deltanet lesson.
struct GatedDeltaNetGates {
    Cube beta, g, decay;  // (B,T,H_v) β, g and α = exp(g)
};
GatedDeltaNetGates gated_deltanet_gates(const Cube& b, const Cube& a, const Vec& a_log, const Vec& dt_bias);

// The delta rule's inputs as the layer's forward hands them to it, from its own q, k, v, g and
// β: q and k repeated to the H_v value heads (value head h reads key head h / (H_v / H_k)),
// L2-normalised, q × 1/√d_k (no state before).
DeltaInputs delta_rule_inputs(const GatedDeltaNetForward& f, const GatedDeltaNetWeights& w);

// `cache` (batch 1): its state and inputs are read first and updated after. `effective`:
// also the effective attention matrix (without a state before).
GatedDeltaNetForward gated_deltanet_forward(const Cube& x, const GatedDeltaNetWeights& w, DeltaNetCache* cache, bool effective);

}  // namespace attnwalk
