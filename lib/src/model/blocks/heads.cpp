// Attention heads: MHA, GQA (G key/value heads for H query heads), MQA; QK-norm per head
// or over the whole projection, learned sinks, an output gate (a gated query), biases. Reads
// the scale field and each layer's q/k/v/o projections; the forward is ops/attention's
// (project_heads, attend) or, where the tap keeps nothing, ops/blocked_attention's.
#include <cmath>

#include "attnwalk/errors.hpp"
#include "attnwalk/model/blocks/heads.hpp"
#include "attnwalk/ops/blocked_attention.hpp"
#include "../kinds.hpp"

namespace attnwalk::model_detail {

namespace {

class HeadsReader : public KindReader {
public:
    HeadsReader(ConfigFile& cfg, const FamilySpec& f, const DecoderConfig& c, bool attention_bias)
        : cfg_(cfg), f_(f), c_(c), attention_bias_(attention_bias) {}

    void read(const Reader& r, const std::string& p, std::size_t, BlockWeights& b) const override {
        const HeadsPart& n = f_.heads;
        const std::size_t C = c_.width, H = c_.heads, G = c_.kv_heads, d = c_.head_dim;
        auto block = std::make_shared<HeadsBlock>();
        AttentionWeights& a = block->w;
        a.heads = H;
        a.kv_heads = G;
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
            a.key = r.linear(p + n.key + ".weight", C, G * d, true);
            a.value = r.linear(p + n.value + ".weight", C, G * d, true);
            a.out_proj = r.linear(p + n.out + ".weight", H * d, C, true);
            if (n.qkv_bias || attention_bias_) {
                a.query.b = r.vec(p + n.query + ".bias", H * d);
                a.key.b = r.vec(p + n.key + ".bias", G * d);
                a.value.b = r.vec(p + n.value + ".bias", G * d);
                if (attention_bias_) a.out_proj->b = r.vec(p + n.out + ".bias", C);
            }
        }
        if (n.qk_norm != QkNormSpan::none) {
            const bool whole = n.qk_norm == QkNormSpan::whole;
            a.q_norm = read_norm(r, f_, p + n.q_norm, whole ? H * d : d).scale;
            a.k_norm = read_norm(r, f_, p + n.k_norm, whole ? G * d : d).scale;
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
};

}  // namespace

std::unique_ptr<KindReader> heads_reader(ConfigFile& cfg, const FamilySpec& f, DecoderConfig& c, bool attention_bias) {
    const std::string& field = f.heads.scale_field;
    if (!field.empty()) {
        const double scalar = cfg.number(field, static_cast<double>(c.head_dim));
        cfg.require(scalar, scalar > 0.0, cfg.at(field), "a number above 0 (the scores are divided by its square root)");
        c.attention_scale = static_cast<float>(std::sqrt(scalar));
    }
    return std::make_unique<HeadsReader>(cfg, f, c, attention_bias);
}

}  // namespace attnwalk::model_detail

namespace attnwalk {

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
    if (!tap.keeps_attention(layer) && (!kv || kv->seen() == 0) && spec.zero_heads.empty() && !w.gate) {  // no T×T tensor at all (an output gate: the one forward applies it)
        const bool plain = !la.window && !la.rope && !c.attention_scale && !w.q_norm && w.key_heads() == w.heads && !w.sinks && !w.gate;
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
        f.causal = true;
        f.window = la.window.value_or(0);
        f.scale = c.attention_scale.value_or(static_cast<float>(std::sqrt(static_cast<double>(f.d_h))));
        if (w.sinks) f.sinks = *w.sinks;
        f.context = fast::blocked_heads(f.qh, f.kh, f.vh, f.scale, true, f.window, w.sinks ? &*w.sinks : nullptr);
        if (kv) kv->append(f.kh, f.vh);
        f.output = project(f.context, *w.out_proj);
        tap.hook(layer, hooks::heads, f);
        return std::move(f.output);
    }
    Forward f = project_heads(a, &w, spec);
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
    attend(f, &w, spec);
    tap.hook(layer, hooks::heads, f);
    return std::move(f.output);
}

}  // namespace attnwalk
