// dropout: on the causal weights (train or eval) and on the textbook's matrix of ones.
#include <xtensor/xbuilder.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/dropout.hpp"
#include "attnwalk/ops/scores.hpp"
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

ATTNWALK_LESSON(dropout, 50) {
    static const LessonDecl lesson{"dropout", "Dropout on the attention weights: the keep mask, the 1/(1−p) scaling, train vs eval.",
        joined({parameter_steps(), projection_steps(), {
            {"ones", "the matrix of ones dropout is shown on (in place of the weights)"},
            {"scores", "ω = Q·Kᵀ (X·Xᵀ without projections)"},
            {"scores_scaled", "ω divided by the scale"},
            {"scores_masked", "(b) scores with −∞ above the diagonal"},
            {"weights", "the attention weights: the softmax of the (masked, scaled) scores, before any dropout", opening},
            {"dropout_mask", "1 = kept, 0 = dropped", headline},
            {"dropout_scale", "1/(1 − p) in float32"},
            {"weights_dropped", "the weights after dropout: kept values × 1/(1 − p) (unchanged in eval mode)", headline | opening},
            {"context", "the context vectors (heads concatenated)"},
        }})};
    return lesson;
}

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
    for (std::size_t i = 0; i < n; ++i) trace.tokens.push_back(std::to_string(i + 1));  // rows count from 1
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

}  // namespace attnwalk
