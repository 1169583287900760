// Attention heads (lib/src/model/blocks/heads.cpp): their weights, and what they hand the tap.
#pragma once

#include "attnwalk/model/block.hpp"
#include "attnwalk/model/hooks.hpp"
#include "attnwalk/ops/attention.hpp"

namespace attnwalk {

// A layer of attention heads (MHA, GQA, MQA; QK-norm, sinks, an output gate): its
// projections and settings, and its forward (ops/attention's, or ops/blocked_attention's).
struct HeadsBlock final : AttentionBlock {
    AttentionWeights w;
    Cube forward(const Cube& a, const LayerCall& call) const override;
};

}  // namespace attnwalk

namespace attnwalk::hooks {

// A softmax attention layer's Forward (ops/attention.hpp), once its output is made: Q, K, V
// and their heads, the T×T scores and weights of a layer the tap keeps
// (DecoderTap::keeps_attention; their statistics alone where it summarises it), the
// context, the output. The blocked path of a layer not kept hands one without T×T tensors
// (GPT-2's fused path: only the output). A latent attention layer hands it too, after its
// own `latent`.
inline constexpr HookId heads{"heads"};

}  // namespace attnwalk::hooks
