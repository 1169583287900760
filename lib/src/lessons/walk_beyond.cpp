// Beyond the chapter: the attention of today's LLMs, each a walk on the one forward
// (attention.hpp): a KV cache decodes with project_heads + attend on a growing cache,
// RoPE is a spec value of the forward, FlashAttention's online softmax is checked against
// it, SDPA's arguments become its scale factor and additive bias. `params` counts.
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "attnwalk/ops/attention.hpp"
#include "attnwalk/ops/kv_cache.hpp"
#include "attnwalk/ops/blas.hpp"
#include "attnwalk/errors.hpp"
#include "attnwalk/lessons/explain.hpp"
#include "attnwalk/lessons/recorder.hpp"
#include "walk_parts.hpp"

namespace attnwalk {

using namespace walk_parts;

namespace {

using ull = unsigned long long;
constexpr float neg_inf = -std::numeric_limits<float>::infinity();

// 2360064 -> "2,360,064"
std::string grouped(ull n) {
    std::string digits = std::to_string(n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

// A byte count in words: grouped digits, or scientific notation beyond what 64 bits hold.
std::string bytes_text(double bytes) { return bytes < 1e18 ? grouped(static_cast<ull>(bytes)) : format_number(bytes); }

Tensor scalar(float v) { return Tensor{{}, {v}}; }

float max_abs_diff(const Cube& a, const Cube& b) {
    float worst = 0.0f;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const float d = std::fabs(a.data()[i] - b.data()[i]);
        if (d > worst || std::isnan(d)) worst = d;
    }
    return worst;
}

void record_out_proj(Recorder& rec, const AttentionWeights& w) {
    if (!w.out_proj) return;
    rec.add_plain("out_proj.weight", "out_proj weight (d_out×d_out, x·W layout)", "W_o", to_trace(w.out_proj->matrix()),
                  {Axis::feature, Axis::feature})
        .kind = StepKind::parameter;
    rec.add_plain("out_proj.bias", "out_proj bias", "b_o", to_trace(w.out_proj->b), {Axis::feature}).kind = StepKind::parameter;
}

std::string quoted(const std::string& token) { return "\"" + token + "\""; }

void check_explain(const std::optional<Cell>& cell, std::size_t head, std::size_t heads, std::size_t T) {
    if (cell && (cell->i >= T || cell->j >= T))
        throw UsageError("cell " + std::to_string(cell->i) + "," + std::to_string(cell->j) + " is out of range: there are " +
                         std::to_string(T) + " tokens");
    if (head >= heads)
        throw UsageError("head " + std::to_string(head) + " is out of range: there are " + std::to_string(heads) + " heads");
}

// Writes out one cell of `f` (batch element 0), its cell and head in the params.
void explain(Recorder& rec, const Cell& cell, std::size_t head, const Cube& x, const AttentionWeights* w, const Forward& f,
             ExplainDepth depth) {
    Trace& trace = rec.trace();
    trace.set_param("explain", "[" + std::to_string(cell.i) + "," + std::to_string(cell.j) + "]");
    if (f.heads > 1) trace.set_param("explain_head", static_cast<ull>(head));
    Scale sc;
    sc.value = f.scale;
    sc.symbol = w ? "√d_h" : format_number(f.scale);
    sc.words = w ? "√d_h = √" + std::to_string(f.d_h) : format_number(f.scale);
    explain_cell(rec, cell, x, w, f, sc, depth, head);
}

}  // namespace

// ---- kvcache ------------------------------------------------------------------------------

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
        const std::string N = "step" + std::to_string(t) + ".", tok = quoted(trace.tokens[t]);
        rec.add(N + "query", "Step " + std::to_string(t) + ": " + tok + " arrives; its query in every head", "q_t = x_t·W_query", q,
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
        rec.add(N + "scores", "The new query against every cached key", "ω_t = q_t·K_cacheᵀ",
                Cube(xt::view(s.scores, xt::all(), xt::all(), 0, xt::all())), {Axis::head, Axis::token})
            .first_key = first;
        Step& ws = rec.add_with_row_sums(N + "weights", "The new row of attention weights", "α_t = softmax(ω_t / √d_h)",
                                         Cube(xt::view(s.weights, xt::all(), xt::all(), 0, xt::all())), {Axis::head, Axis::token});
        ws.first_key = first;
        ws.note = "No mask is needed: the cache holds only tokens up to " + tok + ".";
        const Mat out = xt::view(s.output, xt::all(), 0, xt::all());
        rec.add(N + "output", "The output of " + tok, w.out_proj ? "y_t = concat_h(α_t,h·V_cache,h)·W_o + b_o" : "y_t = concat_h(α_t,h·V_cache,h)",
                out, {Axis::feature});
        xt::view(outputs, xt::all(), t, xt::all()) = out;
    }
    rec.add("output", "The outputs of every step, stacked", "Y = [y_0; …; y_T−1]", outputs, tokens_features);
    const Forward full = attention_forward(x, &w, causal);
    rec.add("output_full", "The same layer on the whole sequence at once", "Y = MultiHeadAttention(X), causal", full.output,
            tokens_features);
    const float diff = max_abs_diff(outputs, full.output);
    rec.add_plain("max_difference", "The cached outputs against the full pass", "max |Y_cached − Y_full|", scalar(diff), {})
        .note = diff == 0.0f ? "Equal bit for bit: the cache changes how much is computed, not the result."
                             : "They differ by " + format_number(diff) + " (float32 rounding of products summed in another order).";

    const std::size_t tokens = spec.context_tokens ? spec.context_tokens : T;
    const std::size_t kept = spec.window ? std::min(tokens, *spec.window) : tokens;
    const double bytes = kv_cache_bytes(B, kept, G, d_h, spec.layers, spec.bytes_per_value);
    trace.set_param("layers", static_cast<ull>(spec.layers));
    trace.set_param("cache_tokens", static_cast<ull>(tokens));
    trace.set_param("bytes_per_value", static_cast<ull>(spec.bytes_per_value));
    Step& cb = rec.add_plain("cache_bytes", "The cache's size", "B·T·G·d_h·2·layers·bytes", scalar(static_cast<float>(bytes)), {});
    std::ostringstream note;
    note << "B " << B << " × T " << kept << (spec.window && kept < tokens ? " (the window)" : "") << " × G " << G << " × d_h " << d_h
         << " × 2 (keys and values) × " << spec.layers << (spec.layers == 1 ? " layer" : " layers") << " × " << spec.bytes_per_value
         << " bytes = " << bytes_text(bytes) << " bytes.";
    if (G != H) note << " With one key/value head per query head it would be " << bytes_text(bytes / static_cast<double>(G) * static_cast<double>(H)) << ".";
    cb.note = note.str();
    if (spec.explain) {
        explain(rec, *spec.explain, spec.explain_head, x, &w, full, ExplainDepth::context);
        trace.steps.back().note += " (Read from the whole-sequence pass, which the cached steps equal: see max_difference.)";
    }
    return finish(std::move(trace), recording);
}

// ---- rope ---------------------------------------------------------------------------------

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
    fs.rope_base = spec.base;
    fs.until = Stage::weights;
    const Forward f = attention_forward(x, &w, fs);
    const std::size_t d = f.d_h;
    rec.add("queries_split", "Queries of every head, before RoPE", "Q_h", f.qh_plain, head_tokens_features);
    rec.add("keys_split", "Keys of every head, before RoPE", "K_h", f.kh_plain, head_tokens_features);
    rec.add_plain("rope_frequencies", "The frequencies: one per pair of features", "θ_i = base^(−2i/d_h), i = 0 … d_h/2 − 1",
                  to_trace(f.rope->inv_freq), {Axis::feature})
        .note = "Feature i pairs with feature i + d_h/2 (the half-split form of Llama's reference code); the first pair turns fastest, "
                "the last slowest.";
    rec.add_plain("rope_angles", "The angles: position × frequency", "φ_p,i = p·θ_(i mod d_h/2)", to_trace(f.rope->angles), tokens_features);
    rec.add_plain("rope_cos", "cos φ", "cos φ_p,i", to_trace(f.rope->cos), tokens_features);
    rec.add_plain("rope_sin", "sin φ", "sin φ_p,i", to_trace(f.rope->sin), tokens_features);
    rec.add("queries_rotated", "Queries rotated by their position", "q′ = q·cos φ + rotate_half(q)·sin φ, rotate_half(q) = (−q₂, q₁)", f.qh,
            head_tokens_features)
        .note = "Each pair (q_i, q_i+" + std::to_string(d / 2) + ") turns by the angle φ_p,i: lengths stay, directions turn.";
    rec.add("keys_rotated", "Keys rotated by their position", "k′ = k·cos φ + rotate_half(k)·sin φ", f.kh, head_tokens_features);
    rec.add("scores", "Scores of the rotated queries and keys", "ω_ij = q′_i·k′_j", f.scores, head_tokens_tokens).note =
        "A rotation by φ_i against one by φ_j leaves only the angle φ_i − φ_j in the dot product: the score depends on where the "
        "tokens are relative to each other, not on where they are.";
    rec.mask_from_here(CellMask{});
    rec.add_with_row_sums("weights", "Causal attention weights", "A = softmax(masked ω / √d_h)", f.weights, head_tokens_tokens);
    rec.mask_from_here(std::nullopt);
    ForwardSpec shifted = fs;
    shifted.position0 = spec.shift;
    shifted.until = Stage::scores;
    const Forward g = attention_forward(x, &w, shifted);
    rec.add("scores_position_shift", "The scores again, every position shifted by " + std::to_string(spec.shift),
            "positions p + " + std::to_string(spec.shift), g.scores, head_tokens_tokens);
    float diff = 0.0f;
    for (std::size_t i = 0; i < g.scores.size(); ++i) diff = std::max(diff, std::fabs(g.scores.data()[i] - f.scores.data()[i]));
    rec.add_plain("max_difference", "Shifted against unshifted scores", "max |ω(p + k) − ω(p)|", scalar(diff), {}).note =
        "Zero in exact arithmetic; what remains is float32 rounding of cos, sin and the products.";
    if (spec.explain) explain(rec, *spec.explain, spec.explain_head, x, &w, f, ExplainDepth::weight);
    return finish(std::move(trace), recording);
}

// ---- flash --------------------------------------------------------------------------------

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
        const std::string Bn = "block" + std::to_string(b) + ".", cols = std::to_string(j0) + "…" + std::to_string(j0 + n - 1);
        Step& ss = rec.add(Bn + "scores", "Block " + std::to_string(b) + ": keys " + cols + " against every query",
                           "S_b = " + qs + "·" + ks + "_bᵀ / " + format_number(f.scale), s, tokens_tokens);
        ss.first_key = j0;
        ss.may_be_non_finite = spec.causal || spec.window;
        if (empty_rows)
            ss.note = std::to_string(empty_rows) + (empty_rows == 1 ? " row has" : " rows have") +
                      " every key of this block masked (−∞): the block adds exp(−∞) = 0 to them.";
        Step& ms = rec.add(Bn + "max", "The running maximum after block " + std::to_string(b), "m′ = max(m, rowmax S_b)", m,
                           {Axis::token});
        ms.may_be_non_finite = true;
        if (unseen)
            ms.note = "−∞: " + std::to_string(unseen) + (unseen == 1 ? " row has" : " rows have") +
                      " seen no key yet. The exponentials use m′ = 0 there, so exp(−∞ − 0) = 0; exp(−∞ − (−∞)) would be NaN. "
                      "Masking with a large finite negative number instead of −∞ is the trap: the row max is that number, "
                      "exp(0) = 1, and every masked key counts as if it were seen.";
        rec.add(Bn + "rescale", "How much the earlier sum and output shrink", "r = exp(m − m′)", rescale, {Axis::token}).note =
            b == 0 ? "Block 0: nothing earlier (exp(−∞) = 0 times an empty sum)." :
                     "1 where this block did not raise the maximum; below 1 where it did.";
        rec.add(Bn + "sum", "The running sum of exponentials", "ℓ′ = ℓ·r + Σ_j exp(S_b − m′)", l, {Axis::token});
        rec.add(Bn + "accumulator", "The running, unnormalised output", "O′ = O·r + exp(S_b − m′)·" + vs + "_b", o, tokens_features);
    }
    Cube out = o / xt::view(l, xt::all(), xt::all(), xt::newaxis());
    rec.add("flash_output", "Divide by the sum once, at the end", "Z = O / ℓ", out, tokens_features).note =
        "Only one block of scores existed at a time: T×" + std::to_string(std::min(N, T)) + " instead of T×T.";
    rec.add("context", "The same context from the whole score matrix at once", "Z = softmax(" + qs + "·" + ks + "ᵀ / " + format_number(f.scale) + ")·" + vs, f.context,
            tokens_features);
    const float diff = max_abs_diff(out, f.context);
    rec.add_plain("max_difference", "Online against all-at-once", "max |Z_flash − Z|", scalar(diff), {}).note =
        "The same sums in another order: equal up to float32 rounding.";
    if (spec.explain) explain(rec, *spec.explain, 0, x, w, f, ExplainDepth::context);
    return finish(std::move(trace), recording);
}

// ---- sdpa ---------------------------------------------------------------------------------

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
    if (!(spec.dropout.p >= 0.0 && spec.dropout.p < 1.0)) throw UsageError("dropout_p must be in [0, 1), got " + format_number(spec.dropout.p));
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
        if (spec.mask_is_bool) {
            Mat inverse = 1.0f - mask;
            Step& mm = rec.add_plain("mask_mha", "The same mask as nn.MultiheadAttention reads it: True = blocked", "~attn_mask",
                                     to_trace(inverse), tokens_tokens);
            mm.first_row = first;
            mm.note = "Opposite conventions: F.scaled_dot_product_attention keeps the True entries, nn.MultiheadAttention "
                      "(attn_mask, key_padding_mask) blocks them. Passing one's mask to the other inverts it.";
        }
    }
    if (spec.is_causal || L != S) {
        Step& tl = rec.add_plain("causal_top_left", "is_causal=True: the causal mask aligned top-left", "tril(ones(L, S))",
                                 to_trace(top_left), tokens_tokens);
        tl.first_row = first;
        tl.note = "Query 0 sees key 0 only, whatever its position: right when queries and keys are the same tokens (L = S).";
        Step& br = rec.add_plain("causal_bottom_right", "The causal mask aligned bottom-right", "tril(ones(L, S), diagonal = S − L)",
                                 to_trace(bottom_right), tokens_tokens);
        br.first_row = first;
        br.note = L == S ? "Equal to top-left when L = S."
                         : "The last query sees every key: right for decoding with a cache, where the " + std::to_string(L) +
                               " queries are the last tokens. is_causal=True gives top-left; PyTorch's causal_lower_right bias "
                               "(torch.nn.attention.bias) gives this one.";
    }
    Step& ab = rec.add_plain("attn_bias", "attn_bias: what is added to the scaled scores", "0, or −∞ where blocked (float masks: their values)",
                             to_trace(bias), tokens_tokens);
    ab.first_row = first;
    ab.may_be_non_finite = true;
    const Mat scores0 = xt::view(f.scores, 0, 0);
    Step& sc = rec.add("scores", "Scores", "ω = Q·Kᵀ", Cube(xt::view(f.scores, xt::all(), 0)), tokens_tokens);
    sc.first_row = first;
    (void)scores0;
    Step& ss = rec.add("scores_scaled", "Scaled scores plus attn_bias", "ω·scale + attn_bias, scale = " + format_number(factor),
                       Cube(xt::view(f.scaled, xt::all(), 0)), tokens_tokens);
    ss.first_row = first;
    ss.may_be_non_finite = true;
    ss.note = "SDPA multiplies by scale (default 1/√d = " + format_number(factor) + "); the chapter divides by √d_k.";
    Step& ws = rec.add_with_row_sums("weights", "Attention weights", "A = softmax(ω·scale + attn_bias)", Cube(xt::view(f.weights, xt::all(), 0)),
                                     tokens_tokens);
    ws.first_row = first;
    ws.may_be_non_finite = !empty_rows.empty();
    std::string rows;
    for (std::size_t i : empty_rows) rows += (rows.empty() ? "" : ", ") + quoted(trace.tokens[first + i]);
    if (!empty_rows.empty())
        ws.note = "Every key of " + rows + " is masked: softmax of a row of −∞ is 0/0 = NaN (torch.softmax, and SDPA before "
                  "PyTorch 2.5).";
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

// ---- params -------------------------------------------------------------------------------

Trace walk_params(const ParamsSpec& spec) {
    const std::size_t H = spec.heads, G = spec.kv_heads ? spec.kv_heads : spec.heads;
    check_head_shape(spec.d_out, H, G);
    // every count below is at most 4·(d_in + 1)·d_out (+ d_out²) per layer: exact in 64 bits under this bound
    const double largest = 4.0 * (static_cast<double>(spec.d_in) + 1.0) * static_cast<double>(spec.d_out) +
                           static_cast<double>(spec.d_out) * static_cast<double>(spec.d_out) + static_cast<double>(spec.d_out);
    if (largest * static_cast<double>(spec.layers) > 9.0e15)
        throw UsageError("these sizes have more than 9·10^15 parameters: too many to count exactly here");
    const ull d_in = spec.d_in, d_out = spec.d_out, d_h = d_out / H, d_kv = G * d_h, bias = spec.qkv_bias ? 1 : 0;
    Trace trace;
    trace.command = "params";
    trace.set_param("d_in", d_in);
    trace.set_param("d_out", d_out);
    trace.set_param("heads", static_cast<ull>(H));
    trace.set_param("kv_heads", static_cast<ull>(G));
    trace.set_param("qkv_bias", spec.qkv_bias);
    trace.set_param("out_proj", spec.out_proj);
    trace.set_param("layers", static_cast<ull>(spec.layers));
    trace.set_param("context_length", static_cast<ull>(spec.context_length));
    Recorder rec(trace);
    const ull query = d_in * d_out + bias * d_out, key = d_in * d_kv + bias * d_kv, value = key;
    const ull out = spec.out_proj ? d_out * d_out + d_out : 0;
    const ull total = query + key + value + out;
    const auto count = [&](const std::string& id, const std::string& title, const std::string& formula, ull n) {
        rec.add_plain(id, title, formula, scalar(static_cast<float>(n)), {}).note = grouped(n) + " parameters.";
    };
    const std::string b = spec.qkv_bias ? " + d_out" : "";
    count("count_query", "W_query", "d_in·d_out" + b, query);
    count("count_key", "W_key", G == H ? "d_in·d_out" + b : "d_in·G·d_h" + std::string(spec.qkv_bias ? " + G·d_h" : ""), key);
    count("count_value", "W_value", G == H ? "d_in·d_out" + b : "d_in·G·d_h" + std::string(spec.qkv_bias ? " + G·d_h" : ""), value);
    if (spec.out_proj) count("count_out_proj", "out_proj", "d_out·d_out + d_out", out);
    count("count_total", "The layer", "W_query + W_key + W_value" + std::string(spec.out_proj ? " + out_proj" : ""), total);
    trace.set_param("total", total);
    Step& t = trace.steps.back();
    if (spec.layers > 1) t.note += " × " + std::to_string(spec.layers) + " layers = " + grouped(total * spec.layers) + ".";
    if (G != H) {
        const ull mha = 2 * (d_in * d_out + bias * d_out) + query + out;
        t.note += " With " + std::to_string(H) + " key/value heads (plain multi-head attention) it would be " + grouped(mha) + ": " +
                  grouped(mha - total) + " fewer.";
    }
    const double bytes = static_cast<double>(spec.context_length) * static_cast<double>(d_kv) * 2.0 * static_cast<double>(spec.layers) *
                         static_cast<double>(spec.bytes_per_value);
    rec.add_plain("cache_bytes", "Its KV cache for a full context", "T·G·d_h·2·layers·bytes", scalar(static_cast<float>(bytes)), {}).note =
        std::to_string(spec.context_length) + " tokens × " + std::to_string(d_kv) + " × 2 × " + std::to_string(spec.layers) + " × " +
        std::to_string(spec.bytes_per_value) + " bytes = " + bytes_text(bytes) + " bytes per sequence.";
    return check_finite(std::move(trace));
}

}  // namespace attnwalk
