#include "attnwalk/multi_head.hpp"

#include <xtensor/xview.hpp>

#include "attnwalk/attention_at_scale.hpp"
#include "attnwalk/context.hpp"
#include "attnwalk/dropout.hpp"
#include "attnwalk/errors.hpp"
#include "attnwalk/mask.hpp"
#include "attnwalk/scores.hpp"
#include "attnwalk/setup.hpp"
#include "attnwalk/softmax.hpp"

namespace attnwalk {

Hyper split_heads(const Cube& x, std::size_t heads) {
    const std::size_t B = x.shape(0), T = x.shape(1), d_h = x.shape(2) / heads;
    Hyper out({B, heads, T, d_h});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t c = 0; c < d_h; ++c) out(b, h, t, c) = x(b, t, h * d_h + c);
    return out;
}

Cube merge_heads(const Hyper& x) {
    const std::size_t B = x.shape(0), H = x.shape(1), T = x.shape(2), d_h = x.shape(3);
    Cube out({B, T, H * d_h});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t c = 0; c < d_h; ++c) out(b, t, h * d_h + c) = x(b, h, t, c);
    return out;
}

namespace {

Cube head_of(const Hyper& x, std::size_t h) { return xt::view(x, xt::all(), h); }  // (B,T,·)

// Stacks one (B,T,·) tensor per head into (B,H,T,·).
Hyper stack_heads(const std::vector<Cube>& per_head) {
    const Cube& first = per_head.front();
    Hyper out({first.shape(0), per_head.size(), first.shape(1), first.shape(2)});
    for (std::size_t h = 0; h < per_head.size(); ++h) xt::view(out, xt::all(), h) = per_head[h];
    return out;
}

const std::vector<Axis> head_tokens_features{Axis::head, Axis::token, Axis::feature};
const std::vector<Axis> head_tokens_tokens{Axis::head, Axis::token, Axis::token};

}  // namespace

Trace walk_mha(const Embeddings& input, const WalkOptions& options) {
    const std::size_t H = options.heads;
    if (H < 1) throw UsageError("--heads must be at least 1");
    WalkOptions opts = options;
    if (!opts.projection.weights_file && !opts.projection.seed) opts.projection.seed = default_mha_seed;

    Setup s = start_walk("mha", input, opts);
    Recorder rec(s.trace);
    Trace& trace = s.trace;
    trace.set_param("variant", std::string(opts.wrapper ? "wrapper" : "fused"));
    trace.set_param("heads", static_cast<long long>(H));
    trace.set_param("causal", opts.causal);
    trace.set_param("dropout", opts.dropout);
    if (!options.projection.weights_file && !options.projection.seed)
        trace.set_param("default_seed", true);

    // ---- weights, in PyTorch's construction order ---------------------------------
    MultiHeadWeights mw;
    if (opts.projection.weights_file) {
        trace.set_param("weights", *opts.projection.weights_file);
        mw = load_multi_head(*opts.projection.weights_file, s.d_in, opts.wrapper, H);
    } else {
        const Init init = opts.projection.init.value_or(Init::linear);
        trace.set_param("init", std::string(init_name(init)));
        trace.set_param("qkv_bias", opts.projection.qkv_bias);
        const std::size_t d_out = opts.projection.d_out;
        if (opts.wrapper) {
            for (std::size_t h = 0; h < H; ++h)  // head by head: query, key, value
                mw.heads.push_back(draw_qkv(*s.gen, s.d_in, d_out, init, opts.projection.qkv_bias));
        } else {
            mw.heads.push_back(draw_qkv(*s.gen, s.d_in, d_out, init, opts.projection.qkv_bias));
            mw.out_proj = draw_linear(*s.gen, d_out, d_out, true);
        }
    }
    const std::size_t d_out = mw.heads[0].query.w.shape(1);
    trace.set_param("d_out", static_cast<long long>(d_out));
    if (!opts.wrapper && d_out % H != 0)
        throw UsageError("d_out must be divisible by the number of heads: d_out " + std::to_string(d_out) +
                         (opts.projection.weights_file ? " (from the weights file)" : " (--d-out)") +
                         " is not a multiple of --heads " + std::to_string(H));

    // ---- Q, K, V per head: (B,H,T,d_h) ------------------------------------------------
    Hyper q, k, v;
    if (opts.wrapper) {
        std::vector<Cube> qs, ks, vs;
        for (std::size_t h = 0; h < H; ++h) {
            record_qkv_parameters(rec, mw.heads[h], "head" + std::to_string(h) + ".", " of head " + std::to_string(h));
            qs.push_back(project(s.x, mw.heads[h].query));
            ks.push_back(project(s.x, mw.heads[h].key));
            vs.push_back(project(s.x, mw.heads[h].value));
        }
        q = stack_heads(qs);
        k = stack_heads(ks);
        v = stack_heads(vs);
        rec.add("queries", "Queries of every head (each head has its own W_query)", "Q_h = X·W_query_h", q, head_tokens_features);
        rec.add("keys", "Keys of every head", "K_h = X·W_key_h", k, head_tokens_features);
        rec.add("values", "Values of every head", "V_h = X·W_value_h", v, head_tokens_features);
    } else {
        record_qkv_parameters(rec, mw.heads[0], "", "");
        Step& wo = rec.add_plain("out_proj.weight", "out_proj weight (d_out×d_out, x·W layout)", "W_o",
                                 to_trace(mw.out_proj.w), {Axis::feature, Axis::feature});
        wo.kind = StepKind::parameter;
        Step& bo = rec.add_plain("out_proj.bias", "out_proj bias", "b_o", to_trace(mw.out_proj.b), {Axis::feature});
        bo.kind = StepKind::parameter;
        if (mha_at_scale_applies(opts)) {  // --summary: blocked and fused, no T×T tensor kept
            mha_at_scale(rec, s.x, mw, H, opts.causal);
            return finish(std::move(s.trace), options);
        }
        const Cube qf = project(s.x, mw.heads[0].query);  // (B,T,d_out)
        const Cube kf = project(s.x, mw.heads[0].key);
        const Cube vf = project(s.x, mw.heads[0].value);
        rec.add("queries", "Queries for all heads at once", "Q = X·W_query", qf, {Axis::token, Axis::feature});
        rec.add("keys", "Keys for all heads at once", "K = X·W_key", kf, {Axis::token, Axis::feature});
        rec.add("values", "Values for all heads at once", "V = X·W_value", vf, {Axis::token, Axis::feature});
        q = split_heads(qf, H);
        k = split_heads(kf, H);
        v = split_heads(vf, H);
        const std::string dh = std::to_string(d_out / H);
        rec.add("queries_split", "Queries split into " + std::to_string(H) + " heads of " + dh + " columns",
                "Q.view(B, T, H, d_h).transpose(1, 2)", q, head_tokens_features);
        rec.add("keys_split", "Keys split into heads", "K.view(B, T, H, d_h).transpose(1, 2)", k, head_tokens_features);
        rec.add("values_split", "Values split into heads", "V.view(B, T, H, d_h).transpose(1, 2)", v, head_tokens_features);
    }

    // ---- attention per head --------------------------------------------------------------
    const std::size_t d_k = k.shape(3);
    std::vector<Cube> scores, weights;
    for (std::size_t h = 0; h < H; ++h) {
        scores.push_back(attention_scores(head_of(q, h), head_of(k, h)));  // (B,T,T)
        // masked_fill first, then divide by √d_k (keys.shape[-1]**0.5, rounded to float)
        const Cube masked = opts.causal ? mask_future_neg_inf(scores.back()) : scores.back();
        weights.push_back(softmax(scale_scores(masked, static_cast<float>(std::sqrt(static_cast<double>(d_k))))));
    }
    rec.add("scores", "Scores of every head", "ω_h = Q_h·K_hᵀ", stack_heads(scores), head_tokens_tokens);
    if (opts.causal)
        rec.add_plain("mask", "The causal mask, shared by every head", "M = tril(ones(T, T))",
                      to_trace(causal_mask(q.shape(2))), {Axis::token, Axis::token});
    Hyper all_weights = stack_heads(weights);
    rec.add_with_row_sums("weights", std::string(opts.causal ? "Causal attention" : "Attention") + " weights of every head",
                          std::string("A_h = softmax(") + (opts.causal ? "masked " : "") + "ω_h / √" + std::to_string(d_k) + ")",
                          all_weights, head_tokens_tokens);

    // ---- dropout, in forward order ----------------------------------------------------------
    if (opts.dropout > 0.0 && !opts.eval) {
        // The draw continues the weights' stream, unless --dropout-seed reseeds it first.
        if (opts.dropout_seed || !s.gen) {
            const std::uint64_t seed = opts.dropout_seed.value_or(default_dropout_seed);
            if (!s.gen) s.gen.emplace(seed);
            s.gen->manual_seed(seed);
            trace.set_param("dropout_seed", static_cast<long long>(seed));
        }
        Hyper keep(all_weights.shape());
        if (opts.wrapper) {  // each head's forward draws its own (B,T,T) mask
            for (std::size_t h = 0; h < H; ++h) {
                auto d = dropout(weights[h], opts.dropout, *s.gen);
                weights[h] = d.output;
                xt::view(keep, xt::all(), h) = d.keep;
            }
            all_weights = stack_heads(weights);
        } else {  // one draw over the whole (B,H,T,T) tensor
            auto d = dropout(all_weights, opts.dropout, *s.gen);
            all_weights = d.output;
            keep = d.keep;
            for (std::size_t h = 0; h < H; ++h) weights[h] = head_of(all_weights, h);
        }
        rec.add("dropout_mask", "Dropout mask of every head: 1 = kept", "keep ~ Bernoulli(1 − p)", keep, head_tokens_tokens);
        rec.add_with_row_sums("weights_dropped", "Weights after dropout", "A ⊙ keep / (1 − p)", all_weights, head_tokens_tokens);
    }

    // ---- per-head outputs, concatenation, projection ----------------------------------------
    std::vector<Cube> outputs;
    for (std::size_t h = 0; h < H; ++h) outputs.push_back(context_vectors(weights[h], head_of(v, h)));  // (B,T,d_h)
    const Hyper head_outputs = stack_heads(outputs);
    rec.add("head_outputs", "Each head's context vectors", "Z_h = A_h·V_h", head_outputs, head_tokens_features);
    const Cube context = merge_heads(head_outputs);  // (B,T,H·d_h)
    rec.add("context", "Heads concatenated along the features", opts.wrapper ? "Z = concat(Z_0, …, Z_H−1)" : "Z = Z.transpose(1, 2).view(B, T, d_out)",
            context, {Axis::token, Axis::feature});
    if (opts.wrapper) {
        rec.add("output", "Output: the concatenation (the wrapper has no out_proj)", "Y = Z", context, {Axis::token, Axis::feature});
    } else {
        rec.add("output", "Output projection of the concatenated heads", "Y = Z·W_o + b_o", project(context, mw.out_proj),
                {Axis::token, Axis::feature});
    }
    return finish(std::move(s.trace), options);
}

}  // namespace attnwalk
