// What a Gated DeltaNet layer (lib/src/model/blocks/deltanet.cpp) hands the tap.
#pragma once

#include "attnwalk/model/hooks.hpp"
#include "attnwalk/ops/gated_deltanet.hpp"

namespace attnwalk::hooks {

// A Gated DeltaNet layer's GatedDeltaNetForward (ops/gated_deltanet.hpp), in place of `heads`
// (no softmax there): its inputs, gates, state and output; with keeps_attention(layer) and no
// state before, its effective attention matrix.
inline constexpr HookId deltanet{"deltanet"};

}  // namespace attnwalk::hooks
