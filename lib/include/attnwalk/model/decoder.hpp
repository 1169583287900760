// One decoder-only transformer, configured by each model family: the block is written
// once, in decoder.cpp, each kind of block (attention heads, latent attention, Gated
// DeltaNet, the dense MLP, experts) owns its weights and its forward (its type in
// model/blocks/<kind>.hpp, its file in lib/src/model/blocks/), and every family is a spec
// (model/family.hpp) that the loader turns into a DecoderConfig (each layer's kinds named in
// layer_specs) and DecoderWeights (each layer's norms and its two blocks, model/block.hpp).
// The forward writes no text: it hands each intermediate to a tap (an observer) at a hook
// point (model/hooks.hpp), which a lesson turns into steps. This header includes no kind's
// ops: code that reads a kind's weights includes the kind's header.
//
//   ids (T) -> x = embed[ids] (× embed_scale) (+ positions[p0 : p0+T], learned)   (1,T,C)
//   per block:  a = norm_1(x) (or x: post-norm); y = attention(a), the layer's kind's:
//                                  heads (blocks/heads.hpp: GQA, QK-norm, RoPE, a window),
//                                  latent attention (blocks/latent.hpp: MLA), or
//                                  Gated DeltaNet (blocks/deltanet.hpp: a state)
//               x = x + attention_norm(y)         (a norm after the attention; else y)
//               m = norm_2(x) (or x; a parallel block: a, what the attention read);
//               z = feed_forward(m): down(act(up(m))), gated: down(act(gate(m)) ⊙ up(m))
//                                  (blocks/mlp.hpp), or a mixture of experts (blocks/experts.hpp)
//               x = x + mlp_norm(z)               (a norm after the MLP; else z)
//               x = x + per-layer input's        (Gemma 4 E2B, E4B: blocks/per_layer.hpp)
//               x = x · layer_scalar              (Gemma 4)
//   final norm (1,T,C); logits of the last position = head·x_T (× logit_scale)   (1,V)
#pragma once

#include <algorithm>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnwalk/ops/deltanet_cache.hpp"
#include "attnwalk/ops/kv_cache.hpp"
#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/norms.hpp"
#include "attnwalk/ops/rope_params.hpp"
#include "attnwalk/model/block.hpp"
#include "attnwalk/model/family.hpp"
#include "attnwalk/model/hooks.hpp"
#include "attnwalk/model/model.hpp"

namespace attnwalk {

// What may differ from layer to layer: its kinds of block (blocks/), a sliding window, RoPE.
struct LayerSpec {
    AttentionKind attention = AttentionKind::heads;      // heads, latent attention (MLA) or Gated DeltaNet
    FeedForwardKind feed_forward = FeedForwardKind::mlp;  // the dense MLP or a mixture of experts
    std::optional<std::size_t> window;  // a sliding-window layer: each token sees itself and the W − 1 before it
    std::optional<RopeParams> rope;     // this layer's base and scaling; none: no RoPE here (learned positions, or a NoPE layer)
    std::optional<std::size_t> kv_from;  // cross-layer KV sharing: the earlier layer whose keys and values this one reads (it caches none)
    bool kv_shared = false;              // later layers read this layer's keys and values
};

struct DecoderConfig {
    const FamilySpec* family = nullptr;  // what the model is: its names, its norms' words (model/family.hpp)
    std::size_t vocab = 0, context = 0, width = 0, layers = 0;  // width = C
    std::size_t heads = 0, kv_heads = 0;                        // H; G (0 = H)
    std::size_t head_dim = 0;                                   // d_h (0 = C/H)
    NormKind norm = NormKind::layer_norm;
    float norm_eps = 1e-5f;
    MlpKind mlp = MlpKind::gelu_tanh;
    PositionKind positions = PositionKind::learned;
    std::vector<LayerSpec> layer_specs;  // one per layer: its kinds, window and RoPE
    std::optional<float> attention_scale;  // the scores are divided by this (default √d_h)
    std::optional<float> embed_scale;      // the token embeddings are multiplied by this (Gemma: √C)
    bool tied_head = true;  // the logits use the token embeddings (else DecoderWeights::head)
    std::optional<float> logit_scale;  // the logits are multiplied by it (Cohere)
    std::optional<float> logit_softcap;  // the logits soft-capped: tanh(z / cap)·cap (Gemma 4)
    bool parallel = false;  // the attention and the MLP both read norm_1(x) and add to x (NormPlacement::parallel)
    // Latent attention (MLA) layers: rope_interleave, and the scores' multiplier when it is
    // not (d_nope + d_rope)^(−1/2) (YaRN's mscale, DeepSeek-V3)
    bool latent_interleave = false;
    std::optional<float> latent_scaling;
    // Per-layer inputs (Gemma 4 E2B, E4B): P features per layer for each token, from a table of
    // per_layer_vocab rows (0: none; DecoderWeights::per_layer)
    std::size_t per_layer_input = 0, per_layer_vocab = 0;

    std::size_t head_size() const { return head_dim ? head_dim : heads ? width / heads : 0; }  // d_h
    std::size_t key_heads() const { return kv_heads ? kv_heads : heads; }                      // G
};

// One layer: the norms the decoder applies, and its two blocks, each of the kind its LayerSpec
// names, holding that kind's weights (model/blocks/<kind>.hpp; ask with as<Kind>() or get<Kind>()).
struct BlockWeights {
    std::optional<Norm> norm_1, norm_2;                    // before the attention, before the MLP (none: post-norm)
    std::optional<Norm> attention_norm, mlp_norm;          // after the attention, after the MLP (post-norm, Gemma)
    std::shared_ptr<const AttentionBlock> attention;       // heads, latent attention or a Gated DeltaNet
    std::shared_ptr<const FeedForwardBlock> feed_forward;  // the dense MLP or a mixture of experts
    std::optional<float> layer_scalar;                     // the layer's output × this (Gemma 4)
};

struct DecoderWeights {
    DecoderConfig config;
    Linear embed;          // the token embeddings in nn.Linear's layout: row id = out_row(id) (V×C)
    Mat positions;         // learned: (context, C); empty with RoPE
    std::vector<BlockWeights> blocks;
    Norm final_norm;
    Linear head;           // untied head (V×C, nn.Linear's layout); unused when tied
    std::shared_ptr<const PerLayerInputsBlock> per_layer;  // per-layer inputs (Gemma 4 E2B, E4B), or null
    const Linear& output_head() const { return config.tied_head ? embed : head; }
};

class SafeTensors;

// A model read from its checkpoint (model.hpp's Model points at one): what it says of
// itself, its decoder weights, and the mapped file the weights may point into.
struct LoadedModel {
    ModelInfo info;
    DecoderWeights weights;
    std::vector<std::shared_ptr<const SafeTensors>> files;  // the checkpoint (one file or its shards): keeps the weights read in place valid
};

// The decoder's own hook points (model/hooks.hpp), each a Cube (1,T,C).
namespace hooks {
// before the layers (layer no_layer):
inline constexpr HookId embed{"embed"};            // the token embeddings' rows embed[ids], before embed_scale
inline constexpr HookId pos_embed{"pos_embed"};    // the position embeddings' rows (learned positions only)
inline constexpr HookId embeddings{"embeddings"};  // x, the input of the first layer
// each layer's (its kinds' own points between them, declared in model/blocks/*.hpp):
inline constexpr HookId norm_1{"norm_1"};                  // a = norm_1(x), when the block has it
inline constexpr HookId attention{"attention"};            // y, the attention's output
inline constexpr HookId attention_norm{"attention_norm"};  // norm(y), when the block has it
inline constexpr HookId residual_1{"residual_1"};          // x + y (or x + norm(y))
inline constexpr HookId norm_2{"norm_2"};                  // m = norm_2(x), when the block has it
inline constexpr HookId mlp{"mlp"};                        // z, the MLP's or the experts' output
inline constexpr HookId mlp_norm{"mlp_norm"};              // norm(z), when the block has it
inline constexpr HookId residual_2{"residual_2"};          // the layer's output
// patched only (DecoderTap::patch), never handed to hook: the stream entering a layer
inline constexpr HookId resid_pre{"resid_pre"};
}  // namespace hooks

// The observer of the forward: it says which layers' attention it keeps, and hears every
// intermediate as hook(layer, id, value), in data-flow order (docs/architecture.md has the
// table):
//
//   no_layer   embed, pos_embed (learned positions), embeddings; per-layer inputs'
//              (blocks/per_layer.hpp: per_layer_embed, per_layer_projection, per_layer_inputs)
//   each layer norm_1; the attention kind's: heads (blocks/heads.hpp, a Forward), or
//              latent then heads (blocks/latent.hpp: a LatentForward, then the same layer
//              as heads), or deltanet (blocks/deltanet.hpp, a GatedDeltaNetForward);
//              attention, attention_norm, residual_1, norm_2; the feed-forward kind's:
//              mlp_hidden (blocks/mlp.hpp, a Cube (1,T,hidden)) or experts
//              (blocks/experts.hpp, a MoeOutput); mlp, mlp_norm; per-layer inputs'
//              (per_layer_input, per_layer_gated, per_layer_output); residual_2
//
// (norm_1, norm_2, attention_norm, mlp_norm only where the block has that norm.) A value is
// the forward's own, valid during the call; a tap that wants it later copies it. A new kind
// of block declares its points in its own header: the tap gains no method.
class DecoderTap {
public:
    virtual ~DecoderTap() = default;
    // Whether layer l keeps every intermediate of its attention (the T×T tensors), handed
    // with hooks::heads. A tap reads T×T tensors only of the layers it keeps: a layer not kept
    // takes the blocked path without a cache so far, which keeps none
    // (ops/blocked_attention.hpp); elsewhere (an output gate, a cache, heads switched off)
    // attend makes them a head at a time in buffers where its kernels take the heads, and
    // whole on a CPU without them. A Gated DeltaNet layer kept makes its effective attention
    // matrix (with no state before).
    virtual bool keeps_attention(std::size_t /*layer*/) const { return false; }
    // Of a layer it keeps: whether the T×T scores and weights are wanted only as their
    // statistics (ForwardSpec::square_summaries; the heads' Forward then has them in
    // Forward::scores_stats and weights_stats where Forward::square_summarised is set).
    virtual bool summarises_attention(std::size_t /*layer*/) const { return false; }
    // One intermediate: `value` holds the type `id` declares (Hooked::as, get). Ignored by default.
    virtual void hook(std::size_t /*layer*/, HookId /*id*/, const Hooked& /*value*/) {}
    // Activation patching (as TransformerLens's hooks that return a value): the tap may change
    // three of the forward's values in place before anything reads them: the stream entering
    // layer l (hooks::resid_pre), the attention's output y (hooks::attention) and the
    // feed-forward's output z (hooks::mlp), both before a norm after them. Untouched by default.
    virtual void patch(std::size_t /*layer*/, HookId /*id*/, Cube& /*value*/) {}
};

// Each layer's keys and values, for decoding token by token. A latent attention layer keeps
// its c_KV as the "keys" (B,1,T,r) and its rotated k_rope as the "values" (B,1,T,d_rope):
// all MLA needs to make every head's keys and values again; with an indexer, its keys too.
struct DecoderCache {
    std::vector<KvCache> layers;
    std::vector<DeltaNetCache> linear;  // a Gated DeltaNet layer's convolution inputs and state (its KvCache stays empty)
    std::vector<Cube> index_keys;       // a latent layer's indexer keys (1,L,d_I), normed and rotated (DeepSeek-V3.2; else empty)
    std::size_t tokens() const {
        std::size_t n = 0;
        for (const KvCache& kv : layers) n = std::max(n, kv.seen());
        for (const DeltaNetCache& d : linear) n = std::max(n, d.seen);
        return n;
    }
    double bytes(std::size_t bytes_per_value) const;
};
DecoderCache make_cache(const DecoderConfig& config);
// StreamingLLM's cache (Xiao et al. 2023, StartRecentKVCache): every layer keeps the first
// `start` tokens (the attention sinks) and the `recent` most recent ones, a new token
// included. Its keys are cached before RoPE and rotated at their place in the cache, the
// queries at theirs (positions 0 … L − 1, not the tokens' own). Throws UsageError for a
// model without RoPE or with sliding-window layers (which keep their own window), or
// recent = 0.
DecoderCache make_start_recent_cache(const DecoderConfig& config, std::size_t start, std::size_t recent);

// The ids fit: at least one, each < vocab, positions position0… within the context.
// Throws UsageError.
void check_prompt(const DecoderConfig& config, const std::vector<std::size_t>& ids, std::size_t position0);

// Heads switched off: per layer, the heads whose outputs are zeroed before o_proj.
using Ablation = std::vector<std::vector<std::size_t>>;

// Runs `ids` through every block at positions cache->tokens()… (0 without a cache),
// appending their keys and values to the cache when one is given. Returns the final
// norm's output (1,T,C). Throws UsageError for ids ≥ vocab or beyond the context.
// `ablation` (one entry per layer, or empty) zeroes those heads' outputs.
Cube decoder_forward(const DecoderWeights& w, const std::vector<std::size_t>& ids, DecoderCache* cache, DecoderTap* tap,
                     const Ablation* ablation = nullptr);
// The logits of row `row` of the final norm's output: (1,V); of every row: (1,T,V). Both
// through the head, × the logit scale when the model has one.
Mat decoder_logits(const DecoderWeights& w, const Cube& final_x, std::size_t row);
Cube decoder_all_logits(const DecoderWeights& w, const Cube& final_x);

}  // namespace attnwalk
