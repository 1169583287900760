// The model walk's parts, internal to lib/src/lessons/model/: the words of a family's parts,
// the prompt's tap (its generic points in prompt.cpp, each block kind's narration in a file of
// its own: heads.cpp, latent.cpp, deltanet.cpp, experts.cpp), the analyses (view.cpp, lens.cpp,
// ablation.cpp, roles.cpp, circuits.cpp), generation and its caches (generate.cpp), the cost estimate
// (cost.cpp) and the walk that calls them in order (walk.cpp).
#pragma once

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include <xtensor/xtensor.hpp>
#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/tokenizer.hpp"
#include "attnwalk/lessons/explain.hpp"
#include "attnwalk/lessons/recorder.hpp"
#include "attnwalk/model/blocks/deltanet.hpp"
#include "attnwalk/model/blocks/experts.hpp"
#include "attnwalk/model/blocks/heads.hpp"
#include "attnwalk/model/blocks/latent.hpp"
#include "attnwalk/model/blocks/mlp.hpp"
#include "attnwalk/model/blocks/per_layer.hpp"
#include "attnwalk/model/decoder.hpp"
#include "attnwalk/ops/activations.hpp"
#include "attnwalk/ops/attention.hpp"
#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/sampling.hpp"
#include "../steps.hpp"

namespace attnwalk::model_walk {

using namespace steps;
using ull = unsigned long long;

// Whether the layer shown is only summed (ForwardSpec::square_summaries): a summary of every
// head whose T×T steps nothing else reads (no view, rollout or cell written out). The tap
// asks it in the forward and model_walk_cost before it, so the two agree.
inline bool sums_shown_layer(const ModelSpec& spec, bool summary, bool explainable) {
    return summary && !spec.head && !spec.view && !spec.rollout && !explainable && !spec.explain;
}

// A tensor's statistics, for a step kept as a summary.
template <class Tensor>
Summary summary_of(const Tensor& t) {
    Summary s;
    s.add_all(t.data(), t.size());
    return s;
}

// Whether any layer of the model is of this kind.
inline bool any_layer(const DecoderConfig& c, AttentionKind kind) {
    return std::any_of(c.layer_specs.begin(), c.layer_specs.end(), [&](const LayerSpec& ls) { return ls.attention == kind; });
}

// 1000000 rather than 1e+06.
std::string whole_or_number(double v);
// A tensor's short name: "self_attn.o_proj" -> "o_proj", "wte.weight" -> "wte".
std::string short_name(std::string name);
// A weight's symbol in formulas: "c_fc" -> "W_fc", "gate_proj" -> "W_gate".
std::string weight_symbol(const std::string& name);

// The words of a family's parts, from its spec (model/family.hpp): its tensors' names
// (wte, ln_1, c_attn, c_proj; embed_tokens, input_layernorm, q_proj, o_proj), its norm,
// where the norms sit, its activation, and how its math is written.
struct Words {
    const FamilySpec* family = nullptr;
    bool fused = false;  // one fused Q | K | V tensor (c_attn)
    bool pre = true, post = false;  // norms before the sublayers, after them
    bool parallel = false;          // the attention and the MLP both read the norm of the layer's input
    std::string embed, norm, norm_1, norm_2, post_attention, post_mlp, out, final_norm, fused_qkv;
    std::string n1, n2;  // the norms in formulas
    std::string t;       // "ᵀ" for Linear's [out, in] weights, "" for x·W
    std::string mlp_hidden_title, mlp_hidden, mlp;
    std::string mlp_experts;  // a layer with a mixture of experts: its output
    std::string scale;  // what the scores are divided by, when not √d_h
    std::string logit_scale;  // " · 0.0625 (logit_scale)": what the logits are multiplied by, when they are (or how they are soft-capped)
    std::string layer_scalar;  // "layer_scalar": each layer's output is multiplied by its own number (Gemma 4), when it is
    bool per_layer = false;    // per-layer inputs mixed into each layer's output (Gemma 4 E2B, E4B)
    std::string per_layer_norm = "norm";  // the norm of their output (post_per_layer_input_norm)
    std::string mlp_act;       // the MLP's activation, as the per-layer gate applies it: "GELU" or "SiLU"
};

Words words_of(const DecoderConfig& c, const DecoderWeights* weights = nullptr);

// The words of each point of layer L of a block: id, title, formula.
struct PointText {
    std::string id, title, formula;
};
// The words of hook point `p` (the decoder's points of a block, and mlp_hidden); none for
// another id. `experts`: the layer's MLP is a mixture of experts.
std::optional<PointText> point_text(HookId p, const std::string& L, const Words& w, bool experts);

// The prompt's pass: the embeddings, every layer's points (the layer shown, or every
// layer when all are asked for, in full; the others as summaries), the shown layer's
// attention with mha's ids, and for the view every layer's weights.
class PromptTap : public DecoderTap {
public:
    PromptTap(Recorder& rec, const ModelSpec& spec, const ModelInfo& info, const Model& model, std::size_t T, bool explainable);
    xt::xtensor<float, 5> grid;  // (1,L,H,T,T): every layer's weights, for the view
    std::vector<KeptAttention> kept;  // the attentions kept for writing cells out: the shown layer's, and with the view every layer's

    bool keeps_attention(std::size_t layer) const override { return layer == spec_.layer || spec_.view || spec_.rollout; }
    // A summary of the layer shown, every head: its T×T steps are only summed (no view,
    // rollout or cell written out reads them).
    bool summarises_attention(std::size_t layer) const override {
        return layer == spec_.layer && sums_shown_layer(spec_, rec_.summarising(), explainable_);
    }
    std::vector<Mat> head_means;  // with the rollout: each layer's weights averaged over the heads (T×T)

    std::vector<Cube> residuals;  // with the logit lens: the stream entering layer 1, then after every layer

    std::vector<std::vector<std::size_t>> chosen_by_layer;  // with the view: each layer's chosen experts (T·k)

    std::string rope_words() const;
    // Each hook to its narration: a kind's value to the kind's file, the embeddings' and the
    // block's points (Cubes) to prompt.cpp; a point it does not narrate passes by.
    void hook(std::size_t l, HookId id, const Hooked& value) override;

private:
    void embeddings(HookId id, const Cube& t);
    void per_layer(HookId id, const Cube& t);  // per-layer inputs before the layers (prompt.cpp)
    void latent(std::size_t l, const LatentForward& f);        // latent.cpp
    void indexer(std::size_t l, const LatentForward& f, const LatentIndexerWeights& w);  // latent.cpp: DeepSeek-V3.2's
    void linear(std::size_t l, const GatedDeltaNetForward& f);  // deltanet.cpp
    void heads(std::size_t l, const Forward& f);                // heads.cpp
    void experts(std::size_t l, const MoeOutput& r);            // experts.cpp
    void block(std::size_t l, HookId p, const Cube& t);
    // Whether layer l's attention is kept for writing its cells out (then the rows entering
    // it and their norm are kept too: copies of T×C each, made only then).
    bool keeps_cells(std::size_t l) const { return l == spec_.layer ? explainable_ || spec_.explain : explainable_ && spec_.view; }
    // Layer l's attention as the explanation engine reads it: what entered the layer, its
    // norm, the weights (kept alive by the model), the forward.
    void keep(std::size_t l, const Forward& f);
    // Layer l's part of a kept attention: the rows entering it, its norm, its RoPE.
    LayerSource layer_source(std::size_t l) const;
    // A latent attention layer's parts, kept at its `latent` hook for its `heads` (latent.cpp).
    std::shared_ptr<LatentSource> latent_parts(const LatentForward& f, const LatentWeights& w) const;
    // What latent attention's scores are multiplied by, and why (latent.cpp).
    Scale latent_scale(std::size_t l, float scaling) const;
    // A Gated DeltaNet layer kept for writing its cells out (deltanet.cpp).
    void keep_delta(std::size_t l, const GatedDeltaNetForward& f);
    // A latent attention layer's queries, keys and values as heads (latent.cpp).
    void latent_heads(std::size_t l, const Forward& f, const std::string& in);

    Recorder& rec_;
    const ModelSpec& spec_;
    const ModelInfo& info_;
    const Model& model_;
    const DecoderWeights& weights_;
    const DecoderConfig& config_;
    Words words_;
    std::size_t T_;
    bool explainable_;
    Cube stream_, normed_;  // the rows entering the current layer, and after its norm
    std::shared_ptr<LatentSource> latent_kept_;  // the current latent attention layer's parts, until its heads
    Cube index_kept_;  // the shown latent layer's indexer choice (1,T,S), until its heads mask the weights
};

// The analyses of the prompt's pass, each a step or a few after the candidates.
// Per head, averaged over the query rows: the entropy of the row (nats), its largest
// weight, its weight on token 0 (the attention sink), on the previous token (rows 1…),
// on itself (view.cpp).
std::vector<double> head_stats(const float* a, std::size_t T);
// One value per layer in words: "0.3858", or "0.1548 in layers 1, 2, 4; 0.2454 in layer 3"
// when the layers differ (their windows), 4 decimals as the tables.
std::string layer_values(const std::vector<double>& per_layer);
void record_view(Recorder& rec, const ModelSpec& spec, const ModelInfo& info, const DecoderConfig& config, const xt::xtensor<float, 5>& grid,
                 std::size_t T);
// A mixture of experts in the model view: which experts each token went to, layer by layer (experts.cpp).
void record_experts_by_layer(Recorder& rec, const DecoderWeights& w, const std::vector<std::vector<std::size_t>>& chosen_by_layer, std::size_t T);
// Attention rollout (view.cpp).
void record_rollout(Recorder& rec, const std::vector<Mat>& means);
// The next token's candidates (generate.cpp).
void record_candidates(Recorder& rec, const ModelSpec& spec, const Mat& logits, const DecoderConfig& config);
void record_logit_lens(Recorder& rec, const ModelSpec& spec, const DecoderWeights& w, const std::vector<Cube>& residuals);
void record_ablation(Recorder& rec, const ModelSpec& spec, const DecoderWeights& w, const std::vector<std::size_t>& ids, std::size_t target);
void record_roles(Recorder& rec, const ModelSpec& spec, const DecoderWeights& w);
// What the circuits' grids need to write out any of their entries after the walk
// (circuit_entries.cpp): each attribution term's vector and direction, each patched run's
// metric and what it swapped.
struct AttributionEntries {
    std::string metric, direction;   // "logit(␣Mary) − logit(␣John)", "γ ⊙ (W_U[a] − W_U[b])"
    std::string answer, wrong;       // the tokens' labels (wrong: empty without a wrong answer)
    bool centred = false;            // a LayerNorm: each part centred (the direction is)
    double sigma = 1.0;              // the final stream's scale at the last position, frozen
    std::size_t L = 0, H = 0, C = 0, last = 0;
    std::vector<float> u;            // C: the direction, centred for a LayerNorm
    std::vector<double> after;       // L + 1: the layer scalars from layer l on (Gemma 4), else 1
    std::vector<float> heads;        // L·H·C: each head's output at the last position (zeros in a layer not separable)
    std::vector<double> head_dots;   // L·H: its dot product with u, in double
    std::vector<float> head_terms;   // L·H: the grid's entries
    std::vector<float> layers;       // L·2·C: each layer's attention and MLP output as the stream received it
    std::vector<double> layer_dots;  // L·2
    std::vector<float> layer_terms;  // L·2
};
// A metric's parts: the answer's logit, the wrong one's (logit difference) or the largest
// logit and log Σ exp(z − max) (log-probability).
struct MetricParts {
    double value = 0.0, answer = 0.0, wrong = 0.0, top = 0.0, log_sum = 0.0;
};
struct PatchingEntries {
    std::string metric, answer, wrong;  // wrong: empty for the log-probability
    std::vector<std::string> prompt, corrupt;  // the clean and the corrupted prompt's tokens
    MetricParts clean, corrupted;
    std::size_t L = 0, H = 0, T = 0, C = 0;
    std::vector<MetricParts> resid, heads, layers;    // L·T, L·H, L·2: each patched run's metric
    std::vector<float> resid_clean, resid_corrupted;  // L·T·C: the stream entering each layer
    std::vector<std::vector<float>> z_clean, z_corrupted;  // per layer, H·d_h at the last position (empty: no heads to patch)
    std::vector<float> out_clean, out_corrupted;      // L·2·C: the attention's and the MLP's output at the last position
};
struct CircuitEntries {
    std::optional<AttributionEntries> attribution;
    std::optional<PatchingEntries> patching;
};
// The entry `index` of step `step` written out (explain_attribution_*, explain_patching_*):
// appended to rec; false when the step has none there.
bool write_entry(Recorder& rec, const CircuitEntries& e, const std::string& step, std::size_t index);
// The explainer of these entries (joined to the kept attentions' by the walk).
std::shared_ptr<const Explainer> entries_explainer(std::shared_ptr<const CircuitEntries> e);

// Direct logit attribution and activation patching of the metric on `answer` (circuits.cpp),
// each keeping what its entries need in `entries` and writing one out.
void record_attribution(Recorder& rec, const ModelSpec& spec, const DecoderWeights& w, const std::vector<std::size_t>& ids, std::size_t answer,
                        CircuitEntries& entries);
void record_patching(Recorder& rec, const ModelSpec& spec, const DecoderWeights& w, const std::vector<std::size_t>& ids, std::size_t answer,
                     CircuitEntries& entries);
// Head spec.head of layer spec.layer: its QK and OV circuits, their eigenvalues (circuits.cpp).
void record_head_circuits(Recorder& rec, const ModelSpec& spec, const DecoderWeights& w, const std::vector<std::size_t>& ids);
// Greedy decoding through the KV cache, checked against the whole sequence (generate.cpp).
void generate(Recorder& rec, const LoadedModel& m, std::vector<std::size_t> ids, DecoderCache cache, Mat logits, const ModelSpec& spec);

}  // namespace attnwalk::model_walk
