// scores, softmax, context: one head on every query (or one query written out), the
// forward's intermediates down to the scores, the weights or the context vectors.
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

namespace {

// What the three lessons share: one query's scores written out, every score, the scaled scores.
std::vector<StepDecl> score_steps(unsigned compact) {
    return {{"scores_loop", "one query's scores, one dot product at a time", compact},
            {"scores", "ω = Q·Kᵀ (X·Xᵀ without projections)", compact},
            {"scores_scaled", "ω divided by the scale"}};
}

}  // namespace

ATTNWALK_LESSON(scores, 10) {
    static const LessonDecl lesson{"scores", "Dot-product attention scores: one query with every token, or the full ω = X·Xᵀ (Q·Kᵀ with projections).",
        joined({parameter_steps(), projection_steps(), score_steps(headline), explain_steps()})};
    return lesson;
}

ATTNWALK_LESSON(softmax, 20) {
    static const LessonDecl lesson{"softmax", "From scores to weights: divide by the sum vs naive softmax vs stable softmax, each row's sum shown.",
        joined({parameter_steps(), projection_steps(), score_steps(detail), {
            {"scores_shifted", "ω minus its row maximum"},
            {"weights_sum", "ω divided by its row sum", headline},
            {"weights_naive", "exp(ω) divided by its row sum", headline},
            {"weights", "the attention weights: the softmax of the (masked, scaled) scores, before any dropout", headline | opening},
        }, explain_steps()})};
    return lesson;
}

ATTNWALK_LESSON(context, 30) {
    static const LessonDecl lesson{"context", "Context vectors: each token's weighted sum of the embeddings (or of the values, with projections).",
        joined({parameter_steps(), projection_steps(), score_steps(detail), {
            {"weights", "the attention weights: the softmax of the (masked, scaled) scores, before any dropout", headline | opening},
            {"context", "the context vectors (heads concatenated)", headline},
        }, explain_steps()})};
    return lesson;
}

namespace {

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
        set_query_param(trace, *spec.query);
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
        set_explain_params(trace, *spec.explain, std::nullopt);
        explain_cell(rec, *spec.explain, x, w, f, sc,
                     stage == Stage::scores ? ExplainDepth::score : stage == Stage::weights ? ExplainDepth::weight : ExplainDepth::context);
    }
    const ExplainDepth depth = stage == Stage::scores ? ExplainDepth::score : stage == Stage::weights ? ExplainDepth::weight : ExplainDepth::context;
    return explainable(finish(std::move(trace), recording, &f), recording, f, x, weights, sc, depth);
}

}  // namespace

Trace walk_scores(const Embeddings& input, const Weights& weights, const SingleHeadSpec& spec, const Recording& rec) {
    check_explain(spec.explain, 0, 1, input.tokens_count());
    return single_head("scores", Stage::scores, false, input, weights, spec, rec);
}
Trace walk_softmax(const Embeddings& input, const Weights& weights, const SingleHeadSpec& spec, const Recording& rec) {
    check_explain(spec.explain, 0, 1, input.tokens_count());
    return single_head("softmax", Stage::weights, true, input, weights, spec, rec);
}
Trace walk_context(const Embeddings& input, const Weights& weights, const SingleHeadSpec& spec, const Recording& rec) {
    check_explain(spec.explain, 0, 1, input.tokens_count());
    return single_head("context", Stage::output, false, input, weights, spec, rec);
}

}  // namespace attnwalk
