// A mixture of experts (lib/src/model/blocks/experts.cpp): its weights, and what it hands the tap.
#pragma once

#include "attnwalk/model/block.hpp"
#include "attnwalk/model/hooks.hpp"
#include "attnwalk/ops/moe.hpp"

namespace attnwalk {

// A mixture of experts in place of the MLP (gpt-oss, DeepSeek-V3, Qwen3-MoE): its router,
// its experts, a shared expert, and its forward (ops/moe's).
struct ExpertsBlock final : FeedForwardBlock {
    MoeWeights w;
    Cube forward(const Cube& m, const LayerCall& call) const override;
};

}  // namespace attnwalk

namespace attnwalk::hooks {

// A mixture of experts' MoeOutput (ops/moe.hpp), in place of `mlp_hidden`: the router's
// logits and scores, the experts each token chose and their weights, the output.
inline constexpr HookId experts{"experts"};

}  // namespace attnwalk::hooks
