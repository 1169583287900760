// The decoder's forward, the block written once. See model/decoder.hpp.
#include "attnwalk/model/decoder.hpp"

#include <algorithm>

#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/blocked_attention.hpp"

namespace attnwalk {

namespace {

// The attention of one block on a = norm_1(x) (1,T,C): the blocked path when the tap
// keeps nothing of it and no cache came before; else the one forward, on the cache.
Cube block_attention(const BlockWeights& b, std::size_t layer, const Cube& a, std::size_t position0, KvCache* kv, DecoderTap& tap) {
    ForwardSpec spec;
    spec.causal = true;
    spec.position0 = position0;
    if (!tap.keeps_attention(layer) && (!kv || kv->seen() == 0)) {  // no T×T tensor at all
        const fast::BlockedResult r = fast::blocked_attention(a, b.attn, true);
        Cube out = Cube::from_shape({a.shape(0), a.shape(1), r.output.size() / (a.shape(0) * a.shape(1))});
        std::copy(r.output.begin(), r.output.end(), out.begin());
        if (kv) kv->append(split_heads(project(a, b.attn.key), b.attn.key_heads()), split_heads(project(a, b.attn.value), b.attn.key_heads()));
        return out;
    }
    Forward f = project_heads(a, &b.attn, spec);
    if (kv) {  // the new keys and values join the cache; the queries attend to all of it
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

double DecoderCache::bytes(std::size_t bytes_per_value) const {
    double sum = 0.0;
    for (const KvCache& kv : layers) sum += kv.bytes(bytes_per_value);
    return sum;
}

DecoderCache make_cache(const DecoderConfig& config) {
    DecoderCache cache;
    cache.layers.assign(config.layers, KvCache());
    return cache;
}

Cube decoder_forward(const DecoderWeights& w, const std::vector<std::size_t>& ids, DecoderCache* cache, DecoderTap* tap) {
    DecoderTap silent;
    DecoderTap& t = tap ? *tap : silent;
    const DecoderConfig& c = w.config;
    const std::size_t T = ids.size(), C = c.width, p0 = cache ? cache->tokens() : 0;
    check_prompt(c, ids, p0);

    Cube tok = Cube::from_shape({1, T, C}), pos = Cube::from_shape({1, T, C});  // (1,T,C)
    for (std::size_t i = 0; i < T; ++i) {
        std::copy(w.embed.out_row(ids[i]), w.embed.out_row(ids[i]) + C, &tok(0, i, 0));
        xt::view(pos, 0, i, xt::all()) = xt::view(w.positions, p0 + i, xt::all());
    }
    Cube x = tok + pos;  // (1,T,C)
    t.embeddings(tok, pos, x);
    for (std::size_t l = 0; l < c.layers; ++l) {
        const BlockWeights& b = w.blocks[l];
        const Cube a = normalise(x, b.norm_1, c.norm, c.norm_eps);  // (1,T,C)
        t.block(l, BlockPoint::norm_1, a);
        const Cube attn = block_attention(b, l, a, p0, cache ? &cache->layers[l] : nullptr, t);  // (1,T,C)
        t.block(l, BlockPoint::attention, attn);
        x = x + attn;
        t.block(l, BlockPoint::residual_1, x);
        const Cube m = normalise(x, b.norm_2, c.norm, c.norm_eps);  // (1,T,C)
        t.block(l, BlockPoint::norm_2, m);
        const Cube hidden = mlp_hidden(m, c.mlp, b.up);  // (1,T,hidden)
        t.block(l, BlockPoint::mlp_hidden, hidden);
        const Cube mlp = project(hidden, b.down);  // (1,T,C)
        t.block(l, BlockPoint::mlp, mlp);
        x = x + mlp;
        t.block(l, BlockPoint::residual_2, x);
    }
    return normalise(x, w.final_norm, c.norm, c.norm_eps);
}

Mat decoder_logits(const DecoderWeights& w, const Cube& final_x, std::size_t row) {
    return project_row(w.output_head(), &final_x(0, row, 0));  // (1,V)
}

}  // namespace attnwalk
