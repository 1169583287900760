// Per-layer inputs (Gemma 4 E2B and E4B): config.json's sizes (hidden_size_per_layer_input,
// vocab_size_per_layer_input, named by the family's PerLayerPart), the tables and each layer's
// gate, projection and norm, and the forward, as modeling_gemma4.py computes it in float32.
#include <cmath>

#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/model/blocks/per_layer.hpp"
#include "attnwalk/ops/activations.hpp"
#include "../kinds.hpp"

namespace attnwalk::model_detail {

namespace {

class PerLayerReader : public ModelPartReader {
public:
    PerLayerReader(const FamilySpec& f, const DecoderConfig& c) : f_(f), c_(c) {}
    void read(const Reader& r, DecoderWeights& w) const override {
        const PerLayerPart& n = *f_.per_layer;
        const std::size_t C = c_.width, P = c_.per_layer_input, LP = c_.layers * P;
        auto block = std::make_shared<PerLayerEmbeddings>();
        block->size = P;
        block->norm = c_.norm;
        block->eps = c_.norm_eps;
        block->embed = r.linear(n.embed, LP, c_.per_layer_vocab, true);  // [vocab_pl, L·P]
        block->model_projection = r.linear(n.model_projection, C, LP, true);
        block->projection_norm = read_norm(r, f_, n.projection_norm, P);
        for (std::size_t l = 0; l < c_.layers; ++l) {
            const std::string p = indexed(f_.names.layer, l);
            block->layers.push_back({r.linear(p + n.gate, C, P, true), r.linear(p + n.projection, P, C, true), read_norm(r, f_, p + n.post_norm, C)});
        }
        w.per_layer = std::move(block);
    }

private:
    const FamilySpec& f_;
    const DecoderConfig& c_;
};

}  // namespace

std::unique_ptr<ModelPartReader> per_layer_reader(ConfigFile& cfg, const FamilySpec& f, DecoderConfig& c) {
    if (!f.per_layer) return nullptr;
    const PerLayerPart& n = *f.per_layer;
    c.per_layer_input = cfg.count(n.size, n.size_default, 0);  // Gemma4TextConfig's default 256: absent is not none
    if (c.per_layer_input == 0) return nullptr;
    c.per_layer_vocab = cfg.count(n.vocab, n.vocab_default);
    return std::make_unique<PerLayerReader>(f, c);
}

}  // namespace attnwalk::model_detail

namespace attnwalk {

Cube PerLayerEmbeddings::inputs(const std::vector<std::size_t>& ids, const Cube& x, DecoderTap& tap) const {
    const std::size_t T = ids.size(), C = x.shape(2), P = size, L = layers.size();
    // get_per_layer_inputs: the rows of embed_tokens_per_layer × torch.tensor(P ** 0.5), a float32 number
    Cube e = Cube::from_shape({1, T, L * P});
    for (std::size_t i = 0; i < T; ++i) embed.copy_out_row(ids[i], &e(0, i, 0));
    e *= static_cast<float>(std::sqrt(static_cast<double>(P)));
    tap.hook(no_layer, hooks::per_layer_embed, e);
    // project_per_layer_inputs: x·W_modelᵀ × hidden_size ** -0.5, as L rows of P each through
    // per_layer_projection_norm
    Cube p = project(x, model_projection);  // (1,T,L·P)
    p *= static_cast<float>(std::pow(static_cast<double>(C), -0.5));
    p.reshape({1, T * L, P});
    p = normalise(p, projection_norm, norm, eps);
    p.reshape({1, T, L * P});
    tap.hook(no_layer, hooks::per_layer_projection, p);
    // (projection + embeddings) × 2 ** -0.5
    p += e;
    p *= static_cast<float>(std::pow(2.0, -0.5));
    tap.hook(no_layer, hooks::per_layer_inputs, p);
    return p;
}

Cube PerLayerEmbeddings::forward(const Cube& x, const Cube& inputs, const LayerCall& call) const {
    const std::size_t P = size, l = call.layer;
    const Layer& w = layers.at(l);
    Cube in = xt::view(inputs, xt::all(), xt::all(), xt::range(l * P, (l + 1) * P));  // per_layer_inputs[:, :, l, :]
    call.tap.hook(l, hooks::per_layer_input, in);
    Cube g = project(x, w.gate);  // (1,T,P)
    g = call.config.mlp == MlpKind::swiglu ? silu(std::move(g)) : gelu_tanh(std::move(g));  // ACT2FN[hidden_activation], the MLP's
    g *= in;
    call.tap.hook(l, hooks::per_layer_gated, g);
    Cube out = normalise(project(g, w.projection), w.post_norm, norm, eps);  // (1,T,C)
    call.tap.hook(l, hooks::per_layer_output, out);
    return x + out;
}

}  // namespace attnwalk
