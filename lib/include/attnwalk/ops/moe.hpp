// A mixture of experts in place of the MLP, in the two ways today's checkpoints route.
//
// gpt-oss (Hugging Face's GptOssTopKRouter and GptOssExperts):
//
//   x (B,T,C) -> router logits r = x·W_rᵀ + b_r                      (T,E)
//   per token: the k experts of largest logit, their weights softmax(r_top)   (T,k)
//   per chosen expert e: h = x·W_gu,e + b_gu,e                       (2I: gate and up interleaved)
//     gate = min(h[0::2], limit), up = clamp(h[1::2], −limit, limit)
//     a = (up + 1) · gate·σ(α·gate)                                   (I)
//     y_e = a·W_d,e + b_d,e                                           (C)
//   y = Σ_e weight_e · y_e, in the order of the experts' indices      (B,T,C)
//
// DeepSeek-V3 (DeepseekV3TopkRouter and DeepseekV3MoE):
//
//   r = x·W_rᵀ, s = σ(r)                                              (T,E)
//   choice c = s + b_corr (the correction bias chooses, it never weighs)
//   groups of E/n_group experts scored by the sum of their two largest c; the topk_group
//   best groups kept, the others' c set to 0; the k experts of largest c
//   weights s[top_k] / (Σ s[top_k] + 1e−20) (norm_topk_prob) × routed_scaling_factor
//   y_e = down(SiLU(gate(x)) ⊙ up(x)); y = Σ_e weight_e·y_e + shared(x)
//
// Qwen3-Next (Qwen3NextTopKRouter and Qwen3NextSparseMoeBlock): p = softmax(r) over every
// expert, the k largest, over their sum (norm_topk_prob); y = Σ_e p_e·y_e + σ(x·w_g)·shared(x)
//
// The experts' matrices are read where they lie: float32 or 16-bit rows (a Linear, x·W
// layout: gate_up_proj is [E, C, 2I]), or MXFP4 blocks as the released checkpoints keep
// them (dequantised a row at a time as the products need it).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <optional>
#include <vector>

#include "attnwalk/ops/kinds.hpp"
#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

// A matrix of `rows` rows of `cols` values in MXFP4 (OCP microscaling, 4-bit): each row is
// cols/32 groups of 16 bytes, two 4-bit codes a byte (the low nibble first), and one
// scale byte s per group: value = FP4[code] · 2^(s − 127), FP4 = ±{0, 0.5, 1, 1.5, 2, 3,
// 4, 6}. As Hugging Face's convert_moe_packed_tensors dequantises gpt-oss's experts.
struct Mxfp4Rows {
    const std::uint8_t* blocks = nullptr;  // rows × cols/2 bytes
    const std::uint8_t* scales = nullptr;  // rows × cols/32 bytes
    std::size_t rows = 0, cols = 0;
    std::shared_ptr<const void> owner;     // keeps the bytes valid
    void row(std::size_t r, float* out) const;  // row r as cols floats (exact: every value fits float32)
};

// One projection of an expert, d_in → d_out: a Linear (x·W layout, bias apart), or MXFP4
// rows, one per output (nn.Linear's [out, in]).
struct ExpertMatrix {
    Linear dense;
    std::optional<Mxfp4Rows> mxfp4;
    std::size_t in() const { return mxfp4 ? mxfp4->cols : dense.in(); }
    std::size_t out() const { return mxfp4 ? mxfp4->rows : dense.out(); }
    // y (n × out(), ldy apart) = x (n × in(), contiguous) · W
    void apply(const float* x, std::size_t n, float* y, std::size_t ldy) const;
    // The d_in × d_out matrix as float32 (small matrices: the tests).
    Mat matrix() const;
};

// RouterKind and ExpertKind: ops/kinds.hpp.

struct Expert {
    ExpertMatrix gate_up, down;  // C → 2I (gate and up interleaved: clamped_swiglu), I → C
    Vec gate_up_bias, down_bias; // 2I and C, or empty
    Linear gate, up;             // C → I each (swiglu)
};

// A dense gated MLP every token goes through beside the routed experts (DeepSeek's shared
// experts), scaled by σ(x·w_g) when it has a gate of its own (Qwen3-Next's shared_expert_gate).
struct SharedExpert {
    Linear gate, up, down;
    std::optional<Linear> scale;  // C → 1
};

struct MoeWeights {
    RouterKind routing = RouterKind::softmax_top_k;
    ExpertKind kind = ExpertKind::clamped_swiglu;
    Linear router;                // C → E, with its bias (softmax_top_k)
    std::vector<Expert> experts;  // E
    std::size_t top_k = 1;
    float alpha = 1.702f, limit = 7.0f;  // the clamped SwiGLU: σ(α·gate), clamped at ±limit
    // sigmoid_grouped: the choice's bias (E), the groups, the weights' normalising and scale
    Vec correction_bias;
    std::size_t groups = 1, top_groups = 1;
    bool normalise = true;
    float routed_scale = 1.0f;
    std::optional<SharedExpert> shared;
};

struct MoeOutput {
    Mat logits;                       // (T,E) the router's, all B·T rows
    Mat scores;                       // (T,E) sigmoid_grouped: σ(logits); softmax_all: softmax(logits); empty otherwise
    Vec shared_scale;                 // (T) σ(x·w_g), a gated shared expert's
    std::vector<std::size_t> chosen;  // (T·k) each row's experts, the largest first (logit, or choice score)
    Mat weights;                      // (T,k) what each chosen expert's output is multiplied by
    Cube shared;                      // (B,T,C) the shared expert's output, when there is one
    Cube output;                      // (B,T,C)
};

// Throws UsageError when the shapes do not fit.
MoeOutput moe_forward(const Cube& x, const MoeWeights& w);

// The multiply-adds of moe_forward for `tokens` tokens.
double moe_work(const MoeWeights& w, std::size_t tokens);

}  // namespace attnwalk
