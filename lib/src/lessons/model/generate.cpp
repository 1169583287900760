// The next token: its candidates, greedy generation through the KV cache (or StreamingLLM's),
// and the check against the whole sequence recomputed.
#include "model_walk.hpp"

#include <functional>
#include <map>

namespace attnwalk::model_walk {

// The next token's candidates from the last logits: their summary, the top k with their
// logits and probabilities (softmax at the temperature), the top-p cut in a note.
void record_candidates(Recorder& rec, const ModelSpec& spec, const Mat& logits, const DecoderConfig& config) {
    const std::size_t V = logits.shape(1);
    const Words words = words_of(config);
    const std::string head = config.tied_head ? words.embed : short_name(config.family->names.head);  // the token embeddings, or the file's own head
    const Summary ls = summary_of(logits);
    rec.add_summary("logits", "The logits of the next token (last position × " + head + "ᵀ)", "logits = " + words.final_norm + "(x)_T·" + head + "ᵀ" + words.logit_scale, {V}, 1,
                    {Axis::feature}, ls, false);
    const std::vector<double> p = token_probabilities(logits.data(), V, spec.temperature);
    const std::vector<std::size_t> order = top_k(logits.data(), V, spec.top_k);
    const std::size_t k = order.size();
    Mat top_logits = Mat::from_shape({1, k}), top_p = Mat::from_shape({1, k});
    for (std::size_t i = 0; i < k; ++i) {
        top_logits(0, i) = logits(0, order[i]);
        top_p(0, i) = static_cast<float>(p[order[i]]);
    }
    const std::vector<std::string> names = token_labels(order, spec.tokenizer);  // the candidates' text names the columns
    rec.add_plain("top_k_ids", "The " + std::to_string(k) + " most likely next tokens", "argsort(p)[:k]",
                  integer_tensor({order.begin(), order.end()}, {k}), {Axis::feature})
        .labels = names;
    rec.add("top_k_logits", "Their logits", "logits[top_k_ids]", top_logits, {Axis::feature}).labels = names;
    Step& ps = rec.add("top_k_probs", "Their probabilities", "p = softmax(logits / " + format_number(spec.temperature) + ")", top_p,
                       {Axis::feature});
    ps.labels = names;
    if (spec.top_p) {
        const Nucleus n = nucleus(p, order, *spec.top_p);
        ps.note = "top-p " + format_number(*spec.top_p) + ": the first " + std::to_string(n.count) + " of these (probability " +
                  format_number(n.mass) + (n.mass < *spec.top_p ? ", more than top-k shows" : "") + ") are kept for sampling.";
    }
}

namespace {

// One generated token's pass: the shown layer's cache and its new row of attention.
class StepTap : public DecoderTap {
public:
    StepTap(Recorder& rec, const ModelSpec& spec, const DecoderConfig& config, std::size_t position, const std::string& token, const DecoderCache& cache)
        : rec_(rec), spec_(spec), formula_("α_t = softmax(q_t·K_cacheᵀ / " + (words_of(config).scale.empty() ? "√d_k" : words_of(config).scale) + ")"), position_(position), token_(token),
          cache_(cache) {}

    // The shown layer's new row of attention is read (its heads); the other layers' is not.
    bool keeps_attention(std::size_t layer) const override { return layer == spec_.layer; }

    void hook(std::size_t l, HookId id, const Hooked& value) override {
        if (l != spec_.layer) return;
        if (id == hooks::latent) latent(l, value.get<LatentForward>());
        else if (id == hooks::heads) heads(l, value.get<Forward>());
    }

private:
    // Latent attention: what its cache keeps is the latent and the rotary key, not every head's keys.
    void latent(std::size_t l, const LatentForward& f) {
        latent_ = true;
        const std::size_t S = f.latent.shape(1), r = f.latent.shape(2), rope = f.k_rope.shape(2);
        Cube kept = Cube::from_shape({1, S, r + rope});
        for (std::size_t s = 0; s < S; ++s) {
            for (std::size_t i = 0; i < r; ++i) kept(0, s, i) = f.latent(0, s, i);
            for (std::size_t i = 0; i < rope; ++i) kept(0, s, r + i) = f.k_rope(0, s, i);
        }
        rec_.add("step" + std::to_string(position_ + 1) + ".keys_cache",
                 "Token " + std::to_string(position_ + 1) + " (\"" + token_ + "\"): layer " + std::to_string(l + 1) + "'s latent cache, one row longer: c_KV (" +
                     std::to_string(r) + ") then k_rope (" + std::to_string(rope) + ")",
                 "cache = concat(cache, [c_KV,t | k_rope,t])", kept, tokens_features)
            .note = "Every head's keys and values are made from these rows again at each step (kv_b_proj).";
    }

    void heads(std::size_t l, const Forward& f) {
        const std::string N = "step" + std::to_string(position_ + 1) + ".", L = std::to_string(l + 1);
        const bool streaming = cache_.layers.at(l).streaming();  // StreamingLLM: the row over the tokens kept, named by them
        const std::size_t first = position_ + 1 - f.kh.shape(2);  // the oldest token kept (0 but on a sliding layer)
        if (!streaming && !latent_) {
            const std::string grown = f.window ? ", the last " + std::to_string(f.window) + " kept (sliding window)" : ", one row longer";
            const bool borrowed = cache_.layers.at(l).length() == 0;  // cross-layer KV sharing: an earlier layer's cache, this one keeps none
            rec_.add(N + "keys_cache", "Token " + std::to_string(position_ + 1) + " (\"" + token_ + "\"): " +
                                           (borrowed ? "the key cache layer " + L + " reads, an earlier layer's (it keeps none of its own)" : "layer " + L + "'s key cache") + grown,
                     "K_cache = concat(K_cache, k_t)", f.kh, head_tokens_features)
                .first_row = first;
        }
        const std::string title = "Its new row of attention in layer " + L + (spec_.head ? ", head " + std::to_string(*spec_.head + 1) : "") +
                                  (streaming ? ", over the tokens the cache kept" : "");
        const Cube rows = xt::view(f.weights, xt::all(), xt::all(), 0, xt::all());
        Step& w = spec_.head ? rec_.add_with_row_sums(N + "weights", title, formula_, Mat(xt::view(rows, xt::all(), *spec_.head)), {Axis::token})
                             : rec_.add_with_row_sums(N + "weights", title, formula_, rows, {Axis::head, Axis::token});
        w.query = position_;
        if (!streaming) {
            w.first_key = first;
            return;
        }
        const std::vector<std::size_t> kept = cache_.layers[l].positions();
        for (std::size_t p : kept) w.labels.push_back(p < rec_.trace().tokens.size() ? rec_.trace().tokens[p] : "#" + std::to_string(p));
        if (!kept.empty() && (kept.front() != 0 || kept.back() + 1 - kept.front() != kept.size()))
            w.note = "The cache keeps " + std::to_string(kept.size()) + " of the " + std::to_string(position_ + 1) +
                     " tokens: the first ones and the most recent. Each key was rotated at its place in the cache, 1 … " + std::to_string(kept.size()) +
                     ", and the query at the last, not at the tokens' own places.";
    }

    Recorder& rec_;
    const ModelSpec& spec_;
    std::string formula_;
    std::size_t position_;
    const std::string& token_;
    const DecoderCache& cache_;
    bool latent_ = false;  // the layer shown is latent attention: its cache was recorded by latent()
};

// Every layer by the one forward with its T×T tensors (never the blocked path): the
// reference the cached generation is checked against.
class FullAttention : public DecoderTap {
public:
    bool keeps_attention(std::size_t) const override { return true; }
};

// Greedy decoding with the KV cache: each new token runs through every layer alone, its
// key and value appended to that layer's cache; the shown layer's new row of attention
// and cache are recorded. At the end the whole sequence runs again without a cache.
// What the cache holds, its arithmetic true per layer kind: a sliding layer keeps only its
// window. "K and V of G·d_h = 16 floats per token and layer: 9 tokens in 2 layers, 4 (the
// window) in 2 → (9·2 + 4·2) × 2 × 16 × 4 bytes = 3328 bytes".
std::string cache_words(const DecoderCache& cache, const DecoderConfig& c, std::size_t tokens) {
    // (tokens kept, G·d_h) → layers (softmax attention's; Gemma 4's full layers are wider than its sliding ones)
    std::map<std::pair<std::size_t, std::size_t>, std::size_t, std::greater<>> layers_keeping;
    std::size_t linear_layers = 0, sharing_layers = 0;
    double linear_floats = 0.0;  // a Gated DeltaNet layer's state and convolution inputs
    const std::size_t width = c.key_heads() * c.head_size();
    for (std::size_t l = 0; l < cache.layers.size(); ++l) {
        if (l < c.layer_specs.size() && c.layer_specs[l].attention == AttentionKind::deltanet && l < cache.linear.size()) {
            ++linear_layers;
            linear_floats = cache.linear[l].bytes(1);
            continue;
        }
        if (l < c.layer_specs.size() && c.layer_specs[l].kv_from) {  // cross-layer KV sharing: it reads an earlier layer's
            ++sharing_layers;
            continue;
        }
        const Hyper& k = cache.layers[l].keys();
        ++layers_keeping[{cache.layers[l].length(), k.dimension() == 4 ? k.shape(1) * k.shape(3) : width}];
    }
    const bool widths = std::any_of(layers_keeping.begin(), layers_keeping.end(), [&](const auto& e) { return e.first.second != layers_keeping.begin()->first.second; });
    std::string groups, sum;
    for (const auto& [key, n] : layers_keeping) {
        const auto [kept, floats] = key;
        groups += (groups.empty() ? "" : ", ") + std::to_string(kept) + (groups.empty() ? (kept == 1 ? " token" : " tokens") : "") +
                  (kept < tokens ? " (the window)" : "") + " in " + std::to_string(n) + (n == 1 ? " layer" : " layers") +
                  (widths ? " of " + std::to_string(floats) : "");
        sum += (sum.empty() ? "" : " + ") + std::to_string(kept) + "·" + std::to_string(n) + (widths ? "·" + std::to_string(floats) : "");
    }
    if (sharing_layers)
        groups += "; the " + std::to_string(sharing_layers) + " layers that read an earlier layer's keys and values (cross-layer KV sharing) keep none";
    const bool one = layers_keeping.size() == 1;
    const std::string total = " = " + format_number(cache.bytes(4)) + " bytes";
    const std::string linear_words =
        linear_layers ? "; each of the " + std::to_string(linear_layers) + " Gated DeltaNet layers keeps its state and the convolution's last inputs instead, " +
                            format_number(linear_floats) + " floats whatever the length: + " + std::to_string(linear_layers) + " × " +
                            format_number(linear_floats) + " × 4 bytes"
                      : "";
    const Hyper& latent = cache.layers.front().keys();
    if (any_layer(c, AttentionKind::latent) && latent.dimension() == 4) {  // MLA: the latent and the rotated rotary key, for every head at once
        const std::size_t r = latent.shape(3), rope = cache.layers.front().values().shape(3);
        // DeepSeek-V3.2: the indexer's key of every token too (d_I)
        const std::size_t index = !cache.index_keys.empty() && cache.index_keys.front().dimension() == 3 ? cache.index_keys.front().shape(2) : 0;
        const std::size_t per = r + rope + index;
        return "The cache keeps the latent c_KV (r = " + std::to_string(r) + ") and k_rope (" + std::to_string(rope) + ")" +
               (index ? ", and the indexer's key (d_I = " + std::to_string(index) + ")" : std::string()) + ", " + std::to_string(per) +
               " floats per token and layer, and makes every head's keys and values from them again: " + groups + " → " + (one ? sum : "(" + sum + ")") +
               " × " + std::to_string(per) + " × 4 bytes" + linear_words + total;
    }
    if (widths)  // layers of different widths: each group's own G·d_k
        return "The cache keeps K and V, G·d_k floats each per token and layer: " + groups + " → (" + sum + ") × 2 × 4 bytes" + linear_words + total;
    return "The cache keeps K and V, G·d_k = " + std::to_string(width) + " floats each per token and layer: " + groups + " → " +
           (one ? sum : "(" + sum + ")") + " × 2 × " + std::to_string(width) + " × 4 bytes" + linear_words + total;
}

// StreamingLLM's cache against the full one, after generating `n` tokens past the prompt.
void record_streaming(Recorder& rec, const ModelSpec& spec, const DecoderCache& cache, std::size_t n, std::size_t prompt, const std::vector<float>& kl,
                      const std::vector<float>& overlap) {
    const auto [start, recent] = *spec.start_recent;
    Trace& trace = rec.trace();
    trace.set_param("cache_start", static_cast<ull>(start));
    trace.set_param("cache_recent", static_cast<ull>(recent));
    const std::vector<std::size_t> kept = cache.layers.front().positions();
    Step& k = rec.add_plain("cache_kept", "The " + std::to_string(kept.size()) + " tokens the cache keeps at the end (at most the first " + std::to_string(start) +
                                              " and the last " + std::to_string(recent) + ")",
                            "places 1 … start and t − recent + 1 … t", integer_tensor({kept.begin(), kept.end()}, {kept.size()}), {Axis::feature});
    k.tensor.positions = true;  // the JSON keeps PyTorch's 0-based positions
    for (std::size_t p : kept) k.labels.push_back(trace.tokens[p]);
    k.note = "StreamingLLM (Xiao et al. 2023): the first tokens stay as attention sinks, the most recent as a window; each key is cached before RoPE "
             "and rotated at its place in the cache, so once tokens are evicted a generated token sees places 1 … " + std::to_string(start + recent) +
             " at most, however long the text (the prompt runs at its own places).";
    if (n == 0) return;
    const std::vector<std::size_t> shape{n};
    Mat distance = Mat::from_shape({1, n});
    std::copy(kl.begin(), kl.end(), distance.begin());
    Step& d = rec.add("cache_kl", "How far the kept tokens move each next token's distribution from the full cache's",
                      "KL(p_full ‖ p_kept) = Σ_v p_full(v)·ln(p_full(v) / p_kept(v))", distance, {Axis::token});
    d.first_key = prompt;
    d.note = "In nats, after each generated token (greedy on the kept cache; the full cache reads the same tokens). 0 while nothing is evicted.";
    Step& o = rec.add_plain("cache_top_k_overlap", "How many of the full cache's " + std::to_string(spec.top_k) + " most likely next tokens the kept cache shares",
                            "|top_k(p_full) ∩ top_k(p_kept)|", integer_tensor(std::vector<unsigned long long>(overlap.begin(), overlap.end()), shape), {Axis::token});
    o.first_key = prompt;
}

}  // namespace

void generate(Recorder& rec, const LoadedModel& m, std::vector<std::size_t> ids, DecoderCache cache, Mat logits, const ModelSpec& spec) {
    Trace& trace = rec.trace();
    const ModelInfo& info = m.info;
    const std::size_t prompt = ids.size();
    std::vector<std::size_t> generated;
    bool ended = false;
    // StreamingLLM: the same tokens through a cache that keeps everything, for the distance
    const bool streaming = spec.start_recent.has_value();
    DecoderCache full_cache = make_cache(m.weights.config);
    if (streaming) decoder_forward(m.weights, ids, &full_cache, nullptr);
    std::vector<float> kl, overlap;
    for (std::size_t g = 0; g < spec.generate && !ended; ++g) {
        const std::size_t next = argmax(logits.data(), logits.size()), pos = ids.size();
        if (pos >= info.context) break;  // the context is full
        ended = std::find(info.end_ids.begin(), info.end_ids.end(), next) != info.end_ids.end();  // generation_config.json's eos
        ids.push_back(next);
        generated.push_back(next);
        trace.tokens.push_back(token_labels({next}, spec.tokenizer).front());
        StepTap tap(rec, spec, m.weights.config, pos, trace.tokens[pos], cache);
        const Cube xf = decoder_forward(m.weights, {next}, &cache, &tap);
        logits = decoder_logits(m.weights, xf, 0);
        if (streaming) {  // the next token's distribution with every token kept, against the streamed one
            const Mat full = decoder_logits(m.weights, decoder_forward(m.weights, {next}, &full_cache, nullptr), 0);
            const std::size_t V = full.size();
            const std::vector<double> p = token_probabilities(full.data(), V, 1.0), q = token_probabilities(logits.data(), V, 1.0);
            double d = 0.0;
            for (std::size_t v = 0; v < V; ++v)
                if (p[v] > 0.0) d += p[v] * (std::log(p[v]) - std::log(q[v]));
            kl.push_back(static_cast<float>(std::max(d, 0.0)));
            const std::vector<std::size_t> a = top_k(full.data(), V, spec.top_k), b = top_k(logits.data(), V, spec.top_k);
            std::size_t shared = 0;
            for (std::size_t v : a) shared += std::find(b.begin(), b.end(), v) != b.end();
            overlap.push_back(static_cast<float>(shared));
        }
    }
    Step& gs = rec.add_plain("generated_ids", "The generated tokens (greedy: the most likely each time)", "argmax(logits)",
                             integer_tensor({generated.begin(), generated.end()}, {generated.size()}), {Axis::token});
    gs.first_key = prompt;
    if (ended) gs.note = "Stopped at the end-of-text token " + std::to_string(generated.back()) + " (generation_config.json's eos_token_id).";
    else if (generated.size() < spec.generate) gs.note = "The context of " + std::to_string(info.context) + " tokens is full.";
    trace.set_param("generated", static_cast<ull>(generated.size()));
    if (streaming) {
        record_streaming(rec, spec, cache, generated.size(), prompt, kl, overlap);
        return;
    }
    FullAttention full_attention;
    const Cube full_x = decoder_forward(m.weights, ids, nullptr, &full_attention);
    const Mat full = decoder_logits(m.weights, full_x, ids.size() - 1);
    float diff = 0.0f;
    for (std::size_t v = 0; v < full.size(); ++v) diff = std::max(diff, std::fabs(full(0, v) - logits(0, v)));
    rec.add_plain("max_difference", "The last logits with the cache against the whole sequence recomputed", "max |logits_cached − logits_full|",
                  scalar_trace(diff), {})
        .note = cache_words(cache, m.weights.config, ids.size()) + "; " +
                (diff == 0.0f ? "equal bit for bit." : "equal up to float32 rounding (the products are summed in another order).");
}

}  // namespace attnwalk::model_walk
