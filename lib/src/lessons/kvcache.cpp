// kvcache: decoding token by token with a KV cache (ops/kv_cache.hpp), checked
// against the whole sequence at once; the cache's size.
#include <algorithm>
#include <sstream>

#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/kv_cache.hpp"
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

ATTNWALK_LESSON(kvcache, 110) {
    static const LessonDecl lesson{"kvcache", "Decoding with a KV cache: token by token, the cache growing, each new row of attention; equal to mha at once.",
        joined({parameter_steps(), {
            {"out_proj.weight", "the output projection, x·W layout (a parameter)"},
            {"out_proj.bias", "the output projection's bias (a parameter)"},
            {"stepN.query", "the new token's query, every head"},
            {"stepN.key", "the new token's key, every key/value head"},
            {"stepN.value", "the new token's value, every key/value head"},
            {"stepN.keys_cache", "the keys cached so far, the new one appended"},
            {"stepN.values_cache", "the values cached so far, the new one appended"},
            {"stepN.scores", "the new query against every cached key, per head"},
            {"stepN.weights", "the new row of attention weights, per head", headline},
            {"stepN.output", "the new token's output"},
            {"output", "the output projection of the context (or the context itself)"},
            {"output_full", "the same layer run on the whole sequence at once (causal), for comparison"},
            {"max_difference", "the largest |difference| between two ways that must agree (causal: (a) and (b))", headline},
            {"cache_bytes", "the KV cache's size in bytes for the configuration", headline},
        }, explain_steps()})};
    return lesson;
}

Trace walk_kvcache(const Embeddings& input, const Weights& weights, const KvCacheSpec& spec, const Recording& recording) {
    if (!weights) throw UsageError("a KV cache keeps projected keys and values: it needs weights");
    const AttentionWeights& w = *weights;
    if (spec.window && *spec.window < 1) throw UsageError("the window must be at least 1 token");
    const std::size_t H = w.heads, G = w.key_heads(), d_h = w.head_size();
    check_explain(spec.explain, spec.explain_head, H, input.tokens_count());
    Trace trace = start_trace("kvcache", input, &w);
    trace.set_param("heads", static_cast<ull>(H));
    if (G != H) trace.set_param("kv_heads", static_cast<ull>(G));
    if (spec.window) trace.set_param("window", static_cast<ull>(*spec.window));
    Recorder rec(trace);
    const Cube x = cube_from_trace(input.x);
    const std::size_t B = x.shape(0), T = x.shape(1);
    record_parameters(rec, w.query, w.key, w.value, "", "");
    record_out_proj(rec, w);

    ForwardSpec causal;
    causal.causal = true;
    causal.window = spec.window;
    KvCache cache(spec.window.value_or(0));
    Cube outputs = Cube::from_shape({B, T, w.out_proj ? w.out_proj->out() : w.width()});
    for (std::size_t t = 0; t < T; ++t) {
        const Cube xt_ = xt::view(x, xt::all(), xt::range(t, t + 1), xt::all());
        ForwardSpec at;
        at.position0 = t;
        Forward s = project_heads(xt_, &w, at);
        cache.append(s.kh, s.vh);  // the oldest entry leaves a window
        const Hyper& kc = cache.keys();
        const Hyper& vc = cache.values();
        const std::size_t L = cache.length(), first = cache.first();
        const Cube q = xt::view(s.qh, xt::all(), xt::all(), 0, xt::all());
        const Cube k = xt::view(s.kh, xt::all(), xt::all(), 0, xt::all());
        const Cube v = xt::view(s.vh, xt::all(), xt::all(), 0, xt::all());
        s.kh = kc;
        s.vh = vc;
        attend(s, &w, causal);  // the one query is the last position: every cached key is in its past
        const std::string N = "step" + std::to_string(t + 1) + ".", tok = quoted(trace.tokens[t]);
        rec.add(N + "query", "Step " + std::to_string(t + 1) + ": " + tok + " arrives; its query in every head", "q_t = x_t·W_query", q,
                {Axis::head, Axis::feature});
        rec.add(N + "key", "Its key, appended to the cache", "k_t = x_t·W_key", k, {Axis::head, Axis::feature});
        rec.add(N + "value", "Its value, appended to the cache", "v_t = x_t·W_value", v, {Axis::head, Axis::feature});
        Step& kcs = rec.add(N + "keys_cache", "The key cache: " + std::to_string(L) + (L == 1 ? " entry" : " entries"),
                            "K_cache = concat(K_cache, k_t)", kc, head_tokens_features);
        kcs.first_row = first;
        if (spec.window && first > 0)
            kcs.note = "The window keeps the last W = " + std::to_string(*spec.window) + " keys: " + quoted(trace.tokens[first - 1]) +
                       " has left the cache.";
        rec.add(N + "values_cache", "The value cache", "V_cache = concat(V_cache, v_t)", vc, head_tokens_features).first_row = first;
        Step& ss = rec.add(N + "scores", "The new query against every cached key", "ω_t = q_t·K_cacheᵀ",
                           Cube(xt::view(s.scores, xt::all(), xt::all(), 0, xt::all())), {Axis::head, Axis::token});
        ss.first_key = first;
        ss.query = t;
        Step& ws = rec.add_with_row_sums(N + "weights", "The new row of attention weights", "α_t = softmax(ω_t / √d_k)",
                                         Cube(xt::view(s.weights, xt::all(), xt::all(), 0, xt::all())), {Axis::head, Axis::token});
        ws.first_key = first;
        ws.query = t;
        ws.note = "No mask is needed: the cache holds only tokens up to " + tok + ".";
        const Mat out = xt::view(s.output, xt::all(), 0, xt::all());
        rec.add(N + "output", "The output of " + tok, w.out_proj ? "y_t = concat_h(α_t,h·V_cache,h)·W_o + b_o" : "y_t = concat_h(α_t,h·V_cache,h)",
                out, {Axis::feature});
        xt::view(outputs, xt::all(), t, xt::all()) = out;
    }
    rec.add("output", "The outputs of every step, stacked", "Y = [y_1; …; y_T]", outputs, tokens_features);
    const Forward full = attention_forward(x, &w, causal);
    rec.add("output_full", "The same layer on the whole sequence at once", "Y = MultiHeadAttention(X), causal", full.output,
            tokens_features);
    const float diff = max_abs_diff(outputs, full.output);
    rec.add_plain("max_difference", "The cached outputs against the full pass", "max |Y_cached − Y_full|", scalar_trace(diff), {})
        .note = (diff == 0.0f ? "Equal bit for bit: the cache changes how much is computed, not the result."
                              : "They differ by " + format_number(diff) + " (float32 rounding of products summed in another order).") +
                window_covers_note(spec.window, T);

    const std::size_t tokens = spec.context_tokens ? spec.context_tokens : T;
    const std::size_t kept = spec.window ? std::min(tokens, *spec.window) : tokens;
    const double bytes = kv_cache_bytes(B, kept, G, d_h, spec.layers, spec.bytes_per_value);
    trace.set_param("layers", static_cast<ull>(spec.layers));
    trace.set_param("cache_tokens", static_cast<ull>(tokens));
    trace.set_param("bytes_per_value", static_cast<ull>(spec.bytes_per_value));
    Step& cb = rec.add_plain("cache_bytes", "The cache's size", "B·T·G·d_k·2·layers·bytes", count_tensor(bytes, "The KV cache's size in bytes"), {});
    std::ostringstream note;
    note << "B " << B << " × T " << kept << (spec.window && kept < tokens ? " (the window)" : "") << " × G " << G << " × d_k " << d_h
         << " × 2 (keys and values) × " << spec.layers << (spec.layers == 1 ? " layer" : " layers") << " × " << spec.bytes_per_value
         << " bytes = " << bytes_text(bytes) << " bytes.";
    if (G != H) note << " With one key/value head per query head it would be " << bytes_text(bytes / static_cast<double>(G) * static_cast<double>(H)) << ".";
    cb.note = note.str();
    if (spec.explain) {
        explain(rec, *spec.explain, spec.explain_head, x, &w, full, ExplainDepth::context);
        trace.steps.back().note += " (Read from the whole-sequence pass, which the cached steps equal: see max_difference.)";
    }
    return explainable(finish(std::move(trace), recording), recording, full, x, weights, head_scale(&w, full), ExplainDepth::context);
}

}  // namespace attnwalk
