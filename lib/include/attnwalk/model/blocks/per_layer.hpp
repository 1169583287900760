// Per-layer inputs (lib/src/model/blocks/per_layer.cpp; Gemma 4 E2B and E4B, as Hugging
// Face's Gemma4TextModel computes them): its weights, and what it hands the tap.
#pragma once

#include <vector>

#include "attnwalk/model/block.hpp"
#include "attnwalk/model/hooks.hpp"
#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/norms.hpp"
#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

// Before the layers (get_per_layer_inputs, project_per_layer_inputs), for each token:
//   e = embed_tokens_per_layer[id] · √P                                          (L·P)
//   p = per_layer_projection_norm((x·W_modelᵀ · C^(−1/2)) as L rows of P)        (L·P)
//   inputs = (p + e) · 2^(−1/2)                                                  (L·P)
// In layer l, after its MLP (Gemma4TextDecoderLayer), with inputs_l its P features:
//   x = x + post_per_layer_input_norm((act(x·W_gateᵀ) ⊙ inputs_l)·W_projᵀ)
// (act: the MLP's, GELU tanh), then × the layer's layer_scalar.
struct PerLayerEmbeddings final : PerLayerInputsBlock {
    std::size_t size = 0;   // P, each layer's features
    NormKind norm = NormKind::rms_norm;  // the decoder's norm and eps, for the norms below
    float eps = 1e-6f;
    Linear embed;           // [vocab_pl, L·P] rows, nn.Embedding's table (as the token embeddings: row id = out_row(id))
    Linear model_projection;  // C -> L·P
    Norm projection_norm;     // over each layer's P
    struct Layer {
        Linear gate;        // C -> P
        Linear projection;  // P -> C
        Norm post_norm;     // over C
    };
    std::vector<Layer> layers;
    Cube inputs(const std::vector<std::size_t>& ids, const Cube& x, DecoderTap& tap) const override;
    Cube forward(const Cube& x, const Cube& inputs, const LayerCall& call) const override;
};

}  // namespace attnwalk

namespace attnwalk::hooks {

// before the layers (no_layer), each a Cube (1,T,L·P):
inline constexpr HookId per_layer_embed{"per_layer_embed"};            // embed_tokens_per_layer[ids] · √P
inline constexpr HookId per_layer_projection{"per_layer_projection"};  // the projection of x, × C^(−1/2), each layer's P normed
inline constexpr HookId per_layer_inputs{"per_layer_inputs"};          // (projection + embeddings) · 2^(−1/2)
// each layer's, after its MLP's (mlp_norm) and before residual_2:
inline constexpr HookId per_layer_input{"per_layer_input"};    // the layer's P features of per_layer_inputs, a Cube (1,T,P)
inline constexpr HookId per_layer_gated{"per_layer_gated"};    // act(x·W_gateᵀ) ⊙ the layer's input, a Cube (1,T,P)
inline constexpr HookId per_layer_output{"per_layer_output"};  // its projection back to C through the norm, a Cube (1,T,C), added to x

}  // namespace attnwalk::hooks
