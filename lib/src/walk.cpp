// The single-head walks: scores, softmax, context, causal, dropout.
//
// One pipeline, in data-flow order; each command stops at its own stage and records
// the steps that stage is about:
//   X (B,T,d_in) -> Q, K, V (B,T,d) -> ω = Q·Kᵀ (B,T,T) -> ω/s -> [mask] -> softmax -> [dropout] -> W·V (B,T,d)
// With --query i every tensor keeps only row i: ω (B,T), weights (B,T), context (B,d).
#include <algorithm>
#include <cmath>

#include <xtensor/xview.hpp>

#include "attnwalk/context.hpp"
#include "attnwalk/dropout.hpp"
#include "attnwalk/errors.hpp"
#include "attnwalk/explain.hpp"
#include "attnwalk/mask.hpp"
#include "attnwalk/scores.hpp"
#include "attnwalk/setup.hpp"
#include "attnwalk/softmax.hpp"

namespace attnwalk {

namespace {

enum class Stage { scores, softmax, context };

std::string batch_prefix(const Trace& trace, std::size_t b) {
    return trace.batched ? "[" + std::to_string(b) + "] " : "";
}

// Q, K, V: the projections of X, or X itself when there are none.
struct Attention {
    Cube q, k, v;        // (B,T,d)
    std::optional<QKV> qkv;  // none: Q = K = V = X
    bool projected = false;
    float scale = 1.0f;  // the scores are divided by this
    std::string scale_text;
};

Attention project_inputs(Setup& s, Recorder& rec, const WalkOptions& options) {
    Attention a;
    a.qkv = build_qkv(s, options);
    const auto& qkv = a.qkv;
    if (!qkv) {
        a.q = a.k = a.v = s.x;
        a.scale = static_cast<float>(options.scale.value_or(1.0));
        a.scale_text = format_number(options.scale.value_or(1.0));
    } else {
        a.projected = true;
        record_qkv_parameters(rec, *qkv, "", "");
        a.q = project(s.x, qkv->query);
        a.k = project(s.x, qkv->key);
        a.v = project(s.x, qkv->value);
        const bool bias = qkv->query.b.size() != 0;
        rec.add("queries", "Queries: every token projected by W_query", bias ? "Q = X·W_query + b_query" : "Q = X·W_query",
                a.q, {Axis::token, Axis::feature});
        rec.add("keys", "Keys: every token projected by W_key", bias ? "K = X·W_key + b_key" : "K = X·W_key",
                a.k, {Axis::token, Axis::feature});
        rec.add("values", "Values: every token projected by W_value", bias ? "V = X·W_value + b_value" : "V = X·W_value",
                a.v, {Axis::token, Axis::feature});
        const double d_k = static_cast<double>(a.k.shape(2));
        a.scale = static_cast<float>(options.scale.value_or(std::sqrt(d_k)));
        a.scale_text = options.scale ? format_number(*options.scale) : "√d_k = √" + format_number(d_k);
    }
    s.trace.set_param("scale", static_cast<double>(a.scale));
    return a;
}

// Scores -> weights. For the softmax walk, the three normalisations side by side first.
template <std::size_t N>
xt::xtensor<float, N> normalise(Recorder& rec, const xt::xtensor<float, N>& scaled, const std::vector<Axis>& axes,
                                bool compare) {
    if (compare) {
        rec.add("scores_shifted", "Stable softmax, first step: subtract each row's maximum", "ω_j − max_k ω_k",
                shift_by_row_max(scaled), axes);
        Step& sum = rec.add_with_row_sums("weights_sum", "Divide by the sum", "ω_j / Σ_k ω_k", normalise_by_sum(scaled), axes);
        sum.group = "normalise";
        sum.may_be_non_finite = true;  // scores summing to 0 are part of why this normalisation fails
        if (std::any_of(sum.tensor.data.begin(), sum.tensor.data.end(), [](float v) { return !(v >= 0.0f); }))
            sum.note = "Some weights are negative or not finite: dividing by the sum only works when every score is positive.";
        Step& naive = rec.add_with_row_sums("weights_naive", "Naive softmax", "exp(ω_j) / Σ_k exp(ω_k)", softmax_naive(scaled), axes);
        naive.group = "normalise";
        naive.may_be_non_finite = true;  // the lesson: exp overflows
        if (!naive.tensor.all_finite())
            naive.note = "exp overflowed: float32 ends near 3.4e38, so exp(ω) is inf for ω > 88.7, and inf/inf is NaN. "
                         "The stable softmax subtracts the row maximum first and stays finite.";
    }
    const xt::xtensor<float, N> weights = softmax(scaled);
    Step& w = rec.add_with_row_sums("weights", compare ? "Stable softmax" : "Attention weights: softmax of the scores",
                                    "softmax(ω)_j = exp(ω_j − max ω) / Σ_k exp(ω_k − max ω)", weights, axes);
    if (compare) w.group = "normalise";
    return weights;
}

// ---- one query ------------------------------------------------------------------------

void walk_one_query(Setup& s, Recorder& rec, const Attention& a, std::size_t i, Stage stage,
                    bool compare_normalisations) {
    const std::size_t B = a.q.shape(0), T = a.k.shape(1), d = a.k.shape(2);
    const std::string& qname = s.trace.tokens[i];
    const Mat q = xt::view(a.q, xt::all(), i, xt::all());  // (B,d)
    const std::string qsym = a.projected ? "q" : "x";
    const std::string ksym = a.projected ? "k" : "x";

    // The loop: one dot product per key, term by term.
    Mat loop({B, T});
    std::vector<Expansion> dots;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t j = 0; j < T; ++j) {
            Expansion e;
            e.label = batch_prefix(s.trace, b) + qname + "·" + s.trace.tokens[j];
            float sum = 0.0f;
            for (std::size_t c = 0; c < d; ++c) {
                e.terms.push_back({q(b, c), {a.k(b, j, c)}});
                sum += q(b, c) * a.k(b, j, c);
            }
            e.result = {sum};
            loop(b, j) = sum;
            dots.push_back(std::move(e));
        }
    const std::string idx = std::to_string(i + 1);
    Step& looped = rec.add("scores_loop", "Attention scores of \"" + qname + "\", one dot product per token",
                           "ω_" + idx + "j = " + qsym + "_" + idx + "·" + ksym + "_j = Σ_c " + qsym + "_" + idx + "c·" + ksym + "_jc",
                           loop, {Axis::token});
    looped.expansion = std::move(dots);
    const Mat scores = query_scores(q, a.k);  // (B,T)
    rec.add("scores", "The same scores as one matrix product", "ω_" + idx + " = " + qsym + "_" + idx + "·" + (a.projected ? "Kᵀ" : "Xᵀ"),
            scores, {Axis::token});
    if (stage == Stage::scores) return;

    Mat scaled = scores;
    if (a.scale != 1.0f) {
        scaled = scale_scores(scores, a.scale);
        rec.add("scores_scaled", "Scores divided by " + a.scale_text, "ω_" + idx + " / " + a.scale_text, scaled, {Axis::token});
    }
    const Mat weights = normalise(rec, scaled, {Axis::token}, compare_normalisations);  // (B,T)
    if (stage == Stage::softmax) return;

    // The context vector: the weighted sum of the values, term by term.
    std::vector<Expansion> sums;
    for (std::size_t b = 0; b < B; ++b) {
        Expansion e;
        e.label = batch_prefix(s.trace, b) + "z(" + qname + ")";
        for (std::size_t j = 0; j < T; ++j) {
            std::vector<float> vj(d);
            for (std::size_t c = 0; c < d; ++c) vj[c] = a.v(b, j, c);
            e.terms.push_back({weights(b, j), std::move(vj)});
        }
        sums.push_back(std::move(e));
    }
    const Mat z = query_context(weights, a.v);  // (B,d)
    for (std::size_t b = 0; b < B; ++b) sums[b].result.assign(&z(b, 0), &z(b, 0) + d);
    Step& ctx = rec.add("context", "Context vector of \"" + qname + "\": the weighted sum of the " + (a.projected ? "values" : "embeddings"),
                        "z_" + idx + " = Σ_j α_" + idx + "j·" + (a.projected ? "v_j" : "x_j"), z, {Axis::feature});
    ctx.expansion = std::move(sums);
}

// ---- every query ----------------------------------------------------------------------

struct Scores {
    Cube raw;     // ω (B,T,T)
    Cube scaled;  // ω / scale
};

Scores all_scores(Recorder& rec, const Attention& a) {
    Scores s{attention_scores(a.q, a.k), {}};  // (B,T,T)
    rec.add("scores", "Attention scores: every query against every key",
            a.projected ? "ω = Q·Kᵀ" : "ω = X·Xᵀ", s.raw, {Axis::token, Axis::token});
    s.scaled = a.scale == 1.0f ? s.raw : scale_scores(s.raw, a.scale);
    if (a.scale != 1.0f)
        rec.add("scores_scaled", "Scores divided by " + a.scale_text, "ω / " + a.scale_text, s.scaled, {Axis::token, Axis::token});
    return s;
}

Cube record_context(Recorder& rec, const Attention& a, const Cube& weights, const std::string& title) {
    Cube z = context_vectors(weights, a.v);  // (B,T,d)
    rec.add("context", title, a.projected ? "Z = A·V" : "Z = A·X", z, {Axis::token, Axis::feature});
    return z;
}

// --explain I,J: the steps of one cell, from the tensors the walk computed.
void explain(Recorder& rec, const Setup& s, const Attention& a, const Scores& scores, const Cube* scaled_masked,
             const Cube* weights, const Cube* context, const WalkOptions& options, ExplainDepth depth) {
    const auto [i, j] = parse_cell(*options.explain, s.trace.tokens);
    rec.trace().set_param("explain", "[" + std::to_string(i) + "," + std::to_string(j) + "]");
    ExplainInputs in;
    in.i = i;
    in.j = j;
    in.x = &s.x;
    in.qkv = a.qkv ? &*a.qkv : nullptr;
    in.q = &a.q;
    in.k = &a.k;
    in.v = &a.v;
    in.raw = &scores.raw;
    in.scores = scaled_masked ? scaled_masked : &scores.scaled;
    in.weights = weights;
    in.context = context;
    in.scale = a.scale;
    in.scale_text = a.scale_text;
    in.causal = scaled_masked != nullptr;
    explain_cell(rec, in, depth);
}

void walk_all_queries(Recorder& rec, const Setup& setup, const Attention& a, Stage stage, bool compare_normalisations,
                      const WalkOptions& options) {
    const Scores scores = all_scores(rec, a);
    if (stage == Stage::scores) {
        if (options.explain) explain(rec, setup, a, scores, nullptr, nullptr, nullptr, options, ExplainDepth::score);
        return;
    }
    const Cube weights = normalise(rec, scores.scaled, {Axis::token, Axis::token}, compare_normalisations);  // (B,T,T)
    if (stage == Stage::softmax) {
        if (options.explain) explain(rec, setup, a, scores, nullptr, &weights, nullptr, options, ExplainDepth::weight);
        return;
    }
    const Cube context = record_context(rec, a, weights, "Context vectors: each row of A mixes the " + std::string(a.projected ? "values" : "embeddings"));
    if (options.explain) explain(rec, setup, a, scores, nullptr, &weights, &context, options, ExplainDepth::context);
}

Trace walk_stage(const std::string& command, const Embeddings& input, const WalkOptions& options, Stage stage) {
    Setup s = start_walk(command, input, options);
    Recorder rec(s.trace);
    const Attention a = project_inputs(s, rec, options);
    const bool compare = command == "softmax";
    if (options.query && options.explain)
        throw UsageError("--explain and --query exclude each other: --explain I,J already names the query I");
    if (options.query) {
        const std::size_t i = resolve_query(*options.query, s.trace.tokens);
        s.trace.set_param("query", static_cast<long long>(i));
        walk_one_query(s, rec, a, i, stage, compare);
    } else {
        walk_all_queries(rec, s, a, stage, compare, options);
    }
    return finish(std::move(s.trace), options);
}

// Causal weights by the −∞ fill (method b), in the textbook's order: mask the raw
// scores, then divide by the scale and take the softmax.
// Returns the masked, scaled scores the softmax reads (for --explain) and the weights.
std::pair<Cube, Cube> causal_weights(Recorder& rec, const Attention& a, const Scores& s) {
    const Cube masked = mask_future_neg_inf(s.raw);
    rec.add("scores_masked", "(b) Before the softmax: future scores set to −∞", "ω_ij = −∞ for j > i",
            masked, {Axis::token, Axis::token})
        .may_be_non_finite = true;  // −∞ is the mask
    Cube scaled = a.scale == 1.0f ? masked : scale_scores(masked, a.scale);
    Cube weights = softmax(scaled);
    return {std::move(scaled), std::move(weights)};
}

}  // namespace

Trace walk_scores(const Embeddings& input, const WalkOptions& options) {
    return walk_stage("scores", input, options, Stage::scores);
}
Trace walk_softmax(const Embeddings& input, const WalkOptions& options) {
    return walk_stage("softmax", input, options, Stage::softmax);
}
Trace walk_context(const Embeddings& input, const WalkOptions& options) {
    return walk_stage("context", input, options, Stage::context);
}

Trace walk_causal(const Embeddings& input, const WalkOptions& options) {
    Setup s = start_walk("causal", input, options);
    Recorder rec(s.trace);
    const Attention a = project_inputs(s, rec, options);
    const std::size_t T = a.q.shape(1);
    const Scores scores = all_scores(rec, a);
    const Cube& scaled = scores.scaled;

    rec.add_plain("mask", "The causal mask: token i sees tokens 0..i", "M = tril(ones(T, T))",
                  to_trace(causal_mask(T)), {Axis::token, Axis::token});

    // (a) softmax over every key, zero the future, renormalise the rows
    const Cube full = softmax(scaled);
    rec.add_with_row_sums("weights_unmasked", "(a) Softmax over all tokens, future included", "softmax(ω)",
                          full, {Axis::token, Axis::token});
    const Cube zeroed = mask_future_zero(full);
    rec.add_with_row_sums("weights_masked", "(a) Future weights zeroed: rows no longer sum to 1", "softmax(ω) ⊙ M",
                          zeroed, {Axis::token, Axis::token});
    const Cube renormalised = normalise_by_sum(zeroed);
    rec.add_with_row_sums("weights_renormalised", "(a) Each row divided by its sum", "(softmax(ω) ⊙ M) / Σ_j",
                          renormalised, {Axis::token, Axis::token});

    // (b) −∞ before the softmax
    const auto [masked_scaled, weights] = causal_weights(rec, a, scores);
    rec.add_with_row_sums("weights", "(b) Softmax of the masked scores: the causal attention weights",
                          a.scale == 1.0f ? "A = softmax(masked ω)" : "A = softmax(masked ω / " + a.scale_text + ")",
                          weights, {Axis::token, Axis::token});

    float max_diff = 0.0f;
    for (std::size_t n = 0; n < weights.size(); ++n)
        max_diff = std::max(max_diff, std::fabs(weights.data()[n] - renormalised.data()[n]));
    Step& diff = rec.add_plain("max_difference", "Largest difference between (a) and (b)", "max |A_a − A_b|",
                               scalar_trace(max_diff), {});
    diff.note = "Both ways give the same weights, up to float rounding. Renormalising divides the unmasked "
                "exponentials by their own sum, so the denominator that once included the future cancels out: "
                "what is left is exactly the softmax over tokens 0..i. And with −∞, exp(−∞) = 0, so a future "
                "token never enters the sum at all. Either way no information from a later token reaches an "
                "earlier one.";
    const Cube context = record_context(rec, a, weights, "Context vectors: token i mixes the values of tokens 0..i only");
    if (options.explain) explain(rec, s, a, scores, &masked_scaled, &weights, &context, options, ExplainDepth::context);
    return finish(std::move(s.trace), options);
}

Trace walk_dropout(const Embeddings& input, const WalkOptions& options) {
    const double p = options.dropout;
    if (options.ones && *options.ones < 1) throw UsageError("--ones must be at least 1");
    Setup s = start_walk("dropout", input, options);
    Recorder rec(s.trace);
    s.trace.set_param("dropout", p);
    s.trace.set_param("mode", std::string(options.eval ? "eval" : "train"));

    Cube weights;
    std::optional<Attention> a;
    if (options.ones) {
        // The textbook's demonstration: dropout on a matrix of ones.
        const std::size_t n = *options.ones;
        s.trace.tokens.clear();
        for (std::size_t i = 0; i < n; ++i) s.trace.tokens.push_back(std::to_string(i));
        s.trace.batched = false;
        weights = xt::ones<float>({std::size_t{1}, n, n});
        rec.add("ones", "A " + std::to_string(n) + "×" + std::to_string(n) + " matrix of ones", "ones(N, N)", weights,
                {Axis::token, Axis::token});
    } else {
        a = project_inputs(s, rec, options);
        const Scores scores = all_scores(rec, *a);
        weights = options.causal ? causal_weights(rec, *a, scores).second : softmax(scores.scaled);
        s.trace.set_param("causal", options.causal);
        rec.add_with_row_sums("weights_before_dropout",
                              options.causal ? "Causal attention weights, before dropout" : "Attention weights, before dropout",
                              "A = softmax(ω)", weights, {Axis::token, Axis::token});
    }

    if (options.eval) {
        Cube keep = xt::ones<float>(weights.shape());
        rec.add("dropout_mask", "Dropout mask in eval mode: everything is kept", "keep = 1", keep, {Axis::token, Axis::token})
            .note = "nn.Dropout is the identity at inference (model.eval()): no random draw, no scaling.";
        rec.add_with_row_sums("weights", "Weights after dropout (eval): unchanged", "A", weights, {Axis::token, Axis::token});
        if (a) record_context(rec, *a, weights, "Context vectors (eval): unchanged");
        return finish(std::move(s.trace), options);
    }

    // The dropout draw continues the --seed stream, unless --dropout-seed reseeds it.
    std::string seed_note;
    if (options.dropout_seed || !s.gen) {
        const std::uint64_t seed = options.dropout_seed.value_or(default_dropout_seed);
        if (!s.gen) s.gen.emplace(seed);
        s.gen->manual_seed(seed);
        s.trace.set_param("dropout_seed", static_cast<long long>(seed));
        seed_note = options.dropout_seed ? "The generator was reseeded with " + std::to_string(seed) + " right before the draw."
                                         : "No --seed or --dropout-seed given: the draw uses seed " + std::to_string(seed) + ".";
    } else {
        seed_note = "The draw continues the --seed stream after the weights, as a PyTorch script would.";
    }
    const auto drop = dropout(weights, p, *s.gen);
    Step& mask = rec.add("dropout_mask", "Dropout mask: 1 = kept (probability " + format_number(1.0 - p) + "), 0 = dropped",
                         "keep_ij ~ Bernoulli(1 − p)", drop.keep, {Axis::token, Axis::token});
    mask.note = "One double-precision uniform u per element, in row-major order; kept where u < 1 − p. " + seed_note;
    rec.add_plain("dropout_scale", "Kept values are scaled by 1/(1 − p)", "1 / (1 − " + format_number(p) + ")",
                  scalar_trace(drop.scale), {})
        .note = "The scaling keeps the expected sum of each row unchanged, so training and inference see the same average.";
    rec.add_with_row_sums("weights", "Weights after dropout", "A ⊙ keep / (1 − p)", drop.output, {Axis::token, Axis::token});
    if (a) record_context(rec, *a, drop.output, "Context vectors after dropout");
    return finish(std::move(s.trace), options);
}

}  // namespace attnwalk
