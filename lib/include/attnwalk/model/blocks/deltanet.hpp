// A Gated DeltaNet layer (lib/src/model/blocks/deltanet.cpp): its weights, and what it hands the tap.
#pragma once

#include "attnwalk/model/block.hpp"
#include "attnwalk/model/hooks.hpp"
#include "attnwalk/ops/gated_deltanet.hpp"

namespace attnwalk {

// A Gated DeltaNet in place of attention (Qwen3-Next's linear_attention layers): its
// projections, convolution, decay and gated norm, and its forward (ops/gated_deltanet's),
// on the layer's DeltaNetCache rather than its KvCache.
struct DeltaNetBlock final : AttentionBlock {
    GatedDeltaNetWeights w;
    Cube forward(const Cube& a, const LayerCall& call) const override;
};

}  // namespace attnwalk

namespace attnwalk::hooks {

// A Gated DeltaNet layer's GatedDeltaNetForward (ops/gated_deltanet.hpp), in place of `heads`
// (no softmax there): its inputs, gates, state and output; with keeps_attention(layer) and no
// state before, its effective attention matrix.
inline constexpr HookId deltanet{"deltanet"};

}  // namespace attnwalk::hooks
