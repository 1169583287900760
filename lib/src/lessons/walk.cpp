// The walks: each runs the one attention forward (attention.hpp) and records the
// intermediates its lesson is about, in data-flow order:
//   X (B,T,d_in) -> Q, K, V -> ω = Q·Kᵀ -> [mask] -> ω/s -> softmax -> [dropout] -> A·V -> [out_proj]
// With a query row i every tensor keeps only row i: ω (B,T), weights (B,T), context (B,d).
#include "attnwalk/lessons/lessons.hpp"

#include <algorithm>
#include <cmath>
#include <sstream>

#include <xtensor/xview.hpp>

#include "attnwalk/ops/attention.hpp"
#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/dropout.hpp"
#include "attnwalk/errors.hpp"
#include "attnwalk/lessons/explain.hpp"
#include "attnwalk/ops/blocked_attention.hpp"
#include "attnwalk/ops/mask.hpp"
#include "attnwalk/lessons/recorder.hpp"
#include "attnwalk/ops/scores.hpp"
#include "attnwalk/ops/softmax.hpp"
#include "walk_parts.hpp"

namespace attnwalk {

std::string format_number(double value) {
    std::ostringstream os;
    os.precision(6);
    os << value;
    return os.str();
}

Cost walk_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, std::size_t width, std::size_t heads,
               std::size_t rows) {
    return forward_cost(batch, tokens, d_in, width, heads, rows);
}

Cost dropout_ones_cost(std::size_t n) {
    const double N = static_cast<double>(n);
    return {4.0 * 4.0 * N * N, 2.0 * N * N};  // ones, keep, weights and their copies in the trace; a draw per element
}

bool mha_blocked(HeadLayout layout, const MhaSpec& spec, const Recording& rec) {
    const bool draws = spec.dropout.train && spec.dropout.p > 0.0;
    return rec.summary && layout == HeadLayout::fused && !draws && !spec.query && !spec.explain && !spec.window;
}

Cost mha_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, std::size_t width, std::size_t heads, HeadLayout layout,
              const MhaSpec& spec, const Recording& rec) {
    Cost c = forward_cost(batch, tokens, d_in, width, heads, spec.query ? 1 : tokens);
    if (mha_blocked(layout, spec, rec)) c.bytes = fast::blocked_bytes(batch, tokens, d_in, width);
    return c;
}

namespace walk_parts {

const std::vector<Axis> tokens_features{Axis::token, Axis::feature};
const std::vector<Axis> tokens_tokens{Axis::token, Axis::token};
const std::vector<Axis> head_tokens_features{Axis::head, Axis::token, Axis::feature};
const std::vector<Axis> head_tokens_tokens{Axis::head, Axis::token, Axis::token};

// A trace for `command` on this input: tokens, the input's params, the weights' origin.
Trace start_trace(const std::string& command, const Embeddings& input, const AttentionWeights* weights) {
    Trace trace;
    trace.command = command;
    trace.tokens = input.tokens;
    trace.batched = input.batched;
    trace.set_param("input", input.source);
    if (input.batched) trace.set_param("batch", static_cast<unsigned long long>(input.batch()));
    trace.set_param("num_tokens", static_cast<unsigned long long>(input.tokens_count()));
    trace.set_param("d_in", static_cast<unsigned long long>(input.dim()));
    if (weights)
        for (const auto& [name, value] : weights->origin) trace.set_param(name, value);
    return trace;
}

// Checks that nothing overflowed (check_finite), then keeps the trace as asked.
void charge_forward_time(Trace& trace, const Forward& f) {
    const auto& t = f.seconds;
    const struct {
        const char* id;
        double seconds;
    } charges[] = {{"queries", t.project / 3}, {"keys", t.project / 3},       {"values", t.project / 3},
                   {"scores", t.scores},       {"scores_masked", t.mask_scale}, {"weights", t.softmax},
                   {"weights_dropped", t.dropout}, {"head_outputs", t.context},  {"output", t.output}};
    const bool heads = std::any_of(trace.steps.begin(), trace.steps.end(), [](const Step& s) { return s.id == "head_outputs"; });
    for (Step& step : trace.steps) {
        for (const auto& c : charges)
            if (step.id == c.id) step.seconds += c.seconds;
        if (step.id == "scores_scaled" && f.causal == false) step.seconds += t.mask_scale;
        if (step.id == "context") step.seconds += heads ? 0.0 : t.context + t.output;  // one head: context is the output
    }
}

Trace finish(Trace trace, const Recording& recording, const Forward* f) {
    if (f) charge_forward_time(trace, *f);
    trace = check_finite(std::move(trace));
    if (recording.summary) summarise(trace);
    trace.timed = recording.summary || recording.timing;
    if (trace.timed) trace.backend = blas_backend();
    return trace;
}

std::string batch_prefix(const Trace& trace, std::size_t b) { return trace.batched ? "[" + std::to_string(b) + "] " : ""; }

// Head 0 of a (B,H,R,·) tensor: (B,R,·); and its row 0: (B,·).
Cube head0(const Hyper& t) { return xt::view(t, xt::all(), 0); }
Mat row0(const Hyper& t) { return xt::view(t, xt::all(), 0, 0); }

// W_query, W_key, W_value (and biases) as parameter steps; `prefix` before the ids
// (e.g. "head0." for the wrapper's heads).
void record_parameters(Recorder& rec, const Linear& q, const Linear& k, const Linear& v, const std::string& prefix,
                       const std::string& title_suffix) {
    const struct {
        const char* name;
        const Linear* layer;
    } layers[] = {{"query", &q}, {"key", &k}, {"value", &v}};
    for (const auto& l : layers) {
        const std::string name = l.name;
        rec.add_plain(prefix + "W_" + name, "W_" + name + title_suffix + " (d_in×d_out, x·W layout)", "W_" + name,
                      to_trace(l.layer->matrix()), {Axis::feature, Axis::feature})
            .kind = StepKind::parameter;
        if (l.layer->b.size() != 0)
            rec.add_plain(prefix + "b_" + name, "b_" + name + title_suffix, "b_" + name, to_trace(l.layer->b), {Axis::feature})
                .kind = StepKind::parameter;
    }
}

// "heads 0–1 → 0, heads 2–3 → 1": which query heads share each key/value head.
std::string grouping(std::size_t H, std::size_t G) {
    std::string out;
    const std::size_t n = H / G;
    for (std::size_t g = 0; g < G; ++g) {
        out += (g ? ", " : "") + std::string(n > 1 ? "heads " : "head ") + std::to_string(g * n) +
               (n > 1 ? "–" + std::to_string(g * n + n - 1) : "") + " → " + std::to_string(g);
    }
    return out;
}

// 1 where query i may attend to key j: causal and/or a window (masked_out).
Mat band_mask(std::size_t T, bool causal, std::size_t window) {
    Mat m({T, T});
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) m(i, j) = masked_out(i, j, causal, window) ? 0.0f : 1.0f;
    return m;
}

}  // namespace walk_parts

namespace {
using namespace walk_parts;

// What the scores are divided by: its symbol in formulas (√d_k, or the number given) and
// in words for titles (√d_k = √2).
Scale scale_of(const AttentionWeights* w, const std::optional<double>& given, float used) {
    Scale sc;
    sc.value = used;
    if (given || !w) {
        sc.symbol = sc.words = format_number(static_cast<double>(used));
    } else {
        sc.symbol = "√d_k";
        sc.words = "√d_k = √" + format_number(static_cast<double>(w->head_size()));
    }
    return sc;
}

// The single-head walks' common start: parameters, then Q, K, V (with weights).
void record_projections(Recorder& rec, const AttentionWeights* w, const Forward& f) {
    if (!w) return;
    record_parameters(rec, w->query, w->key, w->value, "", "");
    const bool bias = w->query.b.size() != 0;
    rec.add("queries", "Queries: every token projected by W_query", bias ? "Q = X·W_query + b_query" : "Q = X·W_query", f.q,
            tokens_features);
    rec.add("keys", "Keys: every token projected by W_key", bias ? "K = X·W_key + b_key" : "K = X·W_key", f.k, tokens_features);
    rec.add("values", "Values: every token projected by W_value", bias ? "V = X·W_value + b_value" : "V = X·W_value", f.v,
            tokens_features);
}

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
        Step& naive = rec.add_with_row_sums("weights_naive", "Naive softmax", "exp(" + v + "_j) / Σ_k exp(" + v + "_k)",
                                            softmax_naive(scaled), axes);
        naive.group = "normalise";
        naive.may_be_non_finite = true;  // the lesson: exp overflows
        if (!naive.tensor.all_finite())
            naive.note = "exp overflowed: float32 ends near 3.4e38, so exp(" + v + ") is inf for " + v +
                         " > 88.7, and inf/inf is NaN. The stable softmax subtracts the row maximum first and stays finite.";
    }
    Step& w = rec.add_with_row_sums("weights", compare ? "Stable softmax" : "Attention weights: softmax of the scores",
                                    "softmax(" + v + ")_j = exp(" + v + "_j − max " + v + ") / Σ_k exp(" + v + "_k − max " + v + ")",
                                    weights, axes);
    if (compare) w.group = "normalise";
}

// ---- one query ------------------------------------------------------------------------

void walk_one_query(Recorder& rec, const AttentionWeights* w, const Forward& f, const Scale& sc,
                    Stage stage, bool compare) {
    const Trace& trace = rec.trace();
    const std::size_t i = f.row0, B = f.q.shape(0), T = f.k.shape(1), d = f.k.shape(2);
    const std::string& qname = trace.tokens[i];
    const std::string qsym = w ? "q" : "x", ksym = w ? "k" : "x";

    // The loop: one dot product per key, term by term (the lesson, before the matrix form).
    Mat loop({B, T});
    std::vector<Expansion> dots;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t j = 0; j < T; ++j) {
            Expansion e;
            e.label = batch_prefix(trace, b) + qname + "·" + trace.tokens[j];
            float sum = 0.0f;
            for (std::size_t c = 0; c < d; ++c) {
                e.terms.push_back({f.q(b, i, c), {f.k(b, j, c)}});
                sum += f.q(b, i, c) * f.k(b, j, c);
            }
            e.result = {sum};
            loop(b, j) = sum;
            dots.push_back(std::move(e));
        }
    const std::string idx = std::to_string(i + 1);
    rec.add("scores_loop", "Attention scores of \"" + qname + "\", one dot product per token",
            "ω_" + idx + "j = " + qsym + "_" + idx + "·" + ksym + "_j = Σ_c " + qsym + "_" + idx + "c·" + ksym + "_jc", loop,
            {Axis::token})
        .expansion = std::move(dots);
    rec.add("scores", "The same scores as one matrix product", "ω_" + idx + " = " + qsym + "_" + idx + "·" + (w ? "Kᵀ" : "Xᵀ"),
            row0(f.scores), {Axis::token});
    if (stage == Stage::scores) return;

    if (f.scale != 1.0f)
        rec.add("scores_scaled", "Scores divided by " + sc.words, "s_" + idx + " = ω_" + idx + " / " + sc.symbol, row0(f.scaled),
                {Axis::token});
    const Mat weights = row0(f.weights);  // (B,T)
    record_weights(rec, row0(f.scaled), weights, {Axis::token}, compare, sc);
    if (stage == Stage::weights) return;

    // The context vector: the weighted sum of the values, term by term.
    std::vector<Expansion> sums;
    const Mat z = row0(f.head_outputs);  // (B,d)
    for (std::size_t b = 0; b < B; ++b) {
        Expansion e;
        e.label = batch_prefix(trace, b) + "z(" + qname + ")";
        for (std::size_t j = 0; j < T; ++j) {
            std::vector<float> vj(d);
            for (std::size_t c = 0; c < d; ++c) vj[c] = f.v(b, j, c);
            e.terms.push_back({weights(b, j), std::move(vj)});
        }
        e.result.assign(&z(b, 0), &z(b, 0) + d);
        sums.push_back(std::move(e));
    }
    rec.add("context", "Context vector of \"" + qname + "\": the weighted sum of the " + (w ? "values" : "embeddings"),
            "z_" + idx + " = Σ_j α_" + idx + "j·" + (w ? "v_j" : "x_j"), z, {Axis::feature})
        .expansion = std::move(sums);
}

// ---- scores, softmax, context -----------------------------------------------------------

void record_scores(Recorder& rec, const AttentionWeights* w, const Cube& scores, const Cube& scaled, const Scale& sc) {
    rec.add("scores", "Attention scores: every query against every key", w ? "ω = Q·Kᵀ" : "ω = X·Xᵀ", scores, tokens_tokens);
    if (sc.value != 1.0f) rec.add("scores_scaled", "Scores divided by " + sc.words, "s = ω / " + sc.symbol, scaled, tokens_tokens);
}

// `compare`: the three normalisations side by side (the softmax walk).
Trace single_head(const std::string& command, Stage stage, bool compare, const Embeddings& input, const Weights& weights,
                  const SingleHeadSpec& spec, const Recording& recording) {
    const AttentionWeights* w = weights.get();
    Trace trace = start_trace(command, input, w);
    Recorder rec(trace);
    const Cube x = cube_from_trace(input.x);
    ForwardSpec fs;
    if (spec.scale) fs.scale = static_cast<float>(*spec.scale);
    fs.query = spec.query;
    fs.until = stage;
    const Forward f = attention_forward(x, w, fs);
    rec.restart_clock();  // the forward's time goes to its steps (charge_forward_time)
    const Scale sc = scale_of(w, spec.scale, f.scale);
    trace.set_param("scale", static_cast<double>(f.scale));
    record_projections(rec, w, f);
    if (spec.query) {
        trace.set_param("query", static_cast<unsigned long long>(*spec.query));
        walk_one_query(rec, w, f, sc, stage, compare);
        return finish(std::move(trace), recording, &f);
    }
    record_scores(rec, w, head0(f.scores), f.scale != 1.0f ? head0(f.scaled) : Cube{}, sc);
    if (stage != Stage::scores) {
        record_weights(rec, head0(f.scaled), head0(f.weights), tokens_tokens, compare, sc);
        if (stage == Stage::output)
            rec.add("context", "Context vectors: each row of A mixes the " + std::string(w ? "values" : "embeddings"),
                    w ? "Z = A·V" : "Z = A·X", f.context, tokens_features);
    }
    if (spec.explain) {
        trace.set_param("explain", "[" + std::to_string(spec.explain->i) + "," + std::to_string(spec.explain->j) + "]");
        const ExplainDepth depth = stage == Stage::scores ? ExplainDepth::score
                                   : stage == Stage::weights ? ExplainDepth::weight
                                                             : ExplainDepth::context;
        explain_cell(rec, *spec.explain, x, w, f, sc, depth);
    }
    return finish(std::move(trace), recording, &f);
}

void check_cell(const std::optional<Cell>& cell, const Embeddings& input) {
    const std::size_t T = input.tokens_count();
    if (cell && (cell->i >= T || cell->j >= T))
        throw UsageError("cell " + std::to_string(cell->i) + "," + std::to_string(cell->j) + " is out of range: there are " +
                         std::to_string(T) + " tokens");
}

}  // namespace

Trace walk_scores(const Embeddings& input, const Weights& weights, const SingleHeadSpec& spec, const Recording& rec) {
    check_cell(spec.explain, input);
    return single_head("scores", Stage::scores, false, input, weights, spec, rec);
}
Trace walk_softmax(const Embeddings& input, const Weights& weights, const SingleHeadSpec& spec, const Recording& rec) {
    check_cell(spec.explain, input);
    return single_head("softmax", Stage::weights, true, input, weights, spec, rec);
}
Trace walk_context(const Embeddings& input, const Weights& weights, const SingleHeadSpec& spec, const Recording& rec) {
    check_cell(spec.explain, input);
    return single_head("context", Stage::output, false, input, weights, spec, rec);
}

// ---- causal ------------------------------------------------------------------------------

namespace {

void record_draw_params(Trace& trace, const DropoutDraw& draw) {
    trace.set_param("dropout", draw.p);
    trace.set_param("mode", std::string(draw.train ? "train" : "eval"));
}

void check_draw(const DropoutDraw& draw) {
    if (!(draw.p >= 0.0 && draw.p < 1.0)) throw UsageError("the dropout rate must be in [0, 1), got " + format_number(draw.p));
    if (draw.train && draw.p > 0.0 && !draw.gen) throw UsageError("dropout in training mode needs a random generator");
}

}  // namespace


Trace walk_causal(const Embeddings& input, const Weights& weights, const CausalSpec& spec, const Recording& recording) {
    check_cell(spec.explain, input);
    check_draw(spec.dropout);
    const AttentionWeights* w = weights.get();
    Trace trace = start_trace("causal", input, w);
    Recorder rec(trace);
    const Cube x = cube_from_trace(input.x);
    ForwardSpec fs;
    fs.causal = true;
    if (spec.scale) fs.scale = static_cast<float>(*spec.scale);
    fs.query = spec.query;
    if (spec.dropout.train) fs.dropout = {spec.dropout.p, spec.dropout.gen};
    const Forward f = attention_forward(x, w, fs);
    rec.restart_clock();  // the forward's time goes to its steps (charge_forward_time)
    const Scale sc = scale_of(w, spec.scale, f.scale);
    trace.set_param("scale", static_cast<double>(f.scale));
    if (spec.query) trace.set_param("query", static_cast<unsigned long long>(*spec.query));
    if (spec.dropout.p > 0.0) record_draw_params(trace, spec.dropout);
    record_projections(rec, w, f);

    // Every tensor below is (B,R,T): all rows, or the query's one row, recorded as (B,T).
    const bool one = spec.query.has_value();
    const std::size_t T = x.shape(1), i0 = f.row0;
    const std::vector<Axis> rows_axes = one ? std::vector<Axis>{Axis::token} : tokens_tokens;
    const auto put = [&](const std::string& id, const std::string& title, const std::string& formula, const Cube& t,
                         bool sums) -> Step& {
        const Mat row = xt::view(t, xt::all(), 0, xt::all());
        if (one) return sums ? rec.add_with_row_sums(id, title, formula, row, rows_axes) : rec.add(id, title, formula, row, rows_axes);
        return sums ? rec.add_with_row_sums(id, title, formula, t, rows_axes) : rec.add(id, title, formula, t, rows_axes);
    };
    const std::string at = one ? "_" + std::to_string(i0 + 1) : "";  // ω_2 for one query
    const Cube scores = head0(f.scores);
    const Cube scaled = f.scale == 1.0f ? scores : scale_scores(scores, f.scale);  // unmasked, for (a)
    put("scores", one ? "Attention scores of \"" + trace.tokens[i0] + "\"" : "Attention scores: every query against every key",
        "ω" + at + " = " + (w ? (one ? "q" + at + "·Kᵀ" : "Q·Kᵀ") : (one ? "x" + at + "·Xᵀ" : "X·Xᵀ")), scores, false);
    if (sc.value != 1.0f) put("scores_scaled", "Scores divided by " + sc.words, "s" + at + " = ω" + at + " / " + sc.symbol, scaled, false);
    Mat mask = causal_mask(T);
    if (one) {
        Mat row = xt::view(mask, xt::range(i0, i0 + 1), xt::all());
        rec.add_plain("mask", "The causal mask of \"" + trace.tokens[i0] + "\": it sees tokens 1.." + std::to_string(i0 + 1),
                      "M" + at + " = [j ≤ " + std::to_string(i0 + 1) + "]", to_trace(Vec(xt::view(row, 0, xt::all()))), {Axis::token});
    } else {
        rec.add_plain("mask", "The causal mask: token i sees tokens 1..i", "M = tril(ones(T, T))", to_trace(mask), tokens_tokens)
            .note = "The textbook keeps the complement as its buffer: torch.triu(torch.ones(T, T), diagonal=1), where 1 marks a "
                    "masked (future) position and masked_fill sets those scores to −∞.";
    }

    // (a) softmax over every key, zero the future, renormalise the rows
    const std::string s_sym = sc.value == 1.0f ? "ω" : "s";
    const Cube full = softmax(scaled);
    put("weights_unmasked", "(a) Softmax over all tokens, future included", "softmax(" + s_sym + ")", full, true);
    rec.mask_from_here(CellMask{});  // every token×token step below is after the mask
    const Cube zeroed = mask_future_zero(full, i0);
    put("weights_masked", "(a) Future weights zeroed: rows no longer sum to 1", "softmax(" + s_sym + ") ⊙ M", zeroed, true);
    const Cube renormalised = normalise_by_sum(zeroed);
    put("weights_renormalised", "(a) Each row divided by its sum", "(softmax(" + s_sym + ") ⊙ M) / Σ_j", renormalised, true);

    // (b) −∞ before the softmax: the forward's own path
    put("scores_masked", "(b) Before the softmax: future scores set to −∞", "ω_ij = −∞ for j > i", head0(f.masked), false)
        .may_be_non_finite = true;  // −∞ is the mask
    const Cube weights_b = head0(f.weights);
    put("weights", "(b) Softmax of the masked scores: the causal weights",
        f.scale == 1.0f ? "A = softmax(masked ω)" : "A = softmax(masked ω / " + sc.symbol + ")", weights_b, true);

    float max_diff = 0.0f;
    for (std::size_t n = 0; n < weights_b.size(); ++n)
        max_diff = std::max(max_diff, std::fabs(weights_b.data()[n] - renormalised.data()[n]));
    rec.add_plain("max_difference", "Largest difference between (a) and (b)", "max |A_a − A_b|", scalar_trace(max_diff), {})
        .note = "Both ways give the same weights, up to float rounding. Renormalising divides the unmasked "
                "exponentials by their own sum, so the denominator that once included the future cancels out: "
                "what is left is exactly the softmax over tokens 1..i. And with −∞, exp(−∞) = 0, so a future "
                "token never enters the sum at all. Either way no information from a later token reaches an "
                "earlier one.";
    // CausalAttention's dropout, between the weights and the values
    if (f.dropped) {
        if (spec.dropout.reseeded) trace.set_param("dropout_seed", static_cast<unsigned long long>(spec.dropout.gen->initial_seed()));
        put("dropout_mask", "Dropout mask: 1 = kept (probability " + format_number(1.0 - spec.dropout.p) + "), 0 = dropped",
            "keep_ij ~ Bernoulli(1 − p)", head0(f.keep), false)
            .note = "One double-precision uniform u per element, in row-major order; kept where u < 1 − p. " + spec.dropout.note;
        rec.add_plain("dropout_scale", "Kept values are scaled by 1/(1 − p)", "1 / (1 − " + format_number(spec.dropout.p) + ")",
                      scalar_trace(f.dropout_scale), {});
        put("weights_dropped", "Weights after dropout", "A ⊙ keep / (1 − p)", head0(f.weights_dropped), true);
    }
    const std::string context_title = one ? "Context vector of \"" + trace.tokens[i0] + "\": the values of tokens 1.." +
                                                std::to_string(i0 + 1) + " only"
                                          : "Context vectors: token i mixes the values of tokens 1..i only";
    const std::string context_formula = std::string(one ? "z" + at : "Z") + " = " + (f.dropped ? "A_dropped" : "A") +
                                        (one ? at : "") + "·" + (w ? "V" : "X");
    if (one) rec.add("context", context_title, context_formula, Mat(xt::view(f.context, xt::all(), 0, xt::all())), {Axis::feature});
    else rec.add("context", context_title, context_formula, f.context, tokens_features);
    if (spec.explain) {
        trace.set_param("explain", "[" + std::to_string(spec.explain->i) + "," + std::to_string(spec.explain->j) + "]");
        explain_cell(rec, *spec.explain, x, w, f, sc, ExplainDepth::context);
    }
    return finish(std::move(trace), recording, &f);
}

// ---- dropout -----------------------------------------------------------------------------

namespace {

// The keep mask, the scale and the weights after dropout (train), or the identity (eval).
template <std::size_t N>
void record_dropout(Recorder& rec, const DropoutDraw& draw, const xt::xtensor<float, N>& weights,
                    const xt::xtensor<float, N>& keep, float scale, const xt::xtensor<float, N>& dropped) {
    if (!draw.train) {
        rec.add("dropout_mask", "Dropout mask in eval mode: everything is kept", "keep = 1", keep, tokens_tokens)
            .note = "nn.Dropout is the identity at inference (model.eval()): no random draw, no scaling.";
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

}  // namespace

Trace walk_dropout(const Embeddings& input, const Weights& weights, const DropoutSpec& spec, const Recording& recording) {
    check_draw(spec.draw);
    const AttentionWeights* w = weights.get();
    Trace trace = start_trace("dropout", input, w);
    record_draw_params(trace, spec.draw);
    Recorder rec(trace);
    const Cube x = cube_from_trace(input.x);
    ForwardSpec fs;
    fs.causal = spec.causal;
    if (spec.scale) fs.scale = static_cast<float>(*spec.scale);
    if (spec.draw.train) fs.dropout = {spec.draw.p, spec.draw.gen};
    const Forward f = attention_forward(x, w, fs);
    rec.restart_clock();  // the forward's time goes to its steps (charge_forward_time)
    const Scale sc = scale_of(w, spec.scale, f.scale);
    trace.set_param("scale", static_cast<double>(f.scale));
    trace.set_param("causal", spec.causal);
    record_projections(rec, w, f);
    const Cube scores = head0(f.scores);
    record_scores(rec, w, scores, f.scale == 1.0f ? scores : scale_scores(scores, f.scale), sc);
    if (spec.causal) rec.mask_from_here(CellMask{});
    if (spec.causal)
        rec.add("scores_masked", "Before the softmax: future scores set to −∞", "ω_ij = −∞ for j > i", head0(f.masked),
                tokens_tokens)
            .may_be_non_finite = true;
    const Cube a = head0(f.weights);
    rec.add_with_row_sums("weights", spec.causal ? "Causal attention weights, before dropout" : "Attention weights, before dropout",
                          std::string("A = softmax(") + (spec.causal ? "masked ω" : "ω") +
                              (f.scale == 1.0f ? "" : " / " + sc.symbol) + ")",
                          a, tokens_tokens);
    const Cube keep = f.dropped ? head0(f.keep) : Cube(xt::ones<float>(a.shape()));
    record_dropout(rec, spec.draw, a, keep, f.dropout_scale, f.dropped ? head0(f.weights_dropped) : a);
    rec.add("context", spec.draw.train ? "Context vectors after dropout" : "Context vectors (eval): unchanged",
            w ? "Z = A·V" : "Z = A·X", f.context, tokens_features);
    return finish(std::move(trace), recording, &f);
}

Trace walk_dropout_ones(std::size_t n, const DropoutDraw& draw, const Recording& recording) {
    check_draw(draw);
    if (n < 1) throw UsageError("the matrix of ones needs at least 1 row");
    Trace trace;
    trace.command = "dropout";
    for (std::size_t i = 0; i < n; ++i) trace.tokens.push_back(std::to_string(i));
    trace.set_param("num_tokens", static_cast<unsigned long long>(n));
    record_draw_params(trace, draw);
    Recorder rec(trace);
    const Cube ones = xt::ones<float>({std::size_t{1}, n, n});
    rec.add("ones", "A " + std::to_string(n) + "×" + std::to_string(n) + " matrix of ones", "ones(N, N)", ones, tokens_tokens);
    if (!draw.train || draw.p == 0.0) {
        record_dropout(rec, draw, ones, ones, 1.0f, ones);
    } else {
        const auto d = dropout(ones, draw.p, *draw.gen);
        record_dropout(rec, draw, ones, d.keep, d.scale, d.output);
    }
    return finish(std::move(trace), recording);
}

// ---- multi-head attention ------------------------------------------------------------------

Trace walk_mha(const Embeddings& input, const Weights& weights, const MhaSpec& spec, const Recording& recording) {
    if (!weights) throw UsageError("multi-head attention needs weights");
    check_draw(spec.dropout);
    check_cell(spec.explain, input);
    if (spec.explain_head >= weights->heads)
        throw UsageError("head " + std::to_string(spec.explain_head) + " is out of range: there are " +
                         std::to_string(weights->heads) + " heads");
    const AttentionWeights& w = *weights;
    const bool stacked = w.layout == HeadLayout::stacked;
    const std::size_t H = w.heads, G = w.key_heads();
    check_head_shape(w.width(), H, w.kv_heads);
    if (spec.window && *spec.window < 1) throw UsageError("the window must be at least 1 token");
    Trace trace = start_trace("mha", input, &w);
    trace.set_param("variant", std::string(stacked ? "wrapper" : w.combined ? "combined-qkv" : "fused"));
    trace.set_param("heads", static_cast<unsigned long long>(H));
    if (G != H) trace.set_param("kv_heads", static_cast<unsigned long long>(G));
    trace.set_param("causal", spec.causal);
    if (spec.window) trace.set_param("window", static_cast<unsigned long long>(*spec.window));
    trace.set_param("dropout", spec.dropout.p);
    Recorder rec(trace);
    const Cube x = cube_from_trace(input.x);
    const std::size_t B = x.shape(0), T = x.shape(1), d_out = w.width(), d_h = w.head_size(), d_in = w.d_in();
    const std::size_t d_kv = G * d_h;

    // ---- the parameters, in PyTorch's construction order ---------------------------------
    if (stacked) {
        for (std::size_t h = 0; h < H; ++h)
            record_parameters(rec, w.head_columns(w.query, h), w.head_columns(w.key, h), w.head_columns(w.value, h),
                              "head" + std::to_string(h) + ".", " of head " + std::to_string(h));
    } else {
        if (w.combined) {
            rec.add_plain("W_qkv", "W_qkv: W_query | W_key | W_value in one layer (d_in×3·d_out, x·W layout)", "W_qkv",
                          to_trace(Mat(xt::concatenate(xt::xtuple(w.query.matrix(), w.key.matrix(), w.value.matrix()), 1))),
                          {Axis::feature, Axis::feature})
                .kind = StepKind::parameter;
            if (w.query.b.size() != 0)
                rec.add_plain("b_qkv", "b_qkv: b_query | b_key | b_value", "b_qkv",
                              to_trace(Vec(xt::concatenate(xt::xtuple(w.query.b, w.key.b, w.value.b), 0))), {Axis::feature})
                    .kind = StepKind::parameter;
        } else {
            record_parameters(rec, w.query, w.key, w.value, "", "");
        }
        if (w.out_proj) {
            rec.add_plain("out_proj.weight", "out_proj weight (d_out×d_out, x·W layout)", "W_o", to_trace(w.out_proj->matrix()),
                          {Axis::feature, Axis::feature})
                .kind = StepKind::parameter;
            rec.add_plain("out_proj.bias", "out_proj bias", "b_o", to_trace(w.out_proj->b), {Axis::feature}).kind =
                StepKind::parameter;
        }
    }

    // ---- the titles, one set for both paths ------------------------------------------------
    const std::string Hs = std::to_string(H), dhs = std::to_string(d_h), Gs = std::to_string(G);
    const bool masking = spec.causal || spec.window;
    const std::string weights_title = std::string(spec.window ? "Sliding-window attention" : spec.causal ? "Causal attention" : "Attention") +
                                      " weights of every head";
    const std::string weights_formula = std::string("A_h = softmax(") + (masking ? "masked " : "") + "ω_h / √" + dhs + ")";
    const std::string context_formula = stacked ? "Z = concat(Z_0, …, Z_H−1)" : "Z = Z.transpose(1, 2).view(B, T, d_out)";
    const std::string output_title = w.out_proj ? "Output projection of the concatenated heads"
                                                : "Output: the concatenation (the wrapper has no out_proj)";
    const std::string output_formula = w.out_proj ? "Y = Z·W_o + b_o" : "Y = Z";
    const std::string q_split_title = "Queries split into " + Hs + " heads of " + dhs + " columns";

    if (mha_blocked(w.layout, spec, recording) && w.out_proj && G == H) {  // a summary: blocked and fused, no T×T tensor kept
        rec.restart_clock();
        const fast::BlockedResult r = fast::blocked_attention(x, w, spec.causal);
        rec.add_summary("queries", "Queries for all heads at once", "Q = X·W_query", {T, d_out}, B, tokens_features, r.queries)
            .seconds = r.seconds.query;
        rec.add_summary("keys", "Keys for all heads at once", "K = X·W_key", {T, d_out}, B, tokens_features, r.keys).seconds =
            r.seconds.key;
        rec.add_summary("values", "Values for all heads at once", "V = X·W_value", {T, d_out}, B, tokens_features, r.values)
            .seconds = r.seconds.value;
        rec.add_summary("queries_split", q_split_title, "Q.view(B, T, H, d_h).transpose(1, 2)", {H, T, d_h}, B,
                        head_tokens_features, r.queries)
            .seconds = 0.0;
        rec.add_summary("keys_split", "Keys split into heads", "K.view(B, T, H, d_h).transpose(1, 2)", {H, T, d_h}, B,
                        head_tokens_features, r.keys)
            .seconds = 0.0;
        rec.add_summary("values_split", "Values split into heads", "V.view(B, T, H, d_h).transpose(1, 2)", {H, T, d_h}, B,
                        head_tokens_features, r.values)
            .seconds = 0.0;
        rec.add_summary("scores", "Scores of every head", "ω_h = Q_h·K_hᵀ", {H, T, T}, B, head_tokens_tokens, r.scores).seconds =
            r.seconds.scores;
        if (spec.causal)
            rec.add_summary("mask", "The causal mask, shared by every head", "M = tril(ones(T, T))", {T, T}, B, tokens_tokens,
                            r.mask, false)
                .seconds = 0.0;
        if (spec.causal) rec.mask_from_here(CellMask{});
        rec.add_summary("weights", weights_title, weights_formula, {H, T, T}, B, head_tokens_tokens, r.weights).seconds =
            r.seconds.softmax;
        rec.add_summary("head_outputs", "Each head's context vectors", "Z_h = A_h·V_h", {H, T, d_h}, B, head_tokens_features,
                        r.head_outputs)
            .seconds = r.seconds.values;
        rec.add_summary("context", "Heads concatenated along the features", context_formula, {T, d_out}, B, tokens_features,
                        r.head_outputs)
            .seconds = 0.0;
        Step& out = rec.add_summary("output", output_title, output_formula, {T, d_out}, B, tokens_features, r.output_summary);
        out.seconds = r.seconds.output;
        out.tensor.data = r.output;
        return finish(std::move(trace), recording);
    }

    // ---- the forward, every intermediate kept ------------------------------------------------
    ForwardSpec fs;
    fs.causal = spec.causal;
    fs.window = spec.window;
    fs.query = spec.query;
    if (spec.dropout.train) fs.dropout = {spec.dropout.p, spec.dropout.gen};
    const Forward f = attention_forward(x, &w, fs);
    rec.restart_clock();  // the forward's time goes to its steps (charge_forward_time)
    if (spec.query) trace.set_param("query", static_cast<unsigned long long>(*spec.query));
    // show_einsum: the operation of a step in einsum notation, after its note
    const auto einsum = [&](const std::string& text) {
        if (!spec.show_einsum) return;
        Step& s = trace.steps.back();
        s.note += (s.note.empty() ? "" : " ") + std::string("einsum: ") + text;
    };
    const std::string group_note =
        G == H ? ""
               : "Grouped-query attention: " + Gs + " key/value heads for " + Hs + " query heads; query head h reads key/value head h // " +
                     std::to_string(H / G) + " (" + grouping(H, G) + "). W_key and W_value are d_in×" + std::to_string(d_kv) +
                     " instead of d_in×" + std::to_string(d_out) + ": " + std::to_string(2 * d_in * (d_out - d_kv)) +
                     " fewer weights, and a KV cache keeps 2·" + std::to_string(d_kv) + " floats per token instead of 2·" +
                     std::to_string(d_out) + ".";
    if (w.combined) {
        const Cube qkv = xt::concatenate(xt::xtuple(f.q, f.k, f.v), 2);
        rec.add("qkv", "Queries, keys and values from one matrix product", "qkv = X·W_qkv" + std::string(w.query.b.size() ? " + b_qkv" : ""),
                qkv, tokens_features)
            .note = "MHACombinedQKV: one Linear(d_in, 3·d_out) instead of three; its columns are W_query | W_key | W_value.";
        einsum("'btc,cf->btf' (X, W_qkv)");
        rec.add("queries_split", q_split_title, "qkv.view(B, T, 3, H, d_h).permute(2, 0, 3, 1, 4)[0]", f.qh, head_tokens_features);
        einsum("rearrange 'bt(shd)->sbhtd', s = 0");
        rec.add("keys_split", "Keys split into heads", "qkv.view(B, T, 3, H, d_h).permute(2, 0, 3, 1, 4)[1]", f.kh, head_tokens_features);
        einsum("rearrange 'bt(shd)->sbhtd', s = 1");
        rec.add("values_split", "Values split into heads", "qkv.view(B, T, 3, H, d_h).permute(2, 0, 3, 1, 4)[2]", f.vh, head_tokens_features);
        einsum("rearrange 'bt(shd)->sbhtd', s = 2");
    } else if (stacked) {
        rec.add("queries", "Queries of every head (each head has its own W_query)", "Q_h = X·W_query_h", f.qh, head_tokens_features);
        rec.add("keys", "Keys of every head", "K_h = X·W_key_h", f.kh, head_tokens_features);
        rec.add("values", "Values of every head", "V_h = X·W_value_h", f.vh, head_tokens_features);
    } else {
        rec.add("queries", "Queries for all heads at once", "Q = X·W_query", f.q, tokens_features);
        einsum("'btc,cd->btd' (X, W_query)");
        rec.add("keys", G == H ? "Keys for all heads at once" : "Keys for the " + Gs + " key/value heads", "K = X·W_key", f.k,
                tokens_features)
            .note = group_note;
        einsum("'btc,cd->btd' (X, W_key)");
        rec.add("values", G == H ? "Values for all heads at once" : "Values for the " + Gs + " key/value heads", "V = X·W_value", f.v,
                tokens_features);
        einsum("'btc,cd->btd' (X, W_value)");
        rec.add("queries_split", q_split_title, "Q.view(B, T, H, d_h).transpose(1, 2)", f.qh, head_tokens_features);
        einsum("rearrange 'bt(hd)->bhtd' (a view, no arithmetic)");
        const std::string kv = G == H ? "H" : "G";
        rec.add("keys_split", G == H ? "Keys split into heads" : "Keys split into " + Gs + " key/value heads",
                "K.view(B, T, " + kv + ", d_h).transpose(1, 2)", f.kh, head_tokens_features);
        einsum("rearrange 'bt(" + std::string(G == H ? "h" : "g") + "d)->b" + (G == H ? "h" : "g") + "td'");
        rec.add("values_split", G == H ? "Values split into heads" : "Values split into " + Gs + " key/value heads",
                "V.view(B, T, " + kv + ", d_h).transpose(1, 2)", f.vh, head_tokens_features);
        einsum("rearrange 'bt(" + std::string(G == H ? "h" : "g") + "d)->b" + (G == H ? "h" : "g") + "td'");
    }
    // One query: every (B,H,1,·) tensor is recorded as (B,H,·), every (B,1,·) as (B,·).
    const bool one = spec.query.has_value();
    const std::string of = one ? " of \"" + trace.tokens[f.row0] + "\"" : "";
    const auto per_head = [&](const std::string& id, const std::string& title, const std::string& formula, const Hyper& t,
                              Axis last, bool sums) {
        if (!one) {
            const std::vector<Axis> axes{Axis::head, Axis::token, last};
            if (sums) rec.add_with_row_sums(id, title, formula, t, axes);
            else rec.add(id, title, formula, t, axes);
            return;
        }
        const Cube rows = xt::view(t, xt::all(), xt::all(), 0, xt::all());
        if (sums) rec.add_with_row_sums(id, title + of, formula, rows, {Axis::head, last});
        else rec.add(id, title + of, formula, rows, {Axis::head, last});
    };
    const auto joined = [&](const std::string& id, const std::string& title, const std::string& formula, const Cube& t) {
        if (one) rec.add(id, title + of, formula, Mat(xt::view(t, xt::all(), 0, xt::all())), {Axis::feature});
        else rec.add(id, title, formula, t, tokens_features);
    };
    per_head("scores", "Scores of every head", G == H ? "ω_h = Q_h·K_hᵀ" : "ω_h = Q_h·K_gᵀ, g = h // " + std::to_string(H / G),
             f.scores, Axis::token, false);
    einsum(G == H ? "'bhid,bhjd->bhij' (Q, K)"
                  : "'bgrid,bgjd->bgrij' (Q.view(B, G, H/G, T, d_h), K): each key/value head serves H/G query heads");
    if (masking && !one) {
        Step& m = rec.add_plain("mask", spec.window ? "The sliding-window mask (W = " + std::to_string(*spec.window) + "), shared by every head"
                                                    : "The causal mask, shared by every head",
                                spec.window ? (spec.causal ? "M_ij = 1 if i − W < j ≤ i" : "M_ij = 1 if i − W < j")
                                            : "M = tril(ones(T, T))",
                                to_trace(band_mask(T, spec.causal, spec.window.value_or(0))), tokens_tokens);
        if (spec.window)
            m.note = "Each token sees itself and at most W − 1 = " + std::to_string(*spec.window - 1) +
                     " tokens before it (a band of width W); a KV cache needs to keep only the last W keys and values.";
    }
    if (spec.causal) rec.mask_from_here(CellMask{true, spec.window.value_or(0)});
    per_head("weights", weights_title, weights_formula, f.weights, Axis::token, true);
    einsum("none: softmax over j of ω / √d_h (not a sum of products)");
    if (f.dropped) {
        if (spec.dropout.reseeded) trace.set_param("dropout_seed", static_cast<unsigned long long>(spec.dropout.gen->initial_seed()));
        per_head("dropout_mask", "Dropout mask of every head: 1 = kept", "keep ~ Bernoulli(1 − p)", f.keep, Axis::token, false);
        per_head("weights_dropped", "Weights after dropout", "A ⊙ keep / (1 − p)", f.weights_dropped, Axis::token, true);
    }
    per_head("head_outputs", "Each head's context vectors", G == H ? "Z_h = A_h·V_h" : "Z_h = A_h·V_g, g = h // " + std::to_string(H / G),
             f.head_outputs, Axis::feature, false);
    einsum(G == H ? "'bhij,bhjd->bhid' (A, V)" : "'bgrij,bgjd->bgrid' (A.view(B, G, H/G, T, T), V)");
    joined("context", "Heads concatenated along the features", context_formula, f.context);
    einsum("rearrange 'bhtd->bt(hd)'");
    joined("output", output_title, output_formula, f.output);
    if (w.out_proj) einsum("'btd,de->bte' (Z, W_o) + b_o");
    if (spec.explain) {
        trace.set_param("explain", "[" + std::to_string(spec.explain->i) + "," + std::to_string(spec.explain->j) + "]");
        trace.set_param("explain_head", static_cast<unsigned long long>(spec.explain_head));
        Scale sc;
        sc.value = f.scale;
        sc.symbol = "√d_h";
        sc.words = "√d_h = √" + std::to_string(d_h);
        explain_cell(rec, *spec.explain, x, &w, f, sc, ExplainDepth::context, spec.explain_head);
    }
    return finish(std::move(trace), recording, &f);
}

}  // namespace attnwalk
