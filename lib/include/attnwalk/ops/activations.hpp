// Element-wise activations, and the MLP's hidden layer that applies them.
#pragma once

#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

// GELU, the tanh approximation GPT-2 uses: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
Cube gelu_tanh(Cube x);

// The kinds of MLP a model family may choose; a family adds its kind here and in
// mlp_hidden() (gated MLPs take a second projection).
enum class MlpKind { gelu_tanh };  // down(GELU_tanh(up(x)))

// The hidden layer act(up(x)), (B,T,hidden): what the MLP's `down` projection reads.
Cube mlp_hidden(const Cube& x, MlpKind kind, const Linear& up);

}  // namespace attnwalk
