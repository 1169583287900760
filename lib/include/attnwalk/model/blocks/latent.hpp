// What latent attention (MLA, lib/src/model/blocks/latent.cpp) hands the tap.
#pragma once

#include "attnwalk/model/blocks/heads.hpp"
#include "attnwalk/model/hooks.hpp"
#include "attnwalk/ops/latent_attention.hpp"

namespace attnwalk::hooks {

// A latent attention layer's LatentForward (ops/latent_attention.hpp): the latent c_KV, the
// shared rotary key, the heads' parts. Then the same layer as heads (`heads`, a Forward):
// Q = [q_nope | q_rope], K = [k_nope | k_rope], V.
inline constexpr HookId latent{"latent"};

}  // namespace attnwalk::hooks
