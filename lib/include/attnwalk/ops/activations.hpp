// Element-wise activations, and the MLP's hidden layer that applies them.
#pragma once

#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/kinds.hpp"
#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

// GELU, the tanh approximation GPT-2 uses: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))),
// computed as x·σ(2u), the same number without 1 + tanh's cancellation (ops/kernels.hpp).
Cube gelu_tanh(Cube x);

// SiLU (swish): x·σ(x) = x / (1 + e^(−x)).
Cube silu(Cube x);

// MlpKind: ops/kinds.hpp
bool gated(MlpKind kind);

// The hidden layer, (B,T,hidden): what the MLP's `down` projection reads. act(up(x)), or
// for a gated kind act(gate(x)) ⊙ up(x).
Cube mlp_hidden(const Cube& x, MlpKind kind, const Linear& up, const Linear* gate);

}  // namespace attnwalk
