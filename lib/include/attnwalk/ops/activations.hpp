// Element-wise activations of the MLPs.
#pragma once

#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

// GELU, the tanh approximation GPT-2 uses: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
Cube gelu_tanh(Cube x);

}  // namespace attnwalk
