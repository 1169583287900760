// Gated DeltaNet (Qwen3-Next's and Qwen3.5's linear_attention layers): a state of fixed size
// written by the delta rule, a short causal convolution, a decay and a write strength per
// head, a gated RMSNorm. Reads Qwen3NextConfig's heads and convolution taps and each layer's
// projections (two fused ones, or Qwen3.5's four); the forward is ops/gated_deltanet's.
#include <algorithm>

#include "attnwalk/errors.hpp"
#include "attnwalk/model/blocks/deltanet.hpp"
#include "../kinds.hpp"

namespace attnwalk::model_detail {

namespace {

class DeltaNetReader : public KindReader {
public:
    DeltaNetReader(const FamilySpec& f, const DecoderConfig& c, std::size_t k_heads, std::size_t v_heads, std::size_t d_k, std::size_t d_v,
                   std::size_t kernel)
        : f_(f), c_(c), k_heads_(k_heads), v_heads_(v_heads), d_k_(d_k), d_v_(d_v), kernel_(kernel) {}

    // Qwen3NextGatedDeltaNet's projections, convolution, decay and gated norm
    void read(const Reader& r, const std::string& p, std::size_t, BlockWeights& b) const override {
        const std::size_t C = c_.width;
        const std::string g = p + f_.deltanet->module + ".";
        GatedDeltaNetWeights lw;
        lw.k_heads = k_heads_;
        lw.v_heads = v_heads_;
        lw.d_k = d_k_;
        lw.d_v = d_v_;
        if (r.find(g + "in_proj_qkvz.weight") || !r.find(g + "in_proj_qkv.weight")) {  // Qwen3-Next: two fused projections
            lw.in_qkvz = r.linear(g + "in_proj_qkvz.weight", C, 2 * lw.key_dim() + 2 * lw.value_dim(), true);
            lw.in_ba = r.linear(g + "in_proj_ba.weight", C, 2 * lw.v_heads, true);
        } else {  // Qwen3.5: four, in the order they are used
            lw.in_qkv = r.linear(g + "in_proj_qkv.weight", C, 2 * lw.key_dim() + lw.value_dim(), true);
            lw.in_z = r.linear(g + "in_proj_z.weight", C, lw.value_dim(), true);
            lw.in_b = r.linear(g + "in_proj_b.weight", C, lw.v_heads, true);
            lw.in_a = r.linear(g + "in_proj_a.weight", C, lw.v_heads, true);
        }
        lw.conv = r.mat(g + "conv1d.weight", {lw.conv_dim(), 1, kernel_}, lw.conv_dim(), kernel_);
        lw.a_log = r.vec(g + "A_log", lw.v_heads);
        lw.dt_bias = r.vec(g + "dt_bias", lw.v_heads);
        lw.norm = r.vec(g + "norm.weight", lw.d_v);  // multiplied as it is, not (1 + w)
        lw.out_proj = r.linear(g + "out_proj.weight", lw.value_dim(), C, true);
        lw.eps = c_.norm_eps;
        auto block = std::make_shared<DeltaNetBlock>();
        block->w = std::move(lw);
        b.attention = std::move(block);
    }

private:
    const FamilySpec& f_;
    const DecoderConfig& c_;
    std::size_t k_heads_, v_heads_, d_k_, d_v_, kernel_;
};

}  // namespace

// Without layer_types, Qwen3NextConfig's default: every full_attention_interval-th layer full, the others linear.
std::vector<bool> deltanet_layers(ConfigFile& cfg, const FamilySpec& f, std::size_t layers) {
    std::vector<bool> linear(layers, false);
    const std::size_t interval = cfg.count(f.deltanet->interval, 4);
    for (std::size_t l = 0; l < layers; ++l) linear[l] = (l + 1) % interval != 0;
    return linear;
}

// Its heads and the convolution's taps, as the family names them (Qwen3NextConfig's).
std::unique_ptr<KindReader> deltanet_reader(ConfigFile& cfg, const FamilySpec& f, const DecoderConfig& c) {
    if (std::none_of(c.layer_specs.begin(), c.layer_specs.end(), [](const LayerSpec& ls) { return ls.attention == AttentionKind::deltanet; }))
        return nullptr;
    const DeltaNetPart& n = *f.deltanet;
    const std::size_t k_heads = cfg.count(n.key_heads);
    const std::size_t v_heads = cfg.count(n.value_heads);
    if (v_heads % k_heads != 0)
        throw InputError(cfg.file(), cfg.at(n.value_heads), std::to_string(k_heads) + " key heads do not divide " + std::to_string(v_heads) + " value heads");
    const std::size_t d_k = cfg.count(n.key_dim);
    const std::size_t d_v = cfg.count(n.value_dim);
    const std::size_t kernel = cfg.count(n.kernel, 4);
    return std::make_unique<DeltaNetReader>(f, c, k_heads, v_heads, d_k, d_v, kernel);
}

}  // namespace attnwalk::model_detail

namespace attnwalk {

// A state instead of a cache of tokens: the layer's DeltaNetCache, its KvCache left empty.
Cube DeltaNetBlock::forward(const Cube& a, const LayerCall& call) const {
    const std::size_t layer = call.layer;
    DeltaNetCache* cache = call.cache && layer < call.cache->linear.size() ? &call.cache->linear[layer] : nullptr;
    GatedDeltaNetForward g = gated_deltanet_forward(a, w, cache, call.tap.keeps_attention(layer));
    call.tap.hook(layer, hooks::deltanet, g);
    return std::move(g.output);
}

}  // namespace attnwalk
