// mha: multi-head attention, stacked heads (the wrapper) or fused (split, view,
// transpose), grouped key/value heads, a sliding window, one query, one cell; the
// blocked path for summaries at model size.
#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/blocked_attention.hpp"
#include "attnwalk/ops/mask.hpp"
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

ATTNWALK_LESSON(mha, 60) {
    static const LessonDecl lesson{"mha", "Multi-head attention: the fused split/view/transpose form with out_proj, or stacked heads (wrapper).",
        joined({parameter_steps(), {
            {"out_proj.weight", "the output projection, x·W layout (a parameter)"},
            {"out_proj.bias", "the output projection's bias (a parameter)"},
            {"headN.W_query", "the wrapper's per-head query projection (a parameter)"},
            {"headN.W_key", "the wrapper's per-head key projection (a parameter)"},
            {"headN.W_value", "the wrapper's per-head value projection (a parameter)"},
            {"headN.b_query", "the wrapper's per-head query bias (a parameter)"},
            {"headN.b_key", "the wrapper's per-head key bias (a parameter)"},
            {"headN.b_value", "the wrapper's per-head value bias (a parameter)"},
            {"W_qkv", "the combined projection W_query | W_key | W_value, d_in×3·d_out (a parameter)"},
            {"W_gate", "the output gate's projection, d_in×d_out, x·W layout (a parameter)"},
            {"b_gate", "the output gate's bias (a parameter)"},
            {"b_qkv", "the combined bias b_query | b_key | b_value (a parameter)"},
            {"sinks", "the learned sink logit of every head, given (gpt-oss; a parameter)"},
            {"qkv", "queries, keys and values from the combined projection, X·W_qkv (+ b)"},
        }, projection_steps(), {
            {"queries_split", "the queries viewed as heads"},
            {"keys_split", "the keys viewed as heads"},
            {"values_split", "the values viewed as heads"},
            {"scores", "ω = Q·Kᵀ (X·Xᵀ without projections)"},
            {"mask", "the mask: 1 where a query may attend (causal: on and below the diagonal; a window: the band)"},
            {"weights", "the attention weights: the softmax of the (masked, scaled) scores, before any dropout", headline | opening},
            {"dropout_mask", "1 = kept, 0 = dropped"},
            {"dropout_scale", "1/(1 − p) in float32"},
            {"sink_share", "with learned sinks: the share of each row the sink took, 1 − the row's sum of weights"},
            {"weights_dropped", "the weights after dropout: kept values × 1/(1 − p) (unchanged in eval mode)", opening},
            {"head_outputs", "each head's context vectors A_h·V_h"},
            {"context", "the context vectors (heads concatenated)"},
            {"gate", "the output gate, x·W_gate"},
            {"gated", "the context times σ(gate): what out_proj reads (gated attention)"},
            {"output", "the output projection of the context (or the context itself)", headline},
            {"role_induction", "head roles on the input run twice: per head the mean weight on the token after the current one's first occurrence, written out", headline},
            {"role_previous", "head roles: per head the mean weight on the previous token, written out"},
            {"role_duplicate", "head roles: per head the mean weight on the current token's first occurrence, written out"},
        }, explain_steps()})};
    return lesson;
}

namespace {

// The parameters, in PyTorch's construction order.
void record_mha_parameters(Recorder& rec, const AttentionWeights& w) {
    if (w.layout == HeadLayout::stacked) {
        for (std::size_t h = 0; h < w.heads; ++h)
            record_parameters(rec, w.head_columns(w.query, h), w.head_columns(w.key, h), w.head_columns(w.value, h),
                              "head" + std::to_string(h + 1) + ".", " of head " + std::to_string(h + 1));
        return;
    }
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
    if (w.gate) {
        rec.add_plain("W_gate", "W_gate: the output gate (d_in×d_out, x·W layout)", "W_gate", to_trace(w.gate->matrix()),
                      {Axis::feature, Axis::feature})
            .kind = StepKind::parameter;
        if (w.gate->b.size() != 0)
            rec.add_plain("b_gate", "b_gate", "b_gate", to_trace(w.gate->b), {Axis::feature}).kind = StepKind::parameter;
    }
    record_out_proj(rec, w);
    if (w.sinks)
        rec.add_plain("sinks", "The learned sinks: one logit per head", "sink_h", to_trace(*w.sinks), {Axis::head}).kind = StepKind::parameter;
}

// Head roles on the chapter's toy: the input's rows run twice through the same weights
// (causal), and per head the mean of three diagonals of its weights, each mean written out.
void record_toy_roles(Recorder& rec, const Cube& x, const AttentionWeights& w, const MhaSpec& spec) {
    const std::size_t n = x.shape(1), T = 2 * n, C = x.shape(2), H = w.heads;
    Cube twice = Cube::from_shape({1, T, C});
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t c = 0; c < C; ++c) twice(0, t, c) = x(0, t % n, c);
    ForwardSpec fs;  // the run's own mask: causal or not, its window
    fs.causal = spec.causal;
    fs.window = spec.window;
    fs.until = Stage::weights;
    const Forward f = attention_forward(twice, &w, fs);
    Trace& trace = rec.trace();
    trace.set_param("roles_length", static_cast<unsigned long long>(n));
    const auto role = [&](const std::string& id, const std::string& title, std::size_t back, const std::string& note) {
        Mat scores = Mat::from_shape({1, H});
        std::vector<Expansion> sums;
        const std::size_t m = T - back;  // rows back … T − 1 have a key `back` positions earlier
        for (std::size_t h = 0; h < H; ++h) {
            Expansion e;
            e.label = "head " + std::to_string(h + 1);
            float s = 0.0f;
            for (std::size_t i = back; i < T; ++i) {
                const float a = f.weights(0, h, i, i - back);
                s += a;
                e.terms.push_back({a, {1.0f / static_cast<float>(m)}, "1/" + std::to_string(m)});
            }
            scores(0, h) = s / static_cast<float>(m);
            e.result = {scores(0, h)};
            sums.push_back(std::move(e));
        }
        const std::string B = std::to_string(back), first = std::to_string(back + 1);
        Step& st = rec.add(id, title, "(1/" + std::to_string(m) + ")·Σ_(i = " + first + "…" + std::to_string(T) + ") A[i, i − " + B + "]", scores, {Axis::head});
        st.expansion = std::move(sums);
        st.note = note + " Rows spread evenly over the keys they see would give " +
                  four_decimals(even_stripe(T, spec.causal, spec.window.value_or(0), back)) + ".";
    };
    const std::string which = x.shape(0) > 1 ? " (its first batch element)" : "";
    const std::string window = spec.window && *spec.window <= n - 1
                                   ? " With a window of " + std::to_string(*spec.window) + " that key is out of sight: the score is 0 by construction."
                                   : "";
    role("role_induction", "Induction score of each head, on the input" + which + " run twice (" + std::to_string(T) + " tokens)", n - 1,
         "Rows " + std::to_string(n) + "…" + std::to_string(T) + ", from the first run's last token on, each weighing the key n − 1 = " + std::to_string(n - 1) +
             " back: in the second run, the token after the current token's first occurrence. A head that attends there (and copies what it "
             "finds) is an induction head; near 1 in trained models, here only the mechanics (TransformerLens's score: the mean of that diagonal)." +
             window);
    role("role_previous", "Previous-token score of each head", 1, "The mean weight on the token just before.");
    role("role_duplicate", "Duplicate-token score of each head", n, "The mean weight on the current token's own first occurrence, n = " +
                                                                    std::to_string(n) + " back.");
}

// The titles and formulas both paths share.
struct MhaWords {
    std::string weights_title, weights_formula, context_formula, output_title, output_formula, q_split_title;
};
MhaWords mha_words(const AttentionWeights& w, const MhaSpec& spec) {
    const std::string dhs = std::to_string(w.head_size());
    const bool masking = spec.causal || spec.window;
    MhaWords m;
    m.weights_title = std::string(spec.window ? "Sliding-window attention" : spec.causal ? "Causal attention" : "Attention") +
                      " weights of every head";
    m.weights_formula = w.sinks ? std::string("A_h = softmax([") + (masking ? "masked " : "") + "ω_h / √" + dhs + ", sink_h])[:T]"
                                : std::string("A_h = softmax(") + (masking ? "masked " : "") + "ω_h / √" + dhs + ")";
    m.context_formula = w.layout == HeadLayout::stacked ? "Z = concat(Z_1, …, Z_H)" : "Z = Z.transpose(1, 2).view(B, T, d_out)";
    m.output_title = w.out_proj ? "Output projection of the concatenated heads" : "Output: the concatenation (the wrapper has no out_proj)";
    const std::string z = w.gate ? "(Z ⊙ σ(G))" : "Z";
    m.output_formula = w.out_proj ? "Y = " + z + "·W_o + b_o" : "Y = " + z;
    m.q_split_title = "Queries split into " + heads_words(w.heads, w.head_size());
    return m;
}

// A summary at model size: the blocked, fused path; no T×T tensor is ever held.
void record_blocked(Recorder& rec, const Cube& x, const AttentionWeights& w, const MhaSpec& spec, const MhaWords& words) {
    const std::size_t B = x.shape(0), T = x.shape(1), H = w.heads, d_out = w.width(), d_h = w.head_size();
    const MhaWords& m = words;
    rec.restart_clock();
    const fast::BlockedResult r = fast::blocked_attention(x, w, spec.causal);
    // each step gets its phase's time and work, measured inside the forward
    const auto spent = [](Step& step, double seconds, const Work& work) {
        step.seconds = seconds;
        step.flop = work.flop;
        step.bytes = work.bytes;
    };
    spent(rec.add_summary("queries", "Queries for all heads at once", "Q = X·W_query", {T, d_out}, B, tokens_features, r.queries),
          r.seconds.query, r.work.query);
    spent(rec.add_summary("keys", "Keys for all heads at once", "K = X·W_key", {T, d_out}, B, tokens_features, r.keys), r.seconds.key,
          r.work.key);
    spent(rec.add_summary("values", "Values for all heads at once", "V = X·W_value", {T, d_out}, B, tokens_features, r.values),
          r.seconds.value, r.work.value);
    rec.add_summary("queries_split", m.q_split_title, "Q.view(B, T, H, d_k).transpose(1, 2)", {H, T, d_h}, B,
                    head_tokens_features, r.queries)
        .seconds = 0.0;
    rec.add_summary("keys_split", "Keys split into heads", "K.view(B, T, H, d_k).transpose(1, 2)", {H, T, d_h}, B,
                    head_tokens_features, r.keys)
        .seconds = 0.0;
    rec.add_summary("values_split", "Values split into heads", "V.view(B, T, H, d_k).transpose(1, 2)", {H, T, d_h}, B,
                    head_tokens_features, r.values)
        .seconds = 0.0;
    Step& scores = rec.add_summary("scores", "Scores of every head", "ω_h = Q_h·K_hᵀ", {H, T, T}, B, head_tokens_tokens, r.scores);
    spent(scores, r.seconds.scores, r.work.scores);
    if (r.scores.causal_triangle) scores.summary.scope = "j ≤ i only: the masked scores above the diagonal are never computed";
    if (spec.causal) {
        Step& mask = rec.add_summary("mask", "The causal mask, shared by every head", "M = tril(ones(T, T))", {T, T}, B, tokens_tokens, r.mask, false);
        mask.seconds = 0.0;
        mask.legend = mask_legend;
    }
    if (spec.causal) rec.mask_from_here(CellMask{});
    rec.add_summary("weights", m.weights_title, m.weights_formula, {H, T, T}, B, head_tokens_tokens, r.weights).seconds =
        r.seconds.softmax;
    spent(rec.add_summary("head_outputs", "Each head's context vectors", "Z_h = A_h·V_h", {H, T, d_h}, B, head_tokens_features,
                          r.head_outputs),
          r.seconds.values, r.work.values);
    rec.add_summary("context", "Heads concatenated along the features", m.context_formula, {T, d_out}, B, tokens_features,
                    r.head_outputs)
        .seconds = 0.0;
    Step& out = rec.add_summary("output", m.output_title, m.output_formula, {T, d_out}, B, tokens_features, r.output_summary);
    spent(out, r.seconds.output, r.work.output);
    out.tensor.data.assign(r.output.data(), r.output.data() + r.output.size());
}

// show_einsum: the operation of a step in einsum notation, after its note.
struct Einsum {
    Recorder& rec;
    bool on;
    void operator()(const std::string& text) const {
        if (!on) return;
        Step& s = rec.trace().steps.back();
        s.note += (s.note.empty() ? "" : " ") + std::string("einsum: ") + text;
    }
};

// Q, K, V and their heads, in the form of the weights' layout.
void record_qkv(Recorder& rec, const AttentionWeights& w, const Forward& f, const MhaWords& m, const Einsum& einsum) {
    const std::size_t H = w.heads, G = w.key_heads(), d_out = w.width(), d_kv = G * w.head_size(), d_in = w.d_in();
    const std::string Hs = std::to_string(H), Gs = std::to_string(G);
    const bool stacked = w.layout == HeadLayout::stacked;
    const std::string& q_split_title = m.q_split_title;
    const std::string group_note =
        G == H ? ""
               : "Grouped-query attention: " + Gs + " key/value heads for " + Hs + " query heads; query head h reads key/value head ⌈h / " +
                     std::to_string(H / G) + "⌉ (" + grouping(H, G) + "). W_key and W_value are d_in×" + std::to_string(d_kv) +
                     " instead of d_in×" + std::to_string(d_out) + ": " + std::to_string(2 * d_in * (d_out - d_kv)) +
                     " fewer weights, and a KV cache keeps 2·" + std::to_string(d_kv) + " floats per token instead of 2·" +
                     std::to_string(d_out) + ".";
    if (w.combined) {
        const Cube qkv = xt::concatenate(xt::xtuple(f.q, f.k, f.v), 2);
        rec.add("qkv", "Queries, keys and values from one matrix product", "qkv = X·W_qkv" + std::string(w.query.b.size() ? " + b_qkv" : ""),
                qkv, tokens_features)
            .note = "MHACombinedQKV: one Linear(d_in, 3·d_out) instead of three; its columns are W_query | W_key | W_value.";
        einsum("'btc,cf->btf' (X, W_qkv)");
        rec.add("queries_split", q_split_title, "qkv.view(B, T, 3, H, d_k).permute(2, 0, 3, 1, 4)[0]", f.qh, head_tokens_features);
        einsum("rearrange 'bt(shd)->sbhtd', s = 0");
        rec.add("keys_split", "Keys split into heads", "qkv.view(B, T, 3, H, d_k).permute(2, 0, 3, 1, 4)[1]", f.kh, head_tokens_features);
        einsum("rearrange 'bt(shd)->sbhtd', s = 1");
        rec.add("values_split", "Values split into heads", "qkv.view(B, T, 3, H, d_k).permute(2, 0, 3, 1, 4)[2]", f.vh, head_tokens_features);
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
        rec.add("queries_split", q_split_title, "Q.view(B, T, H, d_k).transpose(1, 2)", f.qh, head_tokens_features);
        einsum("rearrange 'bt(hd)->bhtd' (a view, no arithmetic)");
        const std::string kv = G == H ? "H" : "G";
        rec.add("keys_split", G == H ? "Keys split into heads" : "Keys split into " + Gs + " key/value heads",
                "K.view(B, T, " + kv + ", d_k).transpose(1, 2)", f.kh, head_tokens_features);
        einsum("rearrange 'bt(" + std::string(G == H ? "h" : "g") + "d)->b" + (G == H ? "h" : "g") + "td'");
        rec.add("values_split", G == H ? "Values split into heads" : "Values split into " + Gs + " key/value heads",
                "V.view(B, T, " + kv + ", d_k).transpose(1, 2)", f.vh, head_tokens_features);
        einsum("rearrange 'bt(" + std::string(G == H ? "h" : "g") + "d)->b" + (G == H ? "h" : "g") + "td'");
    }
}

}  // namespace

Trace walk_mha(const Embeddings& input, const Weights& weights, const MhaSpec& spec, const Recording& recording) {
    if (!weights) throw UsageError("multi-head attention needs weights");
    check_draw(spec.dropout);
    check_explain(spec.explain, 0, 1, input.tokens_count());
    if (spec.explain_head >= weights->heads)
        throw UsageError("head " + std::to_string(spec.explain_head + 1) + " is out of range: there are " +
                         std::to_string(weights->heads) + " heads, counted from 1");
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
    if (w.gate) trace.set_param("output_gate", true);
    if (w.sinks) trace.set_param("sinks", true);
    Recorder rec(trace);
    const Cube x = cube_from_trace(input.x);
    const std::size_t T = x.shape(1), d_h = w.head_size();
    record_mha_parameters(rec, w);
    const MhaWords words = mha_words(w, spec);
    if (spec.head_roles && x.shape(1) < 2) throw UsageError("head roles run the input twice and look back n − 1 tokens: they need at least 2 tokens");
    if (mha_blocked(w.layout, spec, recording, H, G, w.gate.has_value() || w.sinks.has_value()) && w.out_proj) {
        record_blocked(rec, x, w, spec, words);
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
    if (spec.query) set_query_param(trace, *spec.query);
    const Einsum einsum{rec, spec.show_einsum};
    record_qkv(rec, w, f, words, einsum);
    const bool masking = spec.causal || spec.window;
    const std::string& weights_title = words.weights_title;
    const std::string& weights_formula = words.weights_formula;
    const std::string& context_formula = words.context_formula;
    const std::string& output_title = words.output_title;
    const std::string& output_formula = words.output_formula;
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
    per_head("scores", "Scores of every head", G == H ? "ω_h = Q_h·K_hᵀ" : "ω_h = Q_h·K_gᵀ, g = ⌈h/" + std::to_string(H / G) + "⌉",
             f.scores, Axis::token, false);
    einsum(G == H ? "'bhid,bhjd->bhij' (Q, K)"
                  : "'bgrid,bgjd->bgrij' (Q.view(B, G, H/G, T, d_k), K): each key/value head serves H/G query heads");
    if (masking && !one) {
        Step& m = rec.add_plain("mask", spec.window ? "The sliding-window mask (W = " + std::to_string(*spec.window) + "), shared by every head"
                                                    : "The causal mask, shared by every head",
                                spec.window ? (spec.causal ? "M_ij = 1 if i − W < j ≤ i" : "M_ij = 1 if i − W < j")
                                            : "M = tril(ones(T, T))",
                                to_trace(band_mask(T, spec.causal, spec.window.value_or(0))), tokens_tokens);
        m.legend = mask_legend;
        if (spec.window)
            m.note = "Each token sees itself and at most W − 1 = " + std::to_string(*spec.window - 1) +
                     " tokens before it (a band of width W); a KV cache needs to keep only the last W keys and values." +
                     window_covers_note(spec.window, T);
    }
    if (spec.causal) rec.mask_from_here(CellMask{true, spec.window.value_or(0)});
    per_head("weights", weights_title, weights_formula, f.weights, Axis::token, true);
    einsum("none: softmax over j of ω / √d_k (not a sum of products)");
    if (w.sinks) {
        rec.trace().steps.back().note =
            "Learned sinks (gpt-oss): each head's sink logit joins every row of its scores as one more column, the softmax runs over "
            "the T + 1 values, and the sink's column is dropped. A row's weights sum to 1 minus the sink's share: that share went "
            "to the sink, which carries no value, so a head can attend to nothing.";
        const std::string share_title = "The sinks' share of every row";
        const std::string share_formula = "1 − Σ_j A_h,ij = exp(sink_h − max) / Σ";
        if (one) rec.add("sink_share", share_title + of, share_formula, Mat(xt::view(f.sink_share, xt::all(), xt::all(), 0)), {Axis::head});
        else rec.add("sink_share", share_title, share_formula, f.sink_share, {Axis::head, Axis::token});
    }
    if (f.dropped) {
        if (spec.dropout.reseeded) trace.set_param("dropout_seed", static_cast<unsigned long long>(spec.dropout.gen->initial_seed()));
        per_head("dropout_mask", "Dropout mask of every head: 1 = kept", "keep ~ Bernoulli(1 − p)", f.keep, Axis::token, false);
        per_head("weights_dropped", "Weights after dropout", "A ⊙ keep / (1 − p)", f.weights_dropped, Axis::token, true);
    }
    per_head("head_outputs", "Each head's context vectors", G == H ? "Z_h = A_h·V_h" : "Z_h = A_h·V_g, g = ⌈h/" + std::to_string(H / G) + "⌉",
             f.head_outputs, Axis::feature, false);
    einsum(G == H ? "'bhij,bhjd->bhid' (A, V)" : "'bgrij,bgjd->bgrid' (A.view(B, G, H/G, T, T), V)");
    joined("context", "Heads concatenated along the features", context_formula, f.context);
    einsum("rearrange 'bhtd->bt(hd)'");
    if (w.gate) {
        const Cube g = one ? Cube(xt::view(f.gate, xt::all(), xt::range(f.row0, f.row0 + 1), xt::all())) : f.gate;
        joined("gate", "The output gate", "G = X·W_gate" + std::string(w.gate->b.size() ? " + b_gate" : ""), g);
        joined("gated", "The gated context", "Z ⊙ σ(G)", f.gated);
        rec.trace().steps.back().note =
            "Gated attention (Qwen3-Next's full-attention layers): σ(G), between 0 (closed) and 1 (open), of the token's own "
            "projection scales each feature of its context before out_proj. Qwen3-Next's authors report that it keeps training stable and removes attention sinks.";
    }
    joined("output", output_title, output_formula, f.output);
    if (w.out_proj) einsum("'btd,de->bte' (Z, W_o) + b_o");
    if (spec.head_roles) record_toy_roles(rec, x, w, spec);
    if (spec.explain) {
        set_explain_params(trace, *spec.explain, spec.explain_head);
        Scale sc;
        sc.value = f.scale;
        sc.symbol = "√d_k";
        sc.words = "√d_k = √" + std::to_string(d_h);
        explain_cell(rec, *spec.explain, x, &w, f, sc, ExplainDepth::context, spec.explain_head);
    }
    return explainable(finish(std::move(trace), recording, &f), recording, f, x, weights, head_scale(&w, f), ExplainDepth::context);
}

}  // namespace attnwalk
