// causal: the mask both ways, (a) after the softmax and renormalised, (b) −∞ before it,
// and why they agree; CausalAttention's dropout.
#include <algorithm>
#include <cmath>

#include <xtensor/xview.hpp>

#include "attnwalk/ops/mask.hpp"
#include "attnwalk/ops/scores.hpp"
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

ATTNWALK_LESSON(causal, 40) {
    static const LessonDecl lesson{"causal", "The causal mask two ways: mask after the softmax and renormalise, or −∞ before the softmax.",
        joined({parameter_steps(), projection_steps(), {
            {"scores", "ω = Q·Kᵀ (X·Xᵀ without projections)"},
            {"scores_scaled", "ω divided by the scale"},
            {"mask", "the mask: 1 where a query may attend (causal: on and below the diagonal; a window: the band)"},
            {"weights_unmasked", "(a) softmax over every token"},
            {"weights_masked", "(a) future weights set to 0"},
            {"weights_renormalised", "(a) each row divided by its sum"},
            {"scores_masked", "(b) scores with −∞ above the diagonal", headline},
            {"weights", "the attention weights: the softmax of the (masked, scaled) scores, before any dropout", headline | opening},
            {"max_difference", "the largest |difference| between two ways that must agree (causal: (a) and (b))", headline},
            {"dropout_mask", "1 = kept, 0 = dropped"},
            {"dropout_scale", "1/(1 − p) in float32"},
            {"weights_dropped", "the weights after dropout: kept values × 1/(1 − p) (unchanged in eval mode)", headline | opening},
            {"context", "the context vectors (heads concatenated)", headline},
        }, explain_steps()})};
    return lesson;
}

Trace walk_causal(const Embeddings& input, const Weights& weights, const CausalSpec& spec, const Recording& recording) {
    check_explain(spec.explain, 0, 1, input.tokens_count());
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
    if (spec.query) set_query_param(trace, *spec.query);
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
                      "M" + at + " = [j ≤ " + std::to_string(i0 + 1) + "]", to_trace(Vec(xt::view(row, 0, xt::all()))), {Axis::token})
            .legend = mask_legend;
    } else {
        Step& m = rec.add_plain("mask", "The causal mask: token i sees tokens 1..i", "M = tril(ones(T, T))", to_trace(mask), tokens_tokens);
        m.legend = mask_legend;
        m.note = "The textbook keeps the complement as its buffer: torch.triu(torch.ones(T, T), diagonal=1), where 1 marks a "
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
    put("weights_renormalised", "(a) Each row divided by its sum", "(softmax(" + s_sym + ") ⊙ M) / its row sum", renormalised, true);

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
        set_explain_params(trace, *spec.explain, std::nullopt);
        explain_cell(rec, *spec.explain, x, w, f, sc, ExplainDepth::context);
    }
    return explainable(finish(std::move(trace), recording, &f), recording, f, x, weights, sc, ExplainDepth::context);
}

}  // namespace attnwalk
