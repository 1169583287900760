// rope: rotary position embeddings on the queries and keys, and the check that shifting
// every position leaves the scores unchanged.
#include <algorithm>
#include <cmath>

#include "attnwalk/errors.hpp"
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

ATTNWALK_LESSON(rope, 140) {
    static const LessonDecl lesson{"rope", "Rotary position embeddings: Q and K rotated by position; the scores depend only on relative positions.",
        joined({parameter_steps(), {
            {"queries_split", "the queries viewed as heads"},
            {"keys_split", "the keys viewed as heads"},
            {"rope_frequencies", "RoPE's inverse frequencies base^(−2(c − 1)/d_k), pair c counted from 1"},
            {"rope_angles", "the rotation angles, position × frequency"},
            {"rope_cos", "cos of the angles"},
            {"rope_sin", "sin of the angles"},
            {"queries_rotated", "the queries after RoPE", headline},
            {"keys_rotated", "the keys after RoPE"},
            {"scores", "ω = Q·Kᵀ (X·Xᵀ without projections)", headline},
            {"weights", "the attention weights: the softmax of the (masked, scaled) scores, before any dropout", opening},
            {"scores_position_shift", "the scores with every position shifted by k"},
            {"max_difference", "the largest |difference| between two ways that must agree (causal: (a) and (b))", headline},
        }, explain_steps()})};
    return lesson;
}

Trace walk_rope(const Embeddings& input, const Weights& weights, const RopeSpec& spec, const Recording& recording) {
    if (!weights) throw UsageError("RoPE rotates queries and keys: it needs weights");
    const AttentionWeights& w = *weights;
    check_explain(spec.explain, spec.explain_head, w.heads, input.tokens_count());
    Trace trace = start_trace("rope", input, &w);
    trace.set_param("heads", static_cast<ull>(w.heads));
    trace.set_param("causal", true);
    trace.set_param("rope_base", spec.base);
    trace.set_param("shift", static_cast<ull>(spec.shift));
    Recorder rec(trace);
    const Cube x = cube_from_trace(input.x);
    record_parameters(rec, w.query, w.key, w.value, "", "");
    ForwardSpec fs;
    fs.causal = true;
    fs.rope = RopeParams{spec.base, {}};
    fs.until = Stage::weights;
    const Forward f = attention_forward(x, &w, fs);
    const std::size_t d = f.d_h;
    rec.add("queries_split", "Queries of every head, before RoPE", "Q_h", f.qh_plain, head_tokens_features);
    rec.add("keys_split", "Keys of every head, before RoPE", "K_h", f.kh_plain, head_tokens_features);
    rec.add_plain("rope_frequencies", "The frequencies: one per pair of features", "θ_c = base^(−2(c − 1)/d_k), c = 1 … d_k/2",
                  to_trace(f.rope->inv_freq), {Axis::feature})
        .note = "Feature i pairs with feature i + d_k/2 (the half-split form of Llama's reference code); the first pair turns fastest, "
                "the last slowest.";
    rec.add_plain("rope_angles", "The angles: position × frequency", "φ_p,c = p·θ_c for features c and c + d_k/2", to_trace(f.rope->angles), tokens_features);
    rec.add_plain("rope_cos", "cos φ", "cos φ_p,c", to_trace(f.rope->cos), tokens_features);
    rec.add_plain("rope_sin", "sin φ", "sin φ_p,c", to_trace(f.rope->sin), tokens_features);
    rec.add("queries_rotated", "Queries rotated by their position", "q′ = q·cos φ + rotate_half(q)·sin φ, rotate_half(q) = (−q₂, q₁)", f.qh,
            head_tokens_features)
        .note = "Each pair (q_c, q_c+" + std::to_string(d / 2) + ") turns by the angle φ_p,c: lengths stay, directions turn.";
    rec.add("keys_rotated", "Keys rotated by their position", "k′ = k·cos φ + rotate_half(k)·sin φ", f.kh, head_tokens_features);
    rec.add("scores", "Scores of the rotated queries and keys", "ω_ij = q′_i·k′_j", f.scores, head_tokens_tokens).note =
        "A rotation by φ_i against one by φ_j leaves only the angle φ_i − φ_j in the dot product: the score depends on where the "
        "tokens are relative to each other, not on where they are.";
    rec.mask_from_here(CellMask{});
    rec.add_with_row_sums("weights", "Causal attention weights", "A = softmax(masked ω / √d_k)", f.weights, head_tokens_tokens);
    rec.mask_from_here(std::nullopt);
    ForwardSpec shifted = fs;
    shifted.position0 = spec.shift;
    shifted.until = Stage::scores;
    const Forward g = attention_forward(x, &w, shifted);
    rec.add("scores_position_shift", "The scores again, every position shifted by " + std::to_string(spec.shift),
            "positions p + " + std::to_string(spec.shift), g.scores, head_tokens_tokens);
    float diff = 0.0f;
    for (std::size_t i = 0; i < g.scores.size(); ++i) diff = std::max(diff, std::fabs(g.scores.data()[i] - f.scores.data()[i]));
    rec.add_plain("max_difference", "Shifted against unshifted scores", "max |ω(p + k) − ω(p)|", scalar_trace(diff), {}).note =
        "Zero in exact arithmetic; what remains is float32 rounding of cos, sin and the products.";
    if (spec.explain) explain(rec, *spec.explain, spec.explain_head, x, &w, f, ExplainDepth::weight);
    return explainable(finish(std::move(trace), recording), recording, f, x, weights, head_scale(&w, f), ExplainDepth::weight);
}

}  // namespace attnwalk
