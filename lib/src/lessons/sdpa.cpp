// sdpa: torch.nn.functional.scaled_dot_product_attention's arguments (masks, causal,
// scale, dropout) as the one forward's scale factor and additive bias.
#include <cmath>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

ATTNWALK_LESSON(sdpa, 160) {
    static const LessonDecl lesson{"sdpa", "PyTorch's scaled_dot_product_attention: attn_mask and is_causal conventions, −∞ vs a large fill, masked rows.",
        joined({parameter_steps(), projection_steps(), {
            {"attn_mask", "the attn_mask as given (bool: True = attend; float: added)"},
            {"mask_mha", "the same mask in nn.MultiheadAttention's convention: True = blocked"},
            {"causal_top_left", "is_causal's mask for L queries and S keys: tril(ones(L, S))"},
            {"causal_bottom_right", "the causal mask aligned to the last key: tril(ones(L, S), diagonal = S − L)"},
            {"attn_bias", "what SDPA adds to the scaled scores: 0 or −∞ (bool), the floats, the causal −∞", headline},
            {"scores", "ω = Q·Kᵀ (X·Xᵀ without projections)"},
            {"scores_scaled", "ω divided by the scale"},
            {"weights", "the attention weights: the softmax of the (masked, scaled) scores, before any dropout", headline | opening},
            {"dropout_mask", "1 = kept, 0 = dropped"},
            {"weights_dropped", "the weights after dropout: kept values × 1/(1 − p) (unchanged in eval mode)", opening},
            {"output", "the output projection of the context (or the context itself)", headline},
            {"weights_safe", "the weights with fully masked rows set to 0 (PyTorch ≥ 2.5's SDPA)"},
            {"weights_large_fill", "the weights with a large negative fill instead of −∞"},
            {"output_large_fill", "the output with the large negative fill"},
        }})};
    return lesson;
}

Trace walk_sdpa(const Embeddings& input, const Weights& weights, const SdpaSpec& spec, const Recording& recording) {
    const AttentionWeights* w = weights.get();
    if (w && w->heads != 1) throw UsageError("sdpa shows one head");
    Trace trace = start_trace("sdpa", input, w);
    const Cube x = cube_from_trace(input.x);
    const std::size_t S = x.shape(1), L = spec.queries.value_or(S);
    if (L < 1 || L > S)
        throw UsageError("the queries must be 1 to " + std::to_string(S) + " (the last L of the " + std::to_string(S) + " tokens)");
    if (spec.is_causal && spec.attn_mask)
        throw UsageError("SDPA takes either attn_mask or is_causal, not both (PyTorch refuses the pair)");
    if (!is_dropout_rate(spec.dropout.p))
        throw UsageError(std::string("dropout_p must be ") + dropout_rate_range + " (float32, as the trace keeps it, below 1), got " +
                         format_number(spec.dropout.p));
    const bool draws = spec.dropout.train && spec.dropout.p > 0.0;
    if (draws && !spec.dropout.gen) throw UsageError("dropout_p needs a random generator");
    Mat mask;  // L×S as given
    if (spec.attn_mask) {
        const Tensor& t = *spec.attn_mask;
        if (t.shape.size() != 2 || t.shape[0] != L || t.shape[1] != S)
            throw UsageError("the attn_mask must be L×S = " + std::to_string(L) + "×" + std::to_string(S) +
                             " (queries × keys), it is " + (t.shape.size() == 2 ? std::to_string(t.shape[0]) + "×" + std::to_string(t.shape[1])
                                                                               : std::to_string(t.shape.size()) + "-dimensional"));
        mask = mat_from_trace(t);
    }
    trace.set_param("queries", static_cast<ull>(L));
    trace.set_param("is_causal", spec.is_causal);
    trace.set_param("dropout_p", draws ? spec.dropout.p : 0.0);
    if (spec.attn_mask) {
        trace.set_param("attn_mask", spec.mask_source);
        trace.set_param("mask_dtype", std::string(spec.mask_is_bool ? "bool" : "float"));
    }
    Recorder rec(trace);
    Forward f = project_heads(x, w, ForwardSpec{});
    const std::size_t d = f.d_h, first = S - L;
    f.qh = xt::view(f.qh, xt::all(), xt::all(), xt::range(first, S), xt::all());
    const float factor = spec.scale ? static_cast<float>(*spec.scale) : 1.0f / static_cast<float>(std::sqrt(static_cast<double>(d)));
    if (!(std::isfinite(factor) && factor > 0.0f)) throw UsageError("the scale must be a positive finite number");
    trace.set_param("scale", static_cast<double>(factor));

    // attn_bias: SDPA's reference implementation, step by step
    Mat top_left = Mat::from_shape({L, S}), bottom_right = Mat::from_shape({L, S});
    for (std::size_t i = 0; i < L; ++i)
        for (std::size_t j = 0; j < S; ++j) {
            top_left(i, j) = j <= i ? 1.0f : 0.0f;
            bottom_right(i, j) = j <= i + first ? 1.0f : 0.0f;
        }
    auto bias_with = [&](float fill) {
        Mat bias = xt::zeros<float>({L, S});
        for (std::size_t i = 0; i < L; ++i)
            for (std::size_t j = 0; j < S; ++j) {
                if (spec.is_causal && top_left(i, j) == 0.0f) bias(i, j) = fill;
                if (spec.attn_mask) bias(i, j) = spec.mask_is_bool ? (mask(i, j) != 0.0f ? 0.0f : fill) : mask(i, j) + bias(i, j);
            }
        return bias;
    };
    const Mat bias = bias_with(neg_inf);
    ForwardSpec fs;
    fs.scale_factor = factor;
    fs.bias = &bias;
    if (draws) fs.dropout = {spec.dropout.p, spec.dropout.gen};
    attend(f, w, fs);
    // ω·scale + attn_bias beyond float32 where neither ω nor the bias is: said here, where the
    // scale is known (the trace's own check can only name the weights, since the scaled
    // scores may hold the mask's −∞).
    for (std::size_t b = 0; b < f.scaled.shape(0); ++b)
        for (std::size_t h = 0; h < f.scaled.shape(1); ++h)
            for (std::size_t i = 0; i < L; ++i)
                for (std::size_t j = 0; j < S; ++j) {
                    const float omega = f.scores(b, h, i, j);
                    if (std::isfinite(omega) && std::isfinite(bias(i, j)) && !std::isfinite(f.scaled(b, h, i, j)))
                        throw RuntimeError("ω·scale + attn_bias overflows float32 (beyond ±3.4e38) at query " + std::to_string(first + i + 1) +
                                           ", key " + std::to_string(j + 1) + ": ω = " + format_number(omega) + ", scale = " +
                                           format_number(factor) + ", attn_bias = " + format_number(bias(i, j)) +
                                           "; a smaller scale (or mask) keeps it finite");
                }
    if (draws && spec.dropout.reseeded) trace.set_param("dropout_seed", static_cast<ull>(spec.dropout.gen->initial_seed()));

    if (w) record_parameters(rec, w->query, w->key, w->value, "", "");
    const Cube q = xt::view(f.q, xt::all(), xt::range(first, S), xt::all());
    Step& qs = rec.add("queries", L == S ? "Queries" : "Queries: the last " + std::to_string(L) + " tokens", w ? "Q = X·W_query" : "Q = X",
                       q, tokens_features);
    qs.first_row = first;
    rec.add("keys", "Keys", w ? "K = X·W_key" : "K = X", f.k, tokens_features);
    rec.add("values", "Values", w ? "V = X·W_value" : "V = X", f.v, tokens_features);
    bool blocked_any = false;
    std::vector<std::size_t> empty_rows;
    for (std::size_t i = 0; i < L; ++i) {
        bool all = true;
        for (std::size_t j = 0; j < S; ++j) {
            const bool b = bias(i, j) == neg_inf;
            blocked_any = blocked_any || b;
            all = all && b;
        }
        if (all) empty_rows.push_back(i);
    }
    if (spec.attn_mask) {
        Step& am = rec.add_plain("attn_mask", spec.mask_is_bool ? "attn_mask (bool): True = may attend" : "attn_mask (float): added to the scores",
                                 "attn_mask", to_trace(mask), tokens_tokens);
        am.first_row = first;
        am.may_be_non_finite = true;
        if (spec.mask_is_bool) am.legend = mask_legend;
        if (spec.mask_is_bool) {
            Mat inverse = 1.0f - mask;
            Step& mm = rec.add_plain("mask_mha", "The same mask as nn.MultiheadAttention reads it: True = blocked", "~attn_mask",
                                     to_trace(inverse), tokens_tokens);
            mm.first_row = first;
            mm.legend = "1 (True) = blocked, 0 = visible: nn.MultiheadAttention's convention";
            mm.note = "Opposite conventions: F.scaled_dot_product_attention keeps the True entries, nn.MultiheadAttention "
                      "(attn_mask, key_padding_mask) blocks them. Passing one's mask to the other inverts it.";
        }
    }
    if (spec.is_causal || L != S) {
        Step& tl = rec.add_plain("causal_top_left", "is_causal=True: the causal mask aligned top-left", "tril(ones(L, S))",
                                 to_trace(top_left), tokens_tokens);
        tl.first_row = first;
        tl.legend = mask_legend;
        tl.note = "Query 1 (" + quoted(trace.tokens[first]) + ") sees key 1 (" + quoted(trace.tokens[0]) +
                  ") only, whatever its position: right when queries and keys are the same tokens (L = S).";
        Step& br = rec.add_plain("causal_bottom_right", "The causal mask aligned bottom-right", "tril(ones(L, S), diagonal = S − L)",
                                 to_trace(bottom_right), tokens_tokens);
        br.first_row = first;
        br.legend = mask_legend;
        br.note = L == S ? "Equal to top-left when L = S."
                         : "The last query sees every key: right for decoding with a cache, where the " + std::to_string(L) +
                               " queries are the last tokens. is_causal=True gives top-left; PyTorch's causal_lower_right bias "
                               "(torch.nn.attention.bias) gives this one.";
    }
    Step& ab = rec.add_plain("attn_bias", "attn_bias: what is added to the scaled scores", "0, or −∞ where blocked (float masks: their values)",
                             to_trace(bias), tokens_tokens);
    ab.first_row = first;
    ab.may_be_non_finite = true;
    Step& sc = rec.add("scores", "Scores", "ω = Q·Kᵀ", Cube(xt::view(f.scores, xt::all(), 0)), tokens_tokens);
    sc.first_row = first;
    Step& ss = rec.add("scores_scaled", "Scaled scores plus attn_bias", "ω·scale + attn_bias, scale = " + format_number(factor),
                       Cube(xt::view(f.scaled, xt::all(), 0)), tokens_tokens);
    ss.first_row = first;
    ss.may_be_non_finite = true;
    ss.note = "SDPA multiplies by scale (default 1/√d_k = " + format_number(factor) + "); the chapter divides by √d_k.";
    Step& ws = rec.add_with_row_sums("weights", "Attention weights", "A = softmax(ω·scale + attn_bias)", Cube(xt::view(f.weights, xt::all(), 0)),
                                     tokens_tokens);
    ws.first_row = first;
    ws.may_be_non_finite = !empty_rows.empty();
    std::string rows;
    for (std::size_t i : empty_rows) rows += (rows.empty() ? "" : ", ") + quoted(trace.tokens[first + i]);
    if (!empty_rows.empty())
        ws.note = "Every key of " + rows + " is masked: softmax of a row of −∞ is 0/0 = NaN (torch.softmax, and SDPA before "
                  "PyTorch 2.5).";
    else if (spec.is_causal && L < S)
        ws.note = quoted(trace.tokens[first]) + " weighs " + quoted(trace.tokens[0]) + (L + 1 < S ? " and nothing after it" : "") +
                  ": is_causal=True aligns its mask top-left (causal_top_left), as if the " + std::to_string(L) +
                  " queries were the first tokens. For queries that are the last tokens, decoding with a cache, the mask is aligned "
                  "bottom-right (causal_bottom_right).";
    if (f.dropped) {
        rec.add("dropout_mask", "dropout_p: the keep mask, 1 = kept", "keep ~ Bernoulli(1 − p)", Cube(xt::view(f.keep, xt::all(), 0)),
                tokens_tokens)
            .first_row = first;
        Step& wd = rec.add_with_row_sums("weights_dropped", "The weights after dropout", "A ⊙ keep / (1 − p)",
                                         Cube(xt::view(f.weights_dropped, xt::all(), 0)), tokens_tokens);
        wd.first_row = first;
        wd.may_be_non_finite = !empty_rows.empty();
        wd.note = "SDPA applies dropout whenever dropout_p > 0, training or not: pass dropout_p=0.0 at inference. " + spec.dropout.note;
    }
    Step& os = rec.add("output", "Output", f.dropped ? "Z = A_dropped·V" : "Z = A·V", Cube(xt::view(f.head_outputs, xt::all(), 0)),
                       tokens_features);
    os.first_row = first;
    os.may_be_non_finite = !empty_rows.empty();
    if (!empty_rows.empty()) {
        Hyper safe = f.weights;
        for (std::size_t b = 0; b < safe.shape(0); ++b)
            for (std::size_t i : empty_rows) xt::view(safe, b, 0, i, xt::all()) = 0.0f;
        Step& sf = rec.add_with_row_sums("weights_safe", "Fully masked rows set to 0 (PyTorch ≥ 2.5's SDPA)", "_safe_softmax",
                                         Cube(xt::view(safe, xt::all(), 0)), tokens_tokens);
        sf.first_row = first;
        sf.note = "Since PyTorch 2.5 SDPA's math path zeroes a row whose every score is −∞, so its output is 0, not NaN.";
    }
    if (blocked_any) {
        const Mat large = bias_with(static_cast<float>(spec.large_fill));
        Forward g = f;
        ForwardSpec gs = fs;
        gs.bias = &large;
        gs.dropout = {};  // the comparison of fills is about the softmax: no second draw
        attend(g, w, gs);
        Step& lw = rec.add_with_row_sums("weights_large_fill", "The weights with a large negative fill (" + format_number(spec.large_fill) + ") instead of −∞",
                                         "softmax(ω·scale + bias_fill)", Cube(xt::view(g.weights, xt::all(), 0)), tokens_tokens);
        lw.first_row = first;
        lw.note = std::string(f.dropped ? "(Before dropout.) " : "") + (empty_rows.empty()
                      ? "The same weights as with −∞: exp of a huge negative number is 0 as well."
                      : "Equal on the other rows; on " + rows + " every score is the fill, so after subtracting the row maximum "
                        "each is exp(0) = 1: a uniform row, attending to keys it was told to ignore.");
        rec.add("output_large_fill", "The output with the large negative fill", f.dropped ? "Z = A_fill·V (no dropout)" : "Z = A_fill·V", Cube(xt::view(g.head_outputs, xt::all(), 0)),
                tokens_features)
            .first_row = first;
    }
    return finish(std::move(trace), recording);
}

}  // namespace attnwalk
