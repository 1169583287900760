// What a mixture of experts (lib/src/model/blocks/experts.cpp) hands the tap.
#pragma once

#include "attnwalk/model/hooks.hpp"
#include "attnwalk/ops/moe.hpp"

namespace attnwalk::hooks {

// A mixture of experts' MoeOutput (ops/moe.hpp), in place of `mlp_hidden`: the router's
// logits and scores, the experts each token chose and their weights, the output.
inline constexpr HookId experts{"experts"};

}  // namespace attnwalk::hooks
