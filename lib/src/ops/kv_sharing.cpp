#include "attnwalk/ops/kv_sharing.hpp"

#include <string>

#include "attnwalk/errors.hpp"

namespace attnwalk {

namespace {

// A causal layer whose keys and values come from elsewhere (`from`'s k, v, kh, vh): only its
// queries are projected.
Forward attend_with(const Cube& x, const AttentionWeights& w, const Forward& from) {
    Forward f;
    f.heads = w.heads;
    f.kv_heads = from.kv_heads;
    f.d_h = w.head_size();
    f.q = project(x, w.query);             // (B,T,H·d_h)
    f.qh = split_heads(f.q, w.heads);      // (B,H,T,d_h)
    f.k = from.k;                          // (B,T,G·d_h)
    f.v = from.v;
    f.kh = from.kh;                        // (B,G,T,d_h)
    f.vh = from.vh;
    ForwardSpec causal;
    causal.causal = true;
    attend(f, &w, causal);
    return f;
}

void check_stack(const Cube& x, const LayerStack& layers) {
    if (layers.empty()) throw UsageError("a stack needs at least one layer");
    std::size_t d = x.shape(2);
    for (std::size_t l = 0; l < layers.size(); ++l) {
        const AttentionWeights& w = *layers[l];
        if (!w.out_proj || w.d_in() != d)
            throw UsageError("layer " + std::to_string(l + 1) + " must read " + std::to_string(d) + " features and have out_proj");
        if (l && (w.heads != layers[0]->heads || w.head_size() != layers[0]->head_size()))
            throw UsageError("every layer of a KV-sharing stack needs the same heads and head size");
        d = w.out_proj->out();
    }
}

}  // namespace

std::vector<std::size_t> kv_sources(std::size_t layers, std::size_t producing) {
    if (producing < 1 || producing > layers)
        throw UsageError("the KV-producing layers must be between 1 and the " + std::to_string(layers) + " layers, not " +
                         std::to_string(producing));
    std::vector<std::size_t> source(layers);
    for (std::size_t l = 0; l < layers; ++l) source[l] = l < producing ? l : producing - 1;
    return source;
}

KvSharingForward kv_sharing_forward(const Cube& x, const LayerStack& layers, std::size_t producing) {
    check_stack(x, layers);
    KvSharingForward s;
    s.source = kv_sources(layers.size(), producing);
    s.caches.resize(producing);
    ForwardSpec causal;
    causal.causal = true;
    Cube h = x;
    for (std::size_t l = 0; l < layers.size(); ++l) {
        s.inputs.push_back(h);
        if (s.source[l] == l) {  // a producer: its own keys and values, into its cache
            s.layers.push_back(attention_forward(h, layers[l].get(), causal));
            s.caches[l].append(s.layers[l].kh, s.layers[l].vh);
        } else {  // a consumer: the producer's, as its cache holds them
            Forward from;
            const Forward& src = s.layers[s.source[l]];
            from.kv_heads = src.kv_heads;
            from.k = src.k;
            from.v = src.v;
            from.kh = s.caches[s.source[l]].keys();
            from.vh = s.caches[s.source[l]].values();
            s.layers.push_back(attend_with(h, *layers[l], from));
        }
        h = s.layers[l].output;
    }
    s.output = h;
    return s;
}

Cube kv_handed_forward(const Cube& x, const LayerStack& layers, const std::vector<std::size_t>& source) {
    check_stack(x, layers);
    ForwardSpec causal;
    causal.causal = true;
    std::vector<Cube> inputs;
    Cube h = x;
    for (std::size_t l = 0; l < layers.size(); ++l) {
        inputs.push_back(h);
        const std::size_t p = source.at(l);
        if (p > l) throw UsageError("layer " + std::to_string(l + 1) + " cannot read the keys of a later layer");
        if (p == l) {
            h = attention_forward(h, layers[l].get(), causal).output;
        } else {  // shared_kv = (K_p, V_p), made again from layer p's input
            const Forward kv = project_heads(inputs.at(p), layers[p].get(), causal);
            h = attend_with(h, *layers[l], kv).output;
        }
    }
    return h;
}

}  // namespace attnwalk
