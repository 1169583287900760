// The decoder's forward, the block written once: the norms and the residual stream here,
// each kind of block's computation in its block's forward (blocks/). See model/decoder.hpp.
#include "attnwalk/model/decoder.hpp"

#include <algorithm>
#include <cmath>

#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/safetensors.hpp"

namespace attnwalk {

const ModelInfo& info_of(const LoadedModel& model) { return model.info; }

void check_prompt(const DecoderConfig& c, const std::vector<std::size_t>& ids, std::size_t position0) {
    const std::size_t T = ids.size();
    if (T == 0) throw UsageError("no tokens to run");
    if (position0 + T > c.context)
        throw UsageError(std::to_string(position0 + T) + " tokens: the model's context is " + std::to_string(c.context));
    for (std::size_t id : ids)
        if (id >= c.vocab)
            throw UsageError("token id " + std::to_string(id) + " is out of range: the vocabulary has " + std::to_string(c.vocab));
    if (c.per_layer_input)  // the per-layer inputs' table may be shorter than the vocabulary
        for (std::size_t id : ids)
            if (id >= c.per_layer_vocab)
                throw UsageError("token id " + std::to_string(id) + " has no per-layer input: the per-layer inputs' table has " +
                                 std::to_string(c.per_layer_vocab) + " rows");
}

void check_prompt(const LoadedModel& model, const std::vector<std::size_t>& ids) { check_prompt(model.weights.config, ids, 0); }

std::size_t hold_weights_in_memory(const LoadedModel& model) {
    std::size_t moved = 0;
    for (const auto& file : model.files) moved += file->hold_in_memory();
    return moved;
}

double DecoderCache::bytes(std::size_t bytes_per_value) const {
    double sum = 0.0;
    for (const KvCache& kv : layers) sum += kv.bytes(bytes_per_value);
    for (const DeltaNetCache& d : linear) sum += d.bytes(bytes_per_value);
    for (const Cube& k : index_keys) sum += static_cast<double>(k.size() * bytes_per_value);
    return sum;
}

DecoderCache make_cache(const DecoderConfig& config) {
    DecoderCache cache;
    for (std::size_t l = 0; l < config.layers; ++l) {  // a sliding layer keeps its window, the others every token
        const std::size_t window = l < config.layer_specs.size() ? config.layer_specs[l].window.value_or(0) : 0;
        cache.layers.emplace_back(window);
    }
    cache.linear.resize(config.layers);
    cache.index_keys.resize(config.layers);
    return cache;
}

DecoderCache make_start_recent_cache(const DecoderConfig& config, std::size_t start, std::size_t recent) {
    if (recent == 0) throw UsageError("a start-and-recent cache keeps at least the newest token: recent must be at least 1");
    for (std::size_t l = 0; l < config.layers && l < config.layer_specs.size(); ++l) {
        if (config.layer_specs[l].attention == AttentionKind::deltanet)
            throw UsageError("layer " + std::to_string(l + 1) + " is a Gated DeltaNet layer, which keeps a state of fixed size rather than tokens: a "
                             "start-and-recent cache is for models whose every layer is softmax attention");
        if (config.layer_specs[l].kv_from || config.layer_specs[l].kv_shared)
            throw UsageError("layer " + std::to_string(l + 1) + " shares its keys and values with another layer: a start-and-recent cache is for models "
                             "whose every layer keeps its own");
        if (config.layer_specs[l].window)
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
    t.hook(no_layer, hooks::embed, tok);
    Cube x = tok;
    if (c.embed_scale) x = tok * *c.embed_scale;  // in float32, as the reference multiplies
    if (c.positions == PositionKind::learned) {
        Cube pos = Cube::from_shape({1, T, C});
        for (std::size_t i = 0; i < T; ++i) xt::view(pos, 0, i, xt::all()) = xt::view(w.positions, p0 + i, xt::all());
        t.hook(no_layer, hooks::pos_embed, pos);
        x = x + pos;  // (1,T,C)
    }
    t.hook(no_layer, hooks::embeddings, x);
    const Cube per_layer = w.per_layer ? w.per_layer->inputs(ids, x, t) : Cube();  // (1,T,L·P): every layer's input (Gemma 4 E2B, E4B)
    SharedKv shared;  // the keys and values layers hand to later ones (cross-layer KV sharing)
    shared.keys.resize(c.layers);
    shared.values.resize(c.layers);
    for (std::size_t l = 0; l < c.layers; ++l) {
        const BlockWeights& b = w.blocks[l];
        t.patch(l, hooks::resid_pre, x);
        const Cube a = b.norm_1 ? normalise(x, *b.norm_1, c.norm, c.norm_eps) : x;  // (1,T,C); post-norm: the residual stream itself
        if (b.norm_1) t.hook(l, hooks::norm_1, a);
        const std::vector<std::size_t>* off = ablation && l < ablation->size() && !(*ablation)[l].empty() ? &(*ablation)[l] : nullptr;
        const LayerCall call{c, l, p0, cache, t, off, &shared};
        Cube attn = b.attention->forward(a, call);  // (1,T,C), by the layer's kind, on its own part of the cache
        t.patch(l, hooks::attention, attn);
        t.hook(l, hooks::attention, attn);
        if (b.attention_norm) {
            attn = normalise(attn, *b.attention_norm, c.norm, c.norm_eps);
            t.hook(l, hooks::attention_norm, attn);
        }
        x += attn;  // a parallel block: (x + attn) + mlp, as the reference adds them
        t.hook(l, hooks::residual_1, x);
        const Cube m = c.parallel ? a : b.norm_2 ? normalise(x, *b.norm_2, c.norm, c.norm_eps) : x;  // (1,T,C); parallel: what the attention read
        if (b.norm_2) t.hook(l, hooks::norm_2, m);
        Cube mlp = b.feed_forward->forward(m, call);  // (1,T,C): the MLP or the experts
        t.patch(l, hooks::mlp, mlp);
        t.hook(l, hooks::mlp, mlp);
        if (b.mlp_norm) {
            mlp = normalise(mlp, *b.mlp_norm, c.norm, c.norm_eps);
            t.hook(l, hooks::mlp_norm, mlp);
        }
        x += mlp;
        if (w.per_layer) x = w.per_layer->forward(x, per_layer, call);  // x + the layer's per-layer input, mixed
        if (b.layer_scalar) x *= *b.layer_scalar;  // Gemma 4: the layer's output × its scalar
        t.hook(l, hooks::residual_2, x);
    }
    return normalise(x, w.final_norm, c.norm, c.norm_eps);
}

namespace {

// × the logit scale (Cohere), or soft-capped: tanh(z / cap)·cap, in float32 (Gemma 4)
void scale_logits(const DecoderConfig& c, float* logits, std::size_t n) {
    if (c.logit_scale)
        for (std::size_t i = 0; i < n; ++i) logits[i] *= *c.logit_scale;
    if (c.logit_softcap)
        for (std::size_t i = 0; i < n; ++i) logits[i] = std::tanh(logits[i] / *c.logit_softcap) * *c.logit_softcap;
}

}  // namespace

Mat decoder_logits(const DecoderWeights& w, const Cube& final_x, std::size_t row) {
    Mat logits = project_row(w.output_head(), &final_x(0, row, 0));  // (1,V)
    scale_logits(w.config, logits.data(), logits.size());
    return logits;
}

Cube decoder_all_logits(const DecoderWeights& w, const Cube& final_x) {
    Cube logits = project(final_x, w.output_head());  // (1,T,V)
    scale_logits(w.config, logits.data(), logits.size());
    return logits;
}

}  // namespace attnwalk
