// What the lessons share: the axes of their steps, the start and finish of a trace, the
// recording helpers several lessons use (parameters, projections, weights, dropout, one
// query written out, one cell explained) and the checks of their specs. Internal to
// lib/src/lessons/.
#pragma once

#include <algorithm>
#include <cstddef>
#include <functional>
#include <limits>
#include <optional>
#include <string>
#include <vector>

#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/lessons/explain.hpp"
#include "attnwalk/lessons/lessons.hpp"
#include "attnwalk/lessons/recorder.hpp"
#include "attnwalk/ops/attention.hpp"
#include "attnwalk/ops/softmax.hpp"

namespace attnwalk::steps {

using ull = unsigned long long;
constexpr float neg_inf = -std::numeric_limits<float>::infinity();
extern const std::vector<Axis> tokens_features, tokens_tokens, head_tokens_features, head_tokens_tokens;
// What a mask's entries mean (Step::legend) where 1 keeps a key: tril's convention, the
// reverse of the textbook's torch.triu buffer (1 where blocked).
constexpr const char* mask_legend = "1 = visible, 0 = masked; the textbook's triu buffer: the reverse";

// A trace for `command` on this input: tokens, the input's params, the weights' origin.
Trace start_trace(const std::string& command, const Embeddings& input, const AttentionWeights* weights);
// Adds each phase's time to the step of `trace` that shows its result (queries, keys,
// values, scores, ..., output), for a timed trace: the walks record after the forward.
void charge_forward_time(Trace& trace, const Forward& f);
// The lesson of `command` recorded only what it declares (catalogue.hpp): the declaration
// is the contract. Steps of no lesson's command keep to the catalogue of every step.
// std::logic_error names the first that does not. Marks the steps the lesson declares
// `opening` (Step::opens). Every walk calls it, most through finish.
void check_declared(const std::string& command, std::vector<Step>& steps);
// Checks the ids (check_declared) and that nothing overflowed (check_finite), then keeps
// the trace as asked.
Trace finish(Trace trace, const Recording& recording, const Forward* f = nullptr);
// The trace, with the forward kept for writing out any of its cells after the walk when
// the recording asks (trace.explainer): every head of batch element 0, down to `depth`.
Trace explainable(Trace trace, const Recording& recording, const Forward& f, const Cube& x, std::shared_ptr<const AttentionWeights> weights,
                  const Scale& scale, ExplainDepth depth);
std::string batch_prefix(const Trace& trace, std::size_t b);
// Head 0 of a (B,H,R,·) tensor: (B,R,·); and its row 0: (B,·).
Cube head0(const Hyper& t);
Mat row0(const Hyper& t);
// W_query, W_key, W_value (and biases) as parameter steps; `prefix` before the ids.
void record_parameters(Recorder& rec, const Linear& q, const Linear& k, const Linear& v, const std::string& prefix,
                       const std::string& title_suffix);
// "heads 1–2 → 1, heads 3–4 → 2": which query heads share each key/value head.
std::string grouping(std::size_t H, std::size_t G);
// 1 where query i may attend to key j (masked_out).
Mat band_mask(std::size_t T, bool causal, std::size_t window);
// The mean weight rows `back` … T − 1 would give the key `back` places before them if each
// spread its weight evenly over the keys it sees (causal or not, inside the window): the
// baseline of a diagonal's score (head roles).
double even_stripe(std::size_t T, bool causal, std::size_t window, std::size_t back);
// "4 heads, 16 features each" ("1 head, 1 feature"): H and the width of each.
std::string heads_words(std::size_t heads, std::size_t width);
// A baseline or a measure in a note, with the 4 decimals of the tables beside it ("0.1548").
std::string four_decimals(double value);
// A note for a window at least as wide as the T tokens ("" otherwise): it masks nothing.
std::string window_covers_note(const std::optional<std::size_t>& window, std::size_t T);

// What the scores are divided by: its symbol in formulas (√d_k, or the number given) and
// in words for titles (√d_k = √2).
Scale scale_of(const AttentionWeights* w, const std::optional<double>& given, float used);
// The single-head lessons' common start: parameters, then Q, K, V (with weights).
void record_projections(Recorder& rec, const AttentionWeights* w, const Forward& f);
// The scores of every query (and, scaled, what the softmax reads).
void record_scores(Recorder& rec, const AttentionWeights* w, const Cube& scores, const Cube& scaled, const Scale& sc);
// One query row, its dot products and weighted sum written out, down to `stage`.
void walk_one_query(Recorder& rec, const AttentionWeights* w, const Forward& f, const Scale& sc, Stage stage, bool compare);
// The dropout rate and mode as params; a rate outside [0, 1) or a draw without a generator.
void record_draw_params(Trace& trace, const DropoutDraw& draw);
void check_draw(const DropoutDraw& draw);
// The positions the options named, as params: query_index (a row of inputs), explain_index
// (a cell of the weights) and explain_head_index, 0-based as PyTorch indexes.
void set_query_param(Trace& trace, std::size_t query);
void set_explain_params(Trace& trace, const Cell& cell, std::optional<std::size_t> head);
// A cell inside the T×T matrix and a head < heads; UsageError otherwise.
void check_explain(const std::optional<Cell>& cell, std::size_t head, std::size_t heads, std::size_t T);
// √d_h (with weights) or the number, as the lessons beyond the chapter write the scale.
Scale head_scale(const AttentionWeights* w, const Forward& f);
// Writes out one cell of `f` (batch element 0), its cell and head in the params.
void explain(Recorder& rec, const Cell& cell, std::size_t head, const Cube& x, const AttentionWeights* w, const Forward& f,
             ExplainDepth depth);
// out_proj's weight and bias as parameter steps (when there is one).
void record_out_proj(Recorder& rec, const AttentionWeights& w);
// 2360064 -> "2,360,064"; a byte count in words (scientific beyond 64 bits); "token" quoted.
std::string grouped(ull n);
std::string bytes_text(double bytes);
// "288 bytes", or with the textbook's estimators' figure beside: "20,468,203,520 bytes (20.47 GB)".
std::string gigabytes(double bytes);
// A count as an exact integer (below 2^53) or a float32; UsageError naming `what` past
// float32's range.
Tensor count_tensor(double n, const std::string& what);
// Several counts as one vector: exact integers when every one is below 2^53, else float32.
Tensor counts_tensor(const std::vector<double>& n, const std::string& what);
std::string quoted(const std::string& token);
float max_abs_diff(const Cube& a, const Cube& b);

// Scores -> weights. For the softmax walk, the three normalisations side by side first.
template <std::size_t N>
void record_weights(Recorder& rec, const xt::xtensor<float, N>& scaled, const xt::xtensor<float, N>& weights,
                    const std::vector<Axis>& axes, bool compare, const Scale& sc) {
    const std::string v = sc.value == 1.0f ? "ω" : "s";  // what the softmax reads
    if (compare) {
        rec.add("scores_shifted", "Stable softmax, first step: subtract each row's maximum", v + "_j − max_k " + v + "_k",
                shift_by_row_max(scaled), axes);
        Step& sum = rec.add_with_row_sums("weights_sum", "Divide by the sum", v + "_j / Σ_k " + v + "_k", normalise_by_sum(scaled), axes);
        sum.group = "normalise";
        sum.may_be_non_finite = true;  // scores summing to 0 are part of why this normalisation fails
        if (std::any_of(sum.tensor.data.begin(), sum.tensor.data.end(), [](float x) { return !(x >= 0.0f); }))
            sum.note = "Some weights are negative or not finite: dividing by the sum only works when every score is positive.";
        // a row of finite scores whose float32 sum is ±inf (every score over it 0: a row summing to
        // a finite number keeps its largest share, at least 1/n, above 0) or NaN (partial sums
        // past +3.4e38 and −3.4e38 together: every weight NaN)
        const std::size_t n = sum.tensor.shape.back(), rows = n ? sum.tensor.data.size() / n : 0;
        std::size_t overflowed = 0;
        for (std::size_t r = 0; r < rows; ++r) {
            const float* w = sum.tensor.data.data() + r * n;
            const float* s = scaled.data() + r * n;
            const bool zeros = std::all_of(w, w + n, [](float x) { return x == 0.0f; }) && std::any_of(s, s + n, [](float x) { return x != 0.0f; });
            const bool nans = std::all_of(w, w + n, [](float x) { return std::isnan(x); });
            overflowed += (zeros || nans) && std::all_of(s, s + n, [](float x) { return std::isfinite(x); });
        }
        if (overflowed)
            sum.note += std::string(sum.note.empty() ? "" : " ") + std::to_string(overflowed) + (overflowed == 1 ? " row's" : " rows'") +
                        " scores sum past float32's ±3.4e38: the sum is inf, and each score divided by it 0 (or NaN, where partial sums passed both ends).";
        Step& naive = rec.add_with_row_sums("weights_naive", "Naive softmax", "exp(" + v + "_j) / Σ_k exp(" + v + "_k)",
                                            softmax_naive(scaled), axes);
        naive.group = "normalise";
        naive.may_be_non_finite = true;  // the lesson: exp overflows
        if (!naive.tensor.all_finite()) {
            std::vector<float> over;  // the scores whose exp is inf, the largest first
            for (float s : scaled)
                if (s > 88.7228f && std::find(over.begin(), over.end(), s) == over.end()) over.push_back(s);
            std::sort(over.begin(), over.end(), std::greater<>());
            std::string which;
            for (std::size_t i = 0; i < over.size() && i < 4; ++i) which += (i ? ", " : "") + format_number(over[i]);
            if (over.size() > 4) which += ", …";
            naive.note = "exp overflowed: float32 ends near 3.4e38, so exp(" + v + ") is inf for " + v + " > 88.7, here " + v + " = " + which +
                         "; inf/inf is NaN. The stable softmax subtracts the row maximum first and stays finite.";
        }
    }
    Step& w = rec.add_with_row_sums("weights", compare ? "Stable softmax" : "Attention weights: softmax of the scores",
                                    "softmax(" + v + ")_j = exp(" + v + "_j − max " + v + ") / Σ_k exp(" + v + "_k − max " + v + ")",
                                    weights, axes);
    if (compare) w.group = "normalise";
}

// The keep mask, the scale and the weights after dropout (train), or the identity (eval).
template <std::size_t N>
void record_dropout(Recorder& rec, const DropoutDraw& draw, const xt::xtensor<float, N>& weights,
                    const xt::xtensor<float, N>& keep, float scale, const xt::xtensor<float, N>& dropped) {
    if (!draw.train) {
        rec.add("dropout_mask", "Dropout mask in eval mode: everything is kept", "keep = 1", keep, tokens_tokens)
            .note = "nn.Dropout is the identity at inference (model.eval()): no random draw, no scaling." + (draw.note.empty() ? "" : " " + draw.note);
        rec.add_with_row_sums("weights_dropped", "Weights after dropout (eval): unchanged", "A", weights, tokens_tokens);
        return;
    }
    if (draw.reseeded) rec.trace().set_param("dropout_seed", static_cast<unsigned long long>(draw.gen->initial_seed()));
    rec.add("dropout_mask", "Dropout mask: 1 = kept (probability " + format_number(1.0 - draw.p) + "), 0 = dropped",
            "keep_ij ~ Bernoulli(1 − p)", keep, tokens_tokens)
        .note = "One double-precision uniform u per element, in row-major order; kept where u < 1 − p. " + draw.note;
    rec.add_plain("dropout_scale", "Kept values are scaled by 1/(1 − p)", "1 / (1 − " + format_number(draw.p) + ")",
                  scalar_trace(scale), {})
        .note = "The scaling keeps the expected sum of each row unchanged, so training and inference see the same average.";
    rec.add_with_row_sums("weights_dropped", "Weights after dropout", "A ⊙ keep / (1 − p)", dropped, tokens_tokens);
}

}  // namespace attnwalk::steps
