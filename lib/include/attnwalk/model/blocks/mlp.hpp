// What the dense MLP (lib/src/model/blocks/mlp.cpp) hands the tap.
#pragma once

#include "attnwalk/model/hooks.hpp"
#include "attnwalk/ops/tensor.hpp"

namespace attnwalk::hooks {

// The MLP's hidden features act(up(m)) or act(gate(m)) ⊙ up(m), a Cube (1,T,hidden), before
// the down projection.
inline constexpr HookId mlp_hidden{"mlp_hidden"};

}  // namespace attnwalk::hooks
