// Latent attention (MLA, lib/src/model/blocks/latent.cpp): its weights, and what it hands the tap.
#pragma once

#include "attnwalk/model/block.hpp"
#include "attnwalk/model/blocks/heads.hpp"
#include "attnwalk/model/hooks.hpp"
#include "attnwalk/ops/latent_attention.hpp"

namespace attnwalk {

// A layer of multi-head latent attention (DeepSeek-V3): its projections, ranks and head
// parts, and its forward (ops/latent_attention's), whose cache is the latent and the rotary key.
struct LatentBlock final : AttentionBlock {
    LatentWeights w;
    Cube forward(const Cube& a, const LayerCall& call) const override;
};

}  // namespace attnwalk

namespace attnwalk::hooks {

// A latent attention layer's LatentForward (ops/latent_attention.hpp): the latent c_KV, the
// shared rotary key, the heads' parts. Then the same layer as heads (`heads`, a Forward):
// Q = [q_nope | q_rope], K = [k_nope | k_rope], V.
inline constexpr HookId latent{"latent"};

}  // namespace attnwalk::hooks
