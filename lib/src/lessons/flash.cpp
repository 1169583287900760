// flash: FlashAttention's online softmax over blocks of keys, checked against the whole
// score matrix at once.
#include <algorithm>
#include <cmath>

#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/blas.hpp"
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

ATTNWALK_LESSON(flash, 150) {
    static const LessonDecl lesson{"flash", "FlashAttention's online softmax: running max, sum and output block by block; equal to softmax attention.",
        joined({parameter_steps(), projection_steps(), {
            {"blockN.scores", "the scores of the queries against this block of keys"},
            {"blockN.max", "the running row maximum m after this block"},
            {"blockN.rescale", "exp(m_old − m_new): what the earlier sum and accumulator are multiplied by"},
            {"blockN.sum", "the running sum ℓ of exponentials after this block"},
            {"blockN.accumulator", "the running unnormalised output O after this block"},
            {"flash_output", "O / ℓ: the context, from the blocks", headline},
            {"context", "the context vectors (heads concatenated)", headline},
            {"max_difference", "the largest |difference| between two ways that must agree (causal: (a) and (b))", headline},
        }, explain_steps()})};
    return lesson;
}

Trace walk_flash(const Embeddings& input, const Weights& weights, const FlashSpec& spec, const Recording& recording) {
    if (spec.block < 1) throw UsageError("the block size must be at least 1 key");
    if (spec.window && *spec.window < 1) throw UsageError("the window must be at least 1 token");
    const AttentionWeights* w = weights.get();
    check_explain(spec.explain, 0, 1, input.tokens_count());
    Trace trace = start_trace("flash", input, w);
    trace.set_param("block", static_cast<ull>(spec.block));
    trace.set_param("causal", spec.causal);
    if (spec.window) trace.set_param("window", static_cast<ull>(*spec.window));
    Recorder rec(trace);
    if (spec.causal) rec.mask_from_here(CellMask{true, spec.window.value_or(0)});
    const Cube x = cube_from_trace(input.x);
    ForwardSpec fs;
    fs.causal = spec.causal;
    fs.window = spec.window;
    if (spec.scale) fs.scale = static_cast<float>(*spec.scale);
    const Forward f = attention_forward(x, w, fs);  // the reference: every score at once
    const std::size_t B = x.shape(0), T = x.shape(1), d = f.d_h, N = spec.block;
    trace.set_param("scale", static_cast<double>(f.scale));
    if (w) {
        record_parameters(rec, w->query, w->key, w->value, "", "");
        rec.add("queries", "Queries", "Q = X·W_query", f.q, tokens_features);
        rec.add("keys", "Keys", "K = X·W_key", f.k, tokens_features);
        rec.add("values", "Values", "V = X·W_value", f.v, tokens_features);
    }
    const std::string qs = w ? "Q" : "X", ks = w ? "K" : "X", vs = w ? "V" : "X";
    Mat m = Mat::from_shape({B, T}), l = Mat::from_shape({B, T});
    m.fill(neg_inf);
    l.fill(0.0f);
    Cube o = Cube::from_shape({B, T, d});
    o.fill(0.0f);
    for (std::size_t j0 = 0, b = 0; j0 < T; j0 += N, ++b) {
        const std::size_t n = std::min(N, T - j0);
        Cube s = Cube::from_shape({B, T, n});
        for (std::size_t bb = 0; bb < B; ++bb)
            sgemm(false, true, T, n, d, 1.0f, &f.qh(bb, 0, 0, 0), d, &f.kh(bb, 0, j0, 0), d, 0.0f, &s(bb, 0, 0), n);
        std::size_t empty_rows = 0, unseen = 0;
        Mat rescale = Mat::from_shape({B, T});
        for (std::size_t bb = 0; bb < B; ++bb)
            for (std::size_t i = 0; i < T; ++i) {
                float block_max = neg_inf;
                for (std::size_t c = 0; c < n; ++c) {
                    float& v = s(bb, i, c);
                    v = masked_out(i, j0 + c, spec.causal, f.window) ? neg_inf : v / f.scale;
                    block_max = std::max(block_max, v);
                }
                if (block_max == neg_inf) ++empty_rows;
                const float m_new = std::max(m(bb, i), block_max);
                const float m_safe = m_new == neg_inf ? 0.0f : m_new;  // nothing seen yet: exp(−∞ − 0) = 0, not NaN
                if (m_new == neg_inf) ++unseen;
                const float r = std::exp(m(bb, i) - m_safe);
                float sum = 0.0f;
                std::vector<float> p(n);
                for (std::size_t c = 0; c < n; ++c) sum += (p[c] = std::exp(s(bb, i, c) - m_safe));
                l(bb, i) = l(bb, i) * r + sum;
                for (std::size_t e = 0; e < d; ++e) {
                    float acc = 0.0f;
                    for (std::size_t c = 0; c < n; ++c) acc += p[c] * f.vh(bb, 0, j0 + c, e);
                    o(bb, i, e) = o(bb, i, e) * r + acc;
                }
                m(bb, i) = m_new;
                rescale(bb, i) = r;
            }
        const std::string Bn = "block" + std::to_string(b + 1) + ".",
                          cols = n == 1 ? "key " + std::to_string(j0 + 1) : "keys " + std::to_string(j0 + 1) + "…" + std::to_string(j0 + n);
        Step& ss = rec.add(Bn + "scores", "Block " + std::to_string(b + 1) + ": " + cols + " against every query",
                           "s_b = " + qs + "·" + ks + "_bᵀ / " + format_number(f.scale), s, tokens_tokens);
        ss.first_key = j0;
        ss.may_be_non_finite = spec.causal || spec.window;
        if (empty_rows)
            ss.note = std::to_string(empty_rows) + (empty_rows == 1 ? " row has" : " rows have") +
                      " every key of this block masked (−∞): the block adds exp(−∞) = 0 to them.";
        Step& ms = rec.add(Bn + "max", "The running maximum after block " + std::to_string(b + 1), "m′ = max(m, rowmax s_b)", m,
                           {Axis::token});
        ms.may_be_non_finite = true;
        if (unseen)
            ms.note = "−∞: " + std::to_string(unseen) + (unseen == 1 ? " row has" : " rows have") +
                      " seen no key yet. The exponentials use m′ = 0 there, so exp(−∞ − 0) = 0; exp(−∞ − (−∞)) would be NaN. "
                      "Masking with a large finite negative number instead of −∞ is the trap: the row max is that number, "
                      "exp(0) = 1, and every masked key counts as if it were seen.";
        rec.add(Bn + "rescale", "How much the earlier sum and output shrink", "r = exp(m − m′)", rescale, {Axis::token}).note =
            b == 0 ? "Block 1: nothing earlier (exp(−∞) = 0 times an empty sum)." :
                     "1 where this block did not raise the maximum; below 1 where it did.";
        rec.add(Bn + "sum", "The running sum of exponentials", "ℓ′ = ℓ·r + Σ_j exp(s_b − m′)", l, {Axis::token});
        rec.add(Bn + "accumulator", "The running, unnormalised output", "O′ = O·r + exp(s_b − m′)·" + vs + "_b", o, tokens_features);
    }
    Cube out = o / xt::view(l, xt::all(), xt::all(), xt::newaxis());
    rec.add("flash_output", "Divide by the sum once, at the end", "Z = O / ℓ", out, tokens_features).note =
        "Only one block of scores existed at a time: T×" + std::to_string(std::min(N, T)) + " instead of T×T.";
    rec.add("context", "The same context from the whole score matrix at once", "Z = softmax(" + qs + "·" + ks + "ᵀ / " + format_number(f.scale) + ")·" + vs, f.context,
            tokens_features);
    const float diff = max_abs_diff(out, f.context);
    rec.add_plain("max_difference", "Online against all-at-once", "max |Z_flash − Z|", scalar_trace(diff), {}).note =
        "The same sums in another order: equal up to float32 rounding." + window_covers_note(spec.window, T);
    if (spec.explain) explain(rec, *spec.explain, 0, x, w, f, ExplainDepth::context);
    return explainable(finish(std::move(trace), recording), recording, f, x, weights, head_scale(w, f), ExplainDepth::context);
}

}  // namespace attnwalk
