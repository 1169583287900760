// Multi-head latent attention (MLA, DeepSeek-V2/V3): every head's keys and values made from
// one small latent per token, a rotary key part the heads share, with or without a query
// latent. Reads DeepseekV3Config's ranks and head parts and each layer's projections; the
// forward is ops/latent_attention's, its cache the latent and the rotated rotary key.
#include <algorithm>
#include <cmath>
#include <limits>

#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/model/blocks/latent.hpp"
#include "../kinds.hpp"

namespace attnwalk::model_detail {

using json_input::Value;

namespace {

class LatentReader : public KindReader {
public:
    // The indexer's sizes, with one (index_heads > 0).
    struct IndexSizes {
        std::size_t heads = 0, dim = 0, topk = 0;
    };
    LatentReader(const FamilySpec& f, const DecoderConfig& c, bool attention_bias, std::size_t q_rank, std::size_t kv_rank, std::size_t nope,
                 std::size_t rope, std::size_t value, IndexSizes index)
        : f_(f), c_(c), attention_bias_(attention_bias), q_rank_(q_rank), kv_rank_(kv_rank), nope_(nope), rope_(rope), value_(value), index_(index) {}

    // DeepseekV3Attention's projections; its two latent norms keep RMSNorm's default eps
    void read(const Reader& r, const std::string& p, std::size_t, BlockWeights& b) const override {
        const LatentPart& n = f_.latent;
        const std::size_t C = c_.width, H = c_.heads, d = c_.head_dim;
        LatentWeights lw;
        if (q_rank_) {
            lw.q_a_proj = r.linear(p + n.q_a + ".weight", C, q_rank_, true);
            if (attention_bias_) lw.q_a_proj->b = r.vec(p + n.q_a + ".bias", q_rank_);
            lw.q_a_norm = r.norm(p + n.q_a_norm, q_rank_, NormKind::rms_norm).scale;
            lw.q_b_proj = r.linear(p + n.q_b + ".weight", q_rank_, H * d, true);
        } else {
            lw.q_proj = r.linear(p + n.query + ".weight", C, H * d, true);
        }
        lw.kv_a_proj = r.linear(p + n.kv_a + ".weight", C, kv_rank_ + rope_, true);
        if (attention_bias_) lw.kv_a_proj.b = r.vec(p + n.kv_a + ".bias", kv_rank_ + rope_);
        lw.kv_a_norm = r.norm(p + n.kv_a_norm, kv_rank_, NormKind::rms_norm).scale;
        lw.kv_b_proj = r.linear(p + n.kv_b + ".weight", kv_rank_, H * (nope_ + value_), true);
        lw.o_proj = r.linear(p + n.out + ".weight", H * value_, C, true);
        if (attention_bias_) lw.o_proj.b = r.vec(p + n.out + ".bias", C);
        lw.heads = H;
        lw.nope = nope_;
        lw.rope = rope_;
        lw.value = value_;
        lw.eps = 1e-6f;
        if (index_.heads) {  // DeepseekV32Indexer: wq_b on the query latent, wk, k_norm (nn.LayerNorm, eps 1e-6), weights_proj
            const std::string q = p + n.indexer + ".";
            LatentIndexerWeights ix;
            ix.wq_b = r.linear(q + "wq_b.weight", q_rank_, index_.heads * index_.dim, true);
            ix.wk = r.linear(q + "wk.weight", C, index_.dim, true);
            const Norm kn = r.norm(q + "k_norm", index_.dim, NormKind::layer_norm);
            ix.k_norm = kn.scale;
            ix.k_norm_bias = kn.shift;
            ix.weights_proj = r.linear(q + "weights_proj.weight", C, index_.heads, true);
            ix.heads = index_.heads;
            ix.rope = rope_;
            ix.topk = index_.topk;
            lw.indexer = std::move(ix);
        }
        auto block = std::make_shared<LatentBlock>();
        block->w = std::move(lw);
        b.attention = std::move(block);
    }

private:
    const FamilySpec& f_;
    const DecoderConfig& c_;
    bool attention_bias_;
    std::size_t q_rank_, kv_rank_, nope_, rope_, value_;
    IndexSizes index_;
};

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

}  // namespace

// Its ranks and head parts, as the family names them (DeepseekV3Config's).
std::unique_ptr<KindReader> latent_reader(ConfigFile& cfg, const FamilySpec& f, DecoderConfig& c, bool attention_bias) {
    if (f.attention != AttentionKind::latent) return nullptr;
    const LatentPart& n = f.latent;
    const std::size_t q_rank = cfg.count(n.query_rank, 0, 1);  // null or absent: a plain q_proj
    if (c.kv_heads != c.heads)
        throw InputError(cfg.file(), cfg.at("num_key_value_heads"), "latent attention makes a key and a value for every head: expected " + std::to_string(c.heads) +
                                                                  " (num_attention_heads), got " + std::to_string(c.kv_heads));
    const std::size_t kv_rank = cfg.count(n.rank);
    const std::size_t nope = cfg.count(n.nope, std::nullopt, 0);
    const std::size_t rope = cfg.count(n.rope, std::nullopt, 0);
    const std::size_t value = cfg.count(n.value);
    if (nope + rope == 0) throw InputError(cfg.file(), cfg.at(n.nope), "a head needs d_nope + d_rope ≥ 1");
    if (rope % 2) throw InputError(cfg.file(), cfg.at(n.rope), "expected an even number (RoPE turns pairs), got " + std::to_string(rope));
    c.head_dim = nope + rope;  // the query and key heads; head_dim in config.json names the rotary part
    c.latent_interleave = n.interleave.empty() || cfg.flag(n.interleave, true);  // DeepseekV32Attention de-interleaves always
    LatentReader::IndexSizes index;
    if (!n.indexer.empty()) {  // DeepseekV32Config's index_n_heads, index_head_dim, index_topk (defaults 64, 128, 2048)
        if (!q_rank)
            throw InputError(cfg.file(), cfg.at(n.query_rank), "a number: the indexer reads the query latent (DeepseekV32Attention has no plain q_proj)");
        index.heads = cfg.count(n.index_heads, 64);
        index.dim = cfg.count(n.index_dim, 128);
        index.topk = cfg.count(n.index_topk, 2048);
        if (index.dim < rope)
            throw InputError(cfg.file(), cfg.at(n.index_dim), "at least " + std::to_string(rope) + " (qk_rope_head_dim): RoPE turns the first " +
                                                                 std::to_string(rope) + " features of the indexer's queries and keys, got " + std::to_string(index.dim));
    }
    // DeepseekV3Attention: (d_nope + d_rope)^(−1/2), × mscale² when rope_scaling has mscale_all_dim
    double scaling = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
    if (const Value* sc = cfg.get("rope_scaling"); sc && sc->is_object()) {
        const Value* all = sc->find("mscale_all_dim");
        const Value* factor = sc->find("factor");
        if (all && all->type != Value::Type::null && cfg.number_of(*all, cfg.at("rope_scaling.mscale_all_dim")) != 0.0 && factor) {
            const double k = cfg.number_of(*factor, cfg.at("rope_scaling.factor")), a = cfg.number_of(*all, cfg.at("rope_scaling.mscale_all_dim"));
            const double mscale = yarn_mscale(k, a);
            cfg.require(a, std::isfinite(mscale) && mscale > 0.0 && std::isfinite(static_cast<float>(mscale * mscale * scaling)),
                        cfg.at("rope_scaling.mscale_all_dim"), "a number that keeps YaRN's 0.1·mscale_all_dim·ln(factor) + 1 above 0 and its square within float32");
            scaling *= mscale * mscale;
        }
    }
    c.latent_scaling = static_cast<float>(scaling);
    return std::make_unique<LatentReader>(f, c, attention_bias, q_rank, kv_rank, nope, rope, value, index);
}

}  // namespace attnwalk::model_detail

namespace attnwalk {

using model_detail::as_cached;
using model_detail::from_cached;
using model_detail::join_heads;

// A latent attention layer (MLA): the latent cache's c_KV and k_rope before the new tokens;
// the tap gets its intermediates, then the same layer as heads.
Cube LatentBlock::forward(const Cube& a, const LayerCall& call) const {
    const DecoderConfig& c = call.config;
    const std::size_t layer = call.layer;
    KvCache* kv = call.cache ? &call.cache->layers[layer] : nullptr;
    DecoderTap& tap = call.tap;
    const std::vector<std::size_t>* zero_heads = call.zero_heads;
    if (kv && kv->streaming())
        throw UsageError("a start-and-recent cache rotates cached keys again at their place in the cache: latent attention caches its rotary key "
                         "already rotated, so it keeps its whole latent cache instead");
    const LayerSpec& la = c.layer_specs.at(layer);
    LatentSpec spec;
    spec.causal = true;
    if (la.rope) spec.rope = *la.rope;
    spec.interleave = c.latent_interleave;
    spec.position0 = call.position0;
    spec.scaling = c.latent_scaling;
    Cube past_latent, past_rope;
    Cube* index_keys = nullptr;  // the indexer's keys of the cached tokens (DeepSeek-V3.2), the cache's own slot
    if (kv && w.indexer) {
        if (call.cache->index_keys.size() <= layer) call.cache->index_keys.resize(layer + 1);
        index_keys = &call.cache->index_keys[layer];
    }
    if (kv && kv->length()) {
        past_latent = from_cached(kv->keys());
        past_rope = from_cached(kv->values());
        spec.past_latent = &past_latent;
        spec.past_k_rope = &past_rope;
        if (index_keys) spec.past_index_keys = index_keys;
    }
    LatentForward lf = latent_attention_forward(a, w, spec);
    const std::size_t T = a.shape(1), S = lf.latent.shape(1);
    if (kv) {  // the new tokens' latent and rotated k_rope join the cache
        const Cube new_latent = xt::view(lf.latent, xt::all(), xt::range(S - T, S), xt::all());
        const Cube new_rope = xt::view(lf.k_rope, xt::all(), xt::range(S - T, S), xt::all());
        kv->append(as_cached(new_latent), as_cached(new_rope));
        if (index_keys) *index_keys = lf.index->k;  // every key so far, normed and rotated (the cache's and the new tokens')
    }
    if (zero_heads && !zero_heads->empty()) {  // ablation: those heads' outputs zeroed before o_proj
        for (std::size_t h : *zero_heads)
            if (h < w.heads) xt::view(lf.head_outputs, xt::all(), h) = 0.0f;
        lf.context = merge_heads(lf.head_outputs);
        lf.output = project(lf.context, w.o_proj);
    }
    tap.hook(layer, hooks::latent, lf);
    // the same layer as the heads the tap knows: Q = [q_nope | q_rope], K = [k_nope | k_rope]
    Forward f;
    f.heads = f.kv_heads = w.heads;
    f.d_h = w.qk_head();
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
    if (lf.top) {  // DeepSeek-V3.2: what the softmax read, the keys the indexer dropped −∞ as the causal mask's (for cells written out)
        f.scaled = lf.scores;
        const std::size_t H = f.scaled.shape(1);
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t s = 0; s < S; ++s)
                    f.scaled(0, h, t, s) = lf.top->kept(0, t, s) == 0.0f ? -std::numeric_limits<float>::infinity() : f.scaled(0, h, t, s) * lf.scaling;
    }
    f.scores = std::move(lf.scores);
    f.weights = std::move(lf.weights);
    f.row_max = std::move(lf.row_max);
    f.row_sum = std::move(lf.row_sum);
    f.head_outputs = std::move(lf.head_outputs);
    f.context = std::move(lf.context);
    f.output = std::move(lf.output);
    tap.hook(layer, hooks::heads, f);
    return std::move(f.output);
}

}  // namespace attnwalk
