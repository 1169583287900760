// The explanation engine: one cell of an attention written out, every number that goes
// into it, so that a student can redo it by hand — for the chapter's one head and for any
// head of any layer of a real model (the normalised rows, the projections, QK-norm, RoPE,
// the grouping of heads, the scale, the mask, the softmax, the context).
//
// Everything is read from the forward pass that computed the matrices (the projections,
// the score, the row's max and sum, the weight, the context) and from what the model's
// tap handed over (the rows entering the layer); only the exponentials of the one row are
// evaluated again, with the same float operation as the softmax, so each number equals
// the matrices' bit for bit. Statistics a note quotes (a row's rms) are computed for the
// note in double.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnwalk/lessons/explainer.hpp"
#include "attnwalk/lessons/lessons.hpp"
#include "attnwalk/lessons/recorder.hpp"
#include "attnwalk/ops/attention.hpp"
#include "attnwalk/ops/gated_deltanet.hpp"
#include "attnwalk/ops/latent_attention.hpp"
#include "attnwalk/ops/norms.hpp"

namespace attnwalk {

// What the scores are divided by, as the lessons write it.
struct Scale {
    float value = 1.0f;
    std::string symbol;  // in formulas: "√d_k", or the number given
    std::string words;   // in titles: "√d_k = √2", or the number given
    bool times = false;  // the scores are multiplied by `value` (latent attention's softmax scale), not divided
    std::string why;     // what a factor a config sets is, in words (the scaled step's note); empty: none
};

enum class ExplainDepth { score, weight, context };

// A model layer's part of a cell: the rows entering it and their norm, its window and
// RoPE, and the family's names for its parts.
struct LayerSource {
    std::size_t layer = 0;            // from 0
    Cube stream;                      // (1,T,C) the residual stream entering the layer
    std::optional<Norm> norm;         // the norm before the attention; none: post-norm (the attention reads the stream)
    NormKind norm_kind{};
    float eps = 1e-6f;
    std::string norm_words;           // "RMSNorm with (1 + w)"
    std::string norm_name;            // "input_layernorm"
    bool norm_adds_one = false;       // the file stores w; the norm multiplies by (1 + w)
    bool layer_has_rope = true;       // false: a layer without RoPE (SmolLM3's no_rope_layers)
    std::string rope_words;           // how this layer's RoPE is scaled ("YaRN, factor 8"), empty when plain
    std::optional<RopeParams> rope;   // its RoPE's base and scaling: where the frequencies come from
    std::string q_name, k_name;       // "q_proj", "k_proj" (or "c_attn")
    std::string shared_kv;            // cross-layer KV sharing: whose keys and values the layer reads ("layer 4"); empty: its own
};

// A latent attention layer's own parts of a cell (MLA), beside its Forward as heads: the
// latents, the shared rotary key, the two parts of each score.
struct LatentSource {
    std::shared_ptr<const LatentWeights> weights;  // kept alive by the model
    LatentForward f;                               // without the T×T weights and outputs (the Forward's)
    bool interleave = false;                       // rope_interleave: the rotary pairs are (2i, 2i + 1) in the weights
    std::string kv_a, kv_b, q_a, q_b, query;       // the family's names of the projections ("kv_a_proj_with_mqa")
    std::string kv_a_norm, q_a_norm;               // and of the latents' norms ("kv_a_layernorm")
};

// A Gated DeltaNet layer's cell: an entry of its effective attention matrix, as the delta
// rule builds it from the layer's own q, k, v, g and β.
struct DeltaSource {
    GatedDeltaNetForward f;  // its effective attention matrix included
    DeltaInputs in;          // the delta rule's inputs (delta_rule_inputs)
    std::size_t k_heads = 1, d_k = 0;
};

// One attention as the engine reads it. Non-owning.
struct ExplainView {
    const Forward* f = nullptr;
    const Cube* x = nullptr;                      // the rows projected (B,T,d_in): the input, or a layer's normalised rows
    const AttentionWeights* weights = nullptr;    // null: x·xᵀ without projections
    Scale scale;
    ExplainDepth depth = ExplainDepth::context;
    const LayerSource* layer = nullptr;           // a model's layer, or null
    const LatentSource* latent = nullptr;         // latent attention (MLA): its parts
    const DeltaSource* delta = nullptr;           // Gated DeltaNet: its cell is the effective attention's (f: heads and tokens only)
};

// Appends the explain_* steps (documented in docs/json.md) down to the view's depth, for
// batch element 0. Throws UsageError for a cell outside the forward.
void explain_cell(Recorder& rec, const CellRef& cell, const ExplainView& view);
// The chapter's form: head `head` of a forward over every query row.
void explain_cell(Recorder& rec, const Cell& cell, const Cube& x, const AttentionWeights* weights, const Forward& f,
                  const Scale& scale, ExplainDepth depth, std::size_t head = 0);

// An attention kept to be explained after the walk: the view's data, owned.
struct KeptAttention {
    Forward f;
    Cube x;
    std::shared_ptr<const AttentionWeights> weights;  // or null
    Scale scale;
    ExplainDepth depth = ExplainDepth::context;
    std::optional<LayerSource> layer;
    std::shared_ptr<const LatentSource> latent;  // or null
    std::shared_ptr<const DeltaSource> delta;    // or null
    bool batched = false;
};
// The view of a kept attention.
ExplainView view_of(const KeptAttention& k);
// The explainer of these attentions (trace.explainer).
std::shared_ptr<const Explainer> keep_for_explaining(std::vector<KeptAttention> kept);

}  // namespace attnwalk
