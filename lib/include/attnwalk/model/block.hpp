// A layer's two blocks as the decoder holds and calls them: its attention and its
// feed-forward (and a model's per-layer inputs, where it has them), each an object of its kind that owns the kind's weights. A kind declares its
// type in its own header (model/blocks/<kind>.hpp: HeadsBlock, LatentBlock, DeltaNetBlock,
// MlpBlock, ExpertsBlock) and writes its forward in lib/src/model/blocks/<kind>.cpp; the
// decoder calls `forward` and names no kind. Code that reads a kind's weights includes the
// kind's header and asks for it: `b.attention->as<LatentBlock>()` (null for another kind),
// `get<LatentBlock>()` (std::logic_error for another kind, as Hooked::get).
//
// Light: no kind's ops here (the decoder's header includes this one).
#pragma once

#include <cstddef>
#include <stdexcept>
#include <vector>

#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

struct DecoderConfig;
struct DecoderCache;
class DecoderTap;

// Cross-layer KV sharing within one forward: the keys and values (B,G,T,d_h) each layer that
// LayerSpec::kv_shared marks made (after its cache: all it attended to), for the later layers
// that read them (LayerSpec::kv_from). Empty for the others.
struct SharedKv {
    std::vector<Hyper> keys, values;
};

// What a block's forward is handed beside its input: the model, the layer, the cache (each
// kind takes its own part of the layer's: the keys and values, or a Gated DeltaNet's state).
struct LayerCall {
    const DecoderConfig& config;
    std::size_t layer;
    std::size_t position0;                       // the first new token's position
    DecoderCache* cache;                         // null: no cache
    DecoderTap& tap;                             // hears what the kind makes, at its hook points
    const std::vector<std::size_t>* zero_heads;  // heads whose outputs are zeroed (ablation), or null
    SharedKv* shared = nullptr;                  // the keys and values shared across layers in this forward
};

// What both kinds of block share: the question "which kind are you?".
class Block {
public:
    virtual ~Block() = default;
    // This block as its kind's type, or null for another kind.
    template <class Kind>
    const Kind* as() const {
        return dynamic_cast<const Kind*>(this);
    }
    // This block as its kind's type, which it must be: else std::logic_error, a caller's mistake.
    template <class Kind>
    const Kind& get() const {
        if (const Kind* k = as<Kind>()) return *k;
        throw std::logic_error("a layer's block read as another kind than it is");
    }
};

// A layer's attention: y (1,T,C) from a = norm_1(x) (1,T,C).
class AttentionBlock : public Block {
public:
    virtual Cube forward(const Cube& a, const LayerCall& call) const = 0;
};

// A layer's feed-forward: z (1,T,C) from m = norm_2(x) (1,T,C).
class FeedForwardBlock : public Block {
public:
    virtual Cube forward(const Cube& m, const LayerCall& call) const = 0;
};

// Per-layer inputs (Gemma 4 E2B and E4B; model/blocks/per_layer.hpp): before the layers, a
// narrow input for every layer made from the token ids and the embeddings x; after each
// layer's MLP, the layer's own part of it mixed into the residual stream. Held by the
// decoder's weights, not by a layer.
class PerLayerInputsBlock : public Block {
public:
    // Every layer's input (1,T,L·P), from the ids and x (1,T,C), the input of layer 1.
    virtual Cube inputs(const std::vector<std::size_t>& ids, const Cube& x, DecoderTap& tap) const = 0;
    // x (1,T,C) after layer call.layer's MLP, with that layer's part of `inputs` mixed in.
    virtual Cube forward(const Cube& x, const Cube& inputs, const LayerCall& call) const = 0;
};

}  // namespace attnwalk
