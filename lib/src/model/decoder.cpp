// The decoder's forward, the block written once. See model/decoder.hpp.
#include "attnwalk/model/decoder.hpp"

#include <algorithm>
#include <cmath>

#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/blocked_attention.hpp"

namespace attnwalk {

const ModelInfo& info_of(const LoadedModel& model) { return model.info; }

namespace {

// The attention of one block on a = norm_1(x) (1,T,C): the blocked path when the tap
// keeps nothing of it and no cache came before; else the one forward, on the cache. Each
// path hands the tap its Forward (the blocked ones without T×T tensors).
// (B,T,n) <-> (B,1,T,n), the cache's layout
Hyper as_cached(const Cube& x) {
    Hyper h = Hyper::from_shape({x.shape(0), 1, x.shape(1), x.shape(2)});
    std::copy(x.begin(), x.end(), h.begin());
    return h;
}
Cube from_cached(const Hyper& h) {
    Cube x = Cube::from_shape({h.shape(0), h.shape(2), h.shape(3)});
    std::copy(h.begin(), h.end(), x.begin());
    return x;
}

// Heads side by side on the last axis: (B,H,T,a) and (B,H or 1,T,b) -> (B,H,T,a+b).
Hyper join_heads(const Hyper& a, const Hyper& b) {
    const std::size_t B = a.shape(0), H = a.shape(1), T = a.shape(2), na = a.shape(3), nb = b.shape(3);
    Hyper out = Hyper::from_shape({B, H, T, na + nb});
    for (std::size_t i = 0; i < B; ++i)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t) {
                for (std::size_t j = 0; j < na; ++j) out(i, h, t, j) = a(i, h, t, j);
                for (std::size_t j = 0; j < nb; ++j) out(i, h, t, na + j) = b(i, b.shape(1) == 1 ? 0 : h, t, j);
            }
    return out;
}

// A latent attention layer (MLA): the latent cache's c_KV and k_rope before the new tokens;
// the tap gets its intermediates, then the same layer as heads.
Cube latent_block_attention(const DecoderConfig& c, const BlockWeights& b, std::size_t layer, const Cube& a, std::size_t position0, KvCache* kv,
                            DecoderTap& tap, const std::vector<std::size_t>* zero_heads) {
    if (kv && kv->streaming())
        throw UsageError("a start-and-recent cache rotates cached keys again at their place in the cache: latent attention caches its rotary key "
                         "already rotated, so it keeps its whole latent cache instead");
    const LayerAttention& la = c.layer_attention.at(layer);
    LatentSpec spec;
    spec.causal = true;
    if (la.rope) spec.rope = *la.rope;
    spec.interleave = c.latent_interleave;
    spec.position0 = position0;
    spec.scaling = c.latent_scaling;
    Cube past_latent, past_rope;
    if (kv && kv->length()) {
        past_latent = from_cached(kv->keys());
        past_rope = from_cached(kv->values());
        spec.past_latent = &past_latent;
        spec.past_k_rope = &past_rope;
    }
    LatentForward lf = latent_attention_forward(a, *b.latent, spec);
    const std::size_t T = a.shape(1), S = lf.latent.shape(1);
    if (kv) {  // the new tokens' latent and rotated k_rope join the cache
        const Cube new_latent = xt::view(lf.latent, xt::all(), xt::range(S - T, S), xt::all());
        const Cube new_rope = xt::view(lf.k_rope, xt::all(), xt::range(S - T, S), xt::all());
        kv->append(as_cached(new_latent), as_cached(new_rope));
    }
    if (zero_heads && !zero_heads->empty()) {  // ablation: those heads' outputs zeroed before o_proj
        for (std::size_t h : *zero_heads)
            if (h < b.latent->heads) xt::view(lf.head_outputs, xt::all(), h) = 0.0f;
        lf.context = merge_heads(lf.head_outputs);
        lf.output = project(lf.context, b.latent->o_proj);
    }
    tap.latent(layer, lf);
    // the same layer as the heads the tap knows: Q = [q_nope | q_rope], K = [k_nope | k_rope]
    Forward f;
    f.heads = f.kv_heads = b.latent->heads;
    f.d_h = b.latent->qk_head();
    f.rows = T;
    f.q_position0 = S - T;
    f.scale = 1.0f / lf.scaling;
    f.causal = true;
    f.q = lf.q;
    f.qh = join_heads(lf.q_nope, lf.q_rope);
    const Hyper k_rope = as_cached(lf.k_rope);
    f.kh = join_heads(lf.k_nope, k_rope);
    f.vh = lf.v;
    f.k = merge_heads(f.kh);
    f.v = merge_heads(f.vh);
    f.scores = std::move(lf.scores);
    f.weights = std::move(lf.weights);
    f.head_outputs = std::move(lf.head_outputs);
    f.context = std::move(lf.context);
    f.output = std::move(lf.output);
    tap.attention(layer, f);
    return std::move(f.output);
}

Cube block_attention(const DecoderConfig& c, const BlockWeights& b, std::size_t layer, const Cube& a, std::size_t position0, KvCache* kv,
                     DecoderTap& tap, const std::vector<std::size_t>* zero_heads) {
    if (b.latent) return latent_block_attention(c, b, layer, a, position0, kv, tap, zero_heads);
    ForwardSpec spec;
    if (zero_heads) spec.zero_heads = *zero_heads;
    spec.causal = true;
    spec.position0 = position0;
    const LayerAttention& la = c.layer_attention.at(layer);
    spec.window = la.window;
    spec.rope = la.rope;
    spec.scale = c.attention_scale;
    spec.keep_masked_scaled = false;  // the tap reads the scores and the weights
    // the T×T steps as their statistics alone where the tap asks; not even those in a layer
    // it does not keep that takes no blocked path (a cache, an output gate, heads ablated),
    // where nothing reads them (attend makes them a head at a time in buffers, where its
    // kernels take the heads)
    spec.square_statistics = tap.summarises_attention(layer);
    spec.square_summaries = spec.square_statistics || !tap.keeps_attention(layer);
    if (kv && kv->streaming()) {
        // StreamingLLM: the keys enter the cache before RoPE; after the eviction every cached
        // key is rotated at its index in the cache, the new queries at the last indices
        ForwardSpec plain = spec;
        plain.rope.reset();
        Forward f = project_heads(a, &b.attn, plain);  // QK-norm, no rotation yet
        const std::size_t coming = f.kh.shape(2);
        kv->make_room(coming);
        kv->append(f.kh, f.vh);
        const std::size_t n = kv->length();
        f.vh = kv->values();
        if (la.rope) {
            f.rope = rope_tables(f.d_h, coming, n - coming, *la.rope);
            f.qh_plain = std::move(f.qh);
            f.qh = apply_rope(f.qh_plain, *f.rope);
            f.kh_plain = kv->keys();
            f.kh = apply_rope(f.kh_plain, rope_tables(f.d_h, n, 0, *la.rope));
        } else {
            f.kh = kv->keys();
        }
        attend(f, &b.attn, spec);
        tap.attention(layer, f);
        return std::move(f.output);
    }
    if (!tap.keeps_attention(layer) && (!kv || kv->seen() == 0) && spec.zero_heads.empty() && !b.attn.gate) {  // no T×T tensor at all (an output gate: the one forward applies it)
        const bool plain = !la.window && !la.rope && !c.attention_scale && !b.attn.q_norm && b.attn.key_heads() == b.attn.heads && !b.attn.sinks && !b.attn.gate;
        if (plain) {  // GPT-2: the fused blocked path, projections included
            fast::BlockedResult r = fast::blocked_attention(a, b.attn, true);
            Forward f;
            f.causal = true;
            f.output = std::move(r.output);
            if (kv) kv->append(split_heads(project(a, b.attn.key), b.attn.key_heads()), split_heads(project(a, b.attn.value), b.attn.key_heads()));
            tap.attention(layer, f);
            return std::move(f.output);
        }
        // today's models: the heads as the forward makes them (QK-norm, RoPE), then the blocked core
        Forward f = project_heads(a, &b.attn, spec);
        f.causal = true;
        f.window = la.window.value_or(0);
        f.scale = c.attention_scale.value_or(static_cast<float>(std::sqrt(static_cast<double>(f.d_h))));
        if (b.attn.sinks) f.sinks = *b.attn.sinks;
        f.context = fast::blocked_heads(f.qh, f.kh, f.vh, f.scale, true, f.window, b.attn.sinks ? &*b.attn.sinks : nullptr);
        if (kv) kv->append(f.kh, f.vh);
        f.output = project(f.context, *b.attn.out_proj);
        tap.attention(layer, f);
        return std::move(f.output);
    }
    Forward f = project_heads(a, &b.attn, spec);
    if (kv && la.window && f.kh.shape(2) > 1) {
        // a sliding layer's cache keeps only the last W tokens: several new queries need
        // more than that, so they attend to the cache and themselves, then the cache trims
        KvCache all;
        if (kv->length()) all.append(kv->keys(), kv->values());
        all.append(f.kh, f.vh);
        kv->append(f.kh, f.vh);
        f.kh = all.keys();
        f.vh = all.values();
    } else if (kv) {  // the new keys and values join the cache; the queries attend to all of it
        kv->append(f.kh, f.vh);
        f.kh = kv->keys();
        f.vh = kv->values();
    }
    attend(f, &b.attn, spec);
    tap.attention(layer, f);
    return std::move(f.output);
}

}  // namespace

void check_prompt(const DecoderConfig& c, const std::vector<std::size_t>& ids, std::size_t position0) {
    const std::size_t T = ids.size();
    if (T == 0) throw UsageError("no tokens to run");
    if (position0 + T > c.context)
        throw UsageError(std::to_string(position0 + T) + " tokens: the model's context is " + std::to_string(c.context));
    for (std::size_t id : ids)
        if (id >= c.vocab)
            throw UsageError("token id " + std::to_string(id) + " is out of range: the vocabulary has " + std::to_string(c.vocab));
}

void check_prompt(const LoadedModel& model, const std::vector<std::size_t>& ids) { check_prompt(model.weights.config, ids, 0); }

double DecoderCache::bytes(std::size_t bytes_per_value) const {
    double sum = 0.0;
    for (const KvCache& kv : layers) sum += kv.bytes(bytes_per_value);
    for (const DeltaNetCache& d : linear) sum += d.bytes(bytes_per_value);
    return sum;
}

DecoderCache make_cache(const DecoderConfig& config) {
    DecoderCache cache;
    for (std::size_t l = 0; l < config.layers; ++l) {  // a sliding layer keeps its window, the others every token
        const std::size_t window = l < config.layer_attention.size() ? config.layer_attention[l].window.value_or(0) : 0;
        cache.layers.emplace_back(window);
    }
    cache.linear.resize(config.layers);
    return cache;
}

DecoderCache make_start_recent_cache(const DecoderConfig& config, std::size_t start, std::size_t recent) {
    if (recent == 0) throw UsageError("a start-and-recent cache keeps at least the newest token: recent must be at least 1");
    for (std::size_t l = 0; l < config.layers && l < config.layer_attention.size(); ++l) {
        if (config.layer_attention[l].linear)
            throw UsageError("layer " + std::to_string(l + 1) + " is a Gated DeltaNet layer, which keeps a state of fixed size rather than tokens: a "
                             "start-and-recent cache is for models whose every layer is softmax attention");
        if (config.layer_attention[l].window)
            throw UsageError("layer " + std::to_string(l + 1) + " is a sliding-window layer, which keeps its own window: a start-and-recent cache "
                             "is for models whose every layer attends to all tokens");
    }
    if (config.positions != PositionKind::rope)
        throw UsageError("a start-and-recent cache rotates its keys at their place in the cache: it needs a model with RoPE, and this one "
                         "adds learned position embeddings to the tokens");
    DecoderCache cache;
    for (std::size_t l = 0; l < config.layers; ++l) cache.layers.push_back(KvCache::start_recent(start, recent));
    return cache;
}

Cube decoder_forward(const DecoderWeights& w, const std::vector<std::size_t>& ids, DecoderCache* cache, DecoderTap* tap,
                     const Ablation* ablation) {
    DecoderTap silent;
    DecoderTap& t = tap ? *tap : silent;
    const DecoderConfig& c = w.config;
    const std::size_t T = ids.size(), C = c.width, p0 = cache ? cache->tokens() : 0;
    check_prompt(c, ids, p0);

    Cube tok = Cube::from_shape({1, T, C});  // (1,T,C)
    for (std::size_t i = 0; i < T; ++i) w.embed.copy_out_row(ids[i], &tok(0, i, 0));
    Cube x = tok;
    if (c.embed_scale) x = tok * *c.embed_scale;  // in float32, as the reference multiplies
    if (c.positions == PositionKind::learned) {
        Cube pos = Cube::from_shape({1, T, C});
        for (std::size_t i = 0; i < T; ++i) xt::view(pos, 0, i, xt::all()) = xt::view(w.positions, p0 + i, xt::all());
        x = x + pos;  // (1,T,C)
        t.embeddings(tok, &pos, x);
    } else {
        t.embeddings(tok, nullptr, x);
    }
    for (std::size_t l = 0; l < c.layers; ++l) {
        const BlockWeights& b = w.blocks[l];
        const Cube a = b.norm_1 ? normalise(x, *b.norm_1, c.norm, c.norm_eps) : x;  // (1,T,C); post-norm: the residual stream itself
        if (b.norm_1) t.block(l, BlockPoint::norm_1, a);
        const std::vector<std::size_t>* off = ablation && l < ablation->size() && !(*ablation)[l].empty() ? &(*ablation)[l] : nullptr;
        Cube attn;  // (1,T,C)
        if (b.linear) {  // Gated DeltaNet: a state instead of a cache of tokens
            GatedDeltaNetForward g = gated_deltanet_forward(a, *b.linear, cache && l < cache->linear.size() ? &cache->linear[l] : nullptr,
                                                                t.keeps_attention(l));
            t.linear(l, g);
            attn = std::move(g.output);
        } else {
            attn = block_attention(c, b, l, a, p0, cache ? &cache->layers[l] : nullptr, t, off);
        }
        t.block(l, BlockPoint::attention, attn);
        if (b.attention_norm) {
            attn = normalise(attn, *b.attention_norm, c.norm, c.norm_eps);
            t.block(l, BlockPoint::attention_norm, attn);
        }
        x += attn;
        t.block(l, BlockPoint::residual_1, x);
        const Cube m = b.norm_2 ? normalise(x, *b.norm_2, c.norm, c.norm_eps) : x;  // (1,T,C)
        if (b.norm_2) t.block(l, BlockPoint::norm_2, m);
        Cube mlp;
        if (b.moe) {  // a mixture of experts: each token through the few its router chose
            MoeOutput routed = moe_forward(m, *b.moe);
            t.experts(l, routed);
            mlp = std::move(routed.output);
        } else {
            const Cube hidden = mlp_hidden(m, c.mlp, b.up, gated(c.mlp) ? &b.gate : nullptr);  // (1,T,hidden)
            t.block(l, BlockPoint::mlp_hidden, hidden);
            mlp = project(hidden, b.down);  // (1,T,C)
        }
        t.block(l, BlockPoint::mlp, mlp);
        if (b.mlp_norm) {
            mlp = normalise(mlp, *b.mlp_norm, c.norm, c.norm_eps);
            t.block(l, BlockPoint::mlp_norm, mlp);
        }
        x += mlp;
        t.block(l, BlockPoint::residual_2, x);
    }
    return normalise(x, w.final_norm, c.norm, c.norm_eps);
}

Mat decoder_logits(const DecoderWeights& w, const Cube& final_x, std::size_t row) {
    return project_row(w.output_head(), &final_x(0, row, 0));  // (1,V)
}

}  // namespace attnwalk
