// The gated delta rule (Gated DeltaNet: Qwen3-Next, Qwen3.5, Kimi Linear's base): linear
// attention with a state S of d_k × d_v numbers per head instead of a cache growing with
// the tokens. Per token t, with q_t, k_t L2-normalised (q_t also scaled by 1/√d_k),
// decay α_t = exp(g_t) and write strength β_t (one each per head):
//
//   S ← α_t·S                         forget a little
//   p = Sᵀk_t                         what the state predicts for k_t
//   δ = β_t·(v_t − p)                 the error, scaled
//   S ← S + k_t ⊗ δ                   write it
//   o_t = Sᵀq_t                       read
//
// in float32 in the order of Hugging Face's torch_recurrent_gated_delta_rule. The same
// outputs come from an explicit T × T matrix per head (the delta rule's terms kept) and
// from the chunked form of torch_chunk_gated_delta_rule.
#pragma once

#include <cstddef>
#include <vector>

#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

// q, k (B,H,T,d_k), already normalised (q scaled); v (B,H,T,d_v); g, beta (B,H,T).
struct DeltaInputs {
    Hyper q, k, v;
    Cube g, beta;
    Hyper initial;  // (B,H,d_k,d_v) the state before the first token (a model's, decoding); empty: zeros
};

// One token's intermediates, every batch element and head.
struct DeltaStep {
    Hyper decayed;     // (B,H,d_k,d_v) α_t·S
    Cube prediction;   // (B,H,d_v) Sᵀk_t, from the decayed state
    Cube error;        // (B,H,d_v) β_t·(v_t − prediction)
    Hyper state;       // (B,H,d_k,d_v) after the write
    Cube output;       // (B,H,d_v) Sᵀq_t
};

struct DeltaRun {
    Hyper outputs;                // (B,H,T,d_v)
    Hyper state;                  // (B,H,d_k,d_v) the final state
    std::vector<DeltaStep> steps;  // per token, when asked (the recurrent form)
};

DeltaRun delta_rule_recurrent(const DeltaInputs& in, bool keep_steps);
// The effective attention matrix A (B,H,T,T), lower-triangular, with o = A·V exactly in
// exact arithmetic: A = P·U, P_tj = γ_tj·(q_t·k_j), γ_tj = exp(g_j+1 + … + g_t), and U
// the written errors as combinations of the values, (I + diag(β)·L)·U = diag(β),
// L_jm = γ_jm·(k_j·k_m) for m < j.
Hyper delta_rule_attention(const DeltaInputs& in);
// One cell A_tc of that matrix, as delta_rule_attention builds it: for j = c … t the decay
// γ_tj, q_t·k_j (float32), P_tj = γ_tj·(q_t·k_j) and U_jc (double), each term
// float32(P_tj·U_jc), and their sum added in float32 from j = c on: `value` is A_tc bit for
// bit. A cell above the diagonal (c > t) has no terms and is 0.
struct DeltaCell {
    std::vector<double> decay, read, written;  // γ_tj, P_tj, U_jc
    std::vector<float> qk, terms;              // q_t·k_j, float32(P_tj·U_jc)
    float value = 0.0f;
};
DeltaCell delta_rule_cell(const DeltaInputs& in, std::size_t b, std::size_t h, std::size_t t, std::size_t c);
// The chunked form, `chunk` tokens at a time (torch_chunk_gated_delta_rule's steps, from
// in.initial when given): within a chunk the tokens are solved together, a small triangular
// system, and every other step is a matrix product; the state passes from chunk to chunk. A
// model's layer computes a prompt this way, 64 tokens a chunk, as Hugging Face's does.
DeltaRun delta_rule_chunked(const DeltaInputs& in, std::size_t chunk);

// x / √(Σx² + eps) along the last axis (FLA's l2norm, eps 1e-6), times `scale`.
Hyper l2_normalise(const Hyper& x, float scale, float eps = 1e-6f);

}  // namespace attnwalk
