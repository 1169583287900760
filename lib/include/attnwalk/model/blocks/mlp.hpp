// The dense MLP (lib/src/model/blocks/mlp.cpp): its weights, and what it hands the tap.
#pragma once

#include "attnwalk/model/block.hpp"
#include "attnwalk/model/hooks.hpp"
#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

// The dense MLP: down(act(up(m))), or gated, down(act(gate(m)) ⊙ up(m)) (the activation is
// DecoderConfig::mlp), and its forward (ops/activations' mlp_hidden, then down).
struct MlpBlock final : FeedForwardBlock {
    Linear up, down;  // C -> hidden, hidden -> C
    Linear gate;      // C -> hidden, gated MLPs only
    Cube forward(const Cube& m, const LayerCall& call) const override;
};

}  // namespace attnwalk

namespace attnwalk::hooks {

// The MLP's hidden features act(up(m)) or act(gate(m)) ⊙ up(m), a Cube (1,T,hidden), before
// the down projection.
inline constexpr HookId mlp_hidden{"mlp_hidden"};

}  // namespace attnwalk::hooks
