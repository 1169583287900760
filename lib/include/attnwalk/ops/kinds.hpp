// The kinds of computation a model family chooses among, as plain enums: the norm, the MLP's
// activation, a mixture of experts' router and experts. Light (no xtensor): a family's spec
// (model/family.hpp) names them without including the ops that compute them.
#pragma once

namespace attnwalk {

// The norms (ops/norms.hpp: normalise); a family adds its kind here and there.
enum class NormKind {
    layer_norm,  // nn.LayerNorm: scale and shift (GPT-2)
    rms_norm,    // RMSNorm: scale only, no mean subtracted (Llama, Qwen, Gemma: Gemma's (1 + w) is its loader's)
    layer_norm_no_bias  // a LayerNorm with a scale and no shift, its mean and variance as torch.mean sums (Cohere)
};

// The MLPs (ops/activations.hpp: mlp_hidden); a family adds its kind here and there.
enum class MlpKind {
    gelu_tanh,   // down(GELU_tanh(up(x)))                  GPT-2
    swiglu,      // down(SiLU(gate(x)) ⊙ up(x))              Llama, Qwen
    geglu_tanh   // down(GELU_tanh(gate(x)) ⊙ up(x))         Gemma
};

// How a mixture of experts' router turns its logits into the chosen experts and their
// weights (ops/moe.hpp).
enum class RouterKind {
    softmax_top_k,   // the k largest logits, a softmax over them (gpt-oss)
    sigmoid_grouped, // σ(logits), chosen with a correction bias within the best groups (DeepSeek-V3)
    softmax_all      // a softmax over every expert, the k largest, renormalised (norm_topk_prob: Qwen3-Next)
};
// What one expert computes.
enum class ExpertKind {
    clamped_swiglu,  // gate_up interleaved, clamped, (up + 1)·gate·σ(α·gate), with biases (gpt-oss)
    swiglu           // down(SiLU(gate(x)) ⊙ up(x)), as a dense Llama MLP (DeepSeek-V3)
};

}  // namespace attnwalk
