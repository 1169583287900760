// Attention heads: MHA, GQA (G key/value heads for H query heads), MQA; QK-norm per head
// or over the whole projection, learned sinks, an output gate (a gated query), biases; the
// full layers' own head size and key/value heads, keys that are the values too, a norm on
// the values; cross-layer KV sharing (a layer reading the keys and values of an earlier one
// of its type, which it neither projects nor caches). Reads the scale field and each layer's
// q/k/v/o projections; the forward is ops/attention's (project_heads, attend) or, where the
// tap keeps nothing, ops/blocked_attention's.
#include <cmath>

#include "attnwalk/errors.hpp"
#include "attnwalk/model/blocks/heads.hpp"
#include "attnwalk/ops/blocked_attention.hpp"
#include "../kinds.hpp"

namespace attnwalk::model_detail {

namespace {

class HeadsReader : public KindReader {
public:
    // full_d, full_G: a full layer's own d_h and G (0: the model's); k_eq_v: its keys are its values too
    HeadsReader(ConfigFile& cfg, const FamilySpec& f, const DecoderConfig& c, bool attention_bias, std::size_t full_d, std::size_t full_G, bool k_eq_v)
        : cfg_(cfg), f_(f), c_(c), attention_bias_(attention_bias), full_d_(full_d), full_G_(full_G), k_eq_v_(k_eq_v) {}

    void read(const Reader& r, const std::string& p, std::size_t layer, BlockWeights& b) const override {
        const HeadsPart& n = f_.heads;
        const LayerSpec& ls = c_.layer_specs.at(layer);
        const bool full = !ls.window, shared = ls.kv_from.has_value(), k_eq_v = full && k_eq_v_;
        const std::size_t C = c_.width, H = c_.heads, G = k_eq_v && full_G_ ? full_G_ : c_.kv_heads, d = full && full_d_ ? full_d_ : c_.head_dim;
        auto block = std::make_shared<HeadsBlock>();
        AttentionWeights& a = block->w;
        a.heads = H;
        a.kv_heads = G;
        a.shared_kv = shared;
        a.v_norm = n.v_norm;
        if (n.query_gate) {  // Qwen3NextAttention: q_proj makes per head [query | gate]
            if (n.qkv_bias || attention_bias_)
                throw InputError(cfg_.file(), cfg_.at("attention_bias"), "biases with a gated query are not supported: expected false");
            const Mat both = r.linear(p + n.query + ".weight", C, 2 * H * d, true).matrix();  // C × 2·H·d
            Mat query = Mat::from_shape({C, H * d}), gate = Mat::from_shape({C, H * d});
            for (std::size_t row = 0; row < C; ++row)
                for (std::size_t h = 0; h < H; ++h)
                    for (std::size_t i = 0; i < d; ++i) {
                        query(row, h * d + i) = both(row, h * 2 * d + i);
                        gate(row, h * d + i) = both(row, h * 2 * d + d + i);
                    }
            a.query = owned_linear(std::move(query));
            a.gate = owned_linear(std::move(gate));
            a.key = r.linear(p + n.key + ".weight", C, G * d, true);
            a.value = r.linear(p + n.value + ".weight", C, G * d, true);
            a.out_proj = r.linear(p + n.out + ".weight", H * d, C, true);
        } else {
            a.query = r.linear(p + n.query + ".weight", C, H * d, true);
            if (!shared) {  // a layer that shares keys and values has neither projection
                a.key = r.linear(p + n.key + ".weight", C, G * d, true);
                a.value = k_eq_v ? a.key : r.linear(p + n.value + ".weight", C, G * d, true);  // attention_k_eq_v: V from W_k
            }
            a.out_proj = r.linear(p + n.out + ".weight", H * d, C, true);
            if (n.qkv_bias || attention_bias_) {
                if (shared || k_eq_v) throw InputError(cfg_.file(), cfg_.at("attention_bias"), "biases with shared keys and values are not supported: expected false");
                a.query.b = r.vec(p + n.query + ".bias", H * d);
                a.key.b = r.vec(p + n.key + ".bias", G * d);
                a.value.b = r.vec(p + n.value + ".bias", G * d);
                if (attention_bias_) a.out_proj->b = r.vec(p + n.out + ".bias", C);
            }
        }
        if (n.qk_norm != QkNormSpan::none) {
            const bool whole = n.qk_norm == QkNormSpan::whole;
            a.q_norm = read_norm(r, f_, p + n.q_norm, whole ? H * d : d).scale;
            if (!shared) a.k_norm = read_norm(r, f_, p + n.k_norm, whole ? G * d : d).scale;
            a.qk_norm_whole = whole;
            a.qk_norm_eps = c_.norm_eps;
        }
        if (!n.sinks.empty()) a.sinks = r.vec(p + n.sinks, H);
        b.attention = std::move(block);
    }

private:
    ConfigFile& cfg_;
    const FamilySpec& f_;
    const DecoderConfig& c_;
    bool attention_bias_;
    std::size_t full_d_, full_G_;
    bool k_eq_v_;
};

// num_kv_shared_layers: the last n layers read the keys and values of the last layer before
// them of the same type (Gemma4TextAttention's store_full_length_kv), marked in the plan.
void plan_shared_layers(ConfigFile& cfg, const std::string& field, DecoderConfig& c) {
    const std::size_t L = c.layers, n = cfg.count(field, 0, 0);
    if (n == 0) return;
    if (n >= L)
        throw InputError(cfg.file(), cfg.at(field), "expected fewer than num_hidden_layers (" + std::to_string(L) +
                                                        "): a layer that shares keys and values reads them from an earlier one");
    const std::size_t first = L - n;
    for (std::size_t l = first; l < L; ++l) {
        const bool sliding = c.layer_specs[l].window.has_value();
        std::optional<std::size_t> from;
        for (std::size_t j = 0; j < first; ++j)
            if (c.layer_specs[j].window.has_value() == sliding) from = j;
        if (!from)
            throw InputError(cfg.file(), cfg.at(field), "layer " + std::to_string(l + 1) + " (" + (sliding ? "sliding" : "full") +
                                                            " attention) would share the keys and values of an earlier layer of its type, and none of the first " +
                                                            std::to_string(first) + " is one");
        c.layer_specs[l].kv_from = from;
        c.layer_specs[*from].kv_shared = true;
    }
}

}  // namespace

std::unique_ptr<KindReader> heads_reader(ConfigFile& cfg, const FamilySpec& f, DecoderConfig& c, bool attention_bias) {
    const HeadsPart& n = f.heads;
    const std::string& field = n.scale_field;
    if (!field.empty()) {
        const double scalar = cfg.number(field, static_cast<double>(c.head_dim));
        cfg.require(scalar, scalar > 0.0, cfg.at(field), "a number above 0 (the scores are divided by its square root)");
        c.attention_scale = static_cast<float>(std::sqrt(scalar));
    }
    if (n.unscaled) c.attention_scale = 1.0f;
    const std::size_t full_d = n.full_head_dim.empty() ? 0 : cfg.count(n.full_head_dim, 512);  // Gemma4TextConfig's default
    const bool k_eq_v = !n.keys_as_values.empty() && cfg.flag(n.keys_as_values, false);
    const std::size_t full_G = k_eq_v ? cfg.count(n.full_kv_heads) : 0;
    if (full_G && c.heads % full_G != 0)
        throw InputError(cfg.file(), cfg.at(n.full_kv_heads),
                         std::to_string(full_G) + " key/value heads do not divide " + std::to_string(c.heads) + " query heads");
    if (!n.shared_layers.empty()) plan_shared_layers(cfg, n.shared_layers, c);
    return std::make_unique<HeadsReader>(cfg, f, c, attention_bias, full_d, full_G, k_eq_v);
}

}  // namespace attnwalk::model_detail

namespace attnwalk {

namespace {

// Cross-layer KV sharing: a layer that reads an earlier one's keys and values takes them (all
// that layer attended to, its cache's included); a layer that later ones read hands its own.
void share_keys_values(Forward& f, const LayerSpec& la, const LayerCall& call) {
    if (!la.kv_from && !la.kv_shared) return;
    if (!call.shared) throw std::logic_error("a layer that shares keys and values called without the forward's shared ones");
    if (la.kv_from) {
        f.kh = call.shared->keys.at(*la.kv_from);
        f.vh = call.shared->values.at(*la.kv_from);
    } else {
        call.shared->keys.at(call.layer) = f.kh;
        call.shared->values.at(call.layer) = f.vh;
    }
}

}  // namespace

// The heads' attention: the blocked path when the tap keeps nothing of it and no cache came
// before; else the one forward, on the cache. Each path hands the tap its Forward (the blocked
// ones without T×T tensors).
Cube HeadsBlock::forward(const Cube& a, const LayerCall& call) const {
    const DecoderConfig& c = call.config;
    const std::size_t layer = call.layer;
    KvCache* kv = call.cache ? &call.cache->layers[layer] : nullptr;
    DecoderTap& tap = call.tap;
    ForwardSpec spec;
    if (call.zero_heads) spec.zero_heads = *call.zero_heads;
    spec.causal = true;
    spec.position0 = call.position0;
    const LayerSpec& la = c.layer_specs.at(layer);
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
        Forward f = project_heads(a, &w, plain);  // QK-norm, no rotation yet
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
        attend(f, &w, spec);
        tap.hook(layer, hooks::heads, f);
        return std::move(f.output);
    }
    if (!tap.keeps_attention(layer) && (!kv || (kv->seen() == 0 && !la.kv_from)) && spec.zero_heads.empty() && !w.gate) {  // no T×T tensor at all (an output gate: the one forward applies it)
        const bool plain = !la.window && !la.rope && !c.attention_scale && !w.q_norm && w.key_heads() == w.heads && !w.sinks && !w.gate &&
                           !la.kv_from && !la.kv_shared;
        if (plain) {  // GPT-2: the fused blocked path, projections included
            fast::BlockedResult r = fast::blocked_attention(a, w, true);
            Forward f;
            f.causal = true;
            f.output = std::move(r.output);
            if (kv) kv->append(split_heads(project(a, w.key), w.key_heads()), split_heads(project(a, w.value), w.key_heads()));
            tap.hook(layer, hooks::heads, f);
            return std::move(f.output);
        }
        // today's models: the heads as the forward makes them (QK-norm, RoPE), then the blocked core
        Forward f = project_heads(a, &w, spec);
        share_keys_values(f, la, call);
        f.causal = true;
        f.window = la.window.value_or(0);
        f.scale = c.attention_scale.value_or(static_cast<float>(std::sqrt(static_cast<double>(f.d_h))));
        if (w.sinks) f.sinks = *w.sinks;
        f.context = fast::blocked_heads(f.qh, f.kh, f.vh, f.scale, true, f.window, w.sinks ? &*w.sinks : nullptr);
        if (kv && !la.kv_from) kv->append(f.kh, f.vh);  // a layer reading another's keys and values caches none
        f.output = project(f.context, *w.out_proj);
        tap.hook(layer, hooks::heads, f);
        return std::move(f.output);
    }
    Forward f = project_heads(a, &w, spec);
    if (la.kv_from) {
        share_keys_values(f, la, call);
    } else if (kv && la.window && f.kh.shape(2) > 1) {
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
    if (la.kv_shared) share_keys_values(f, la, call);
    attend(f, &w, spec);
    tap.hook(layer, hooks::heads, f);
    return std::move(f.output);
}

}  // namespace attnwalk
