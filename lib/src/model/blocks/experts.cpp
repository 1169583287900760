// A mixture of experts in place of the MLP: the router (gpt-oss's softmax over the top k,
// DeepSeek-V3's sigmoid within the best groups, Qwen3-Next's softmax over every expert), the
// experts (stacked float rows or MXFP4 blocks, or each expert its own gate/up/down), a shared
// expert beside them. Reads how many experts, how many a token chooses, which layers have
// them (the first dense ones, every n-th, those listed) and each layer's tensors; the forward
// is ops/moe's.
#include <cmath>

#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/model/blocks/experts.hpp"
#include "../kinds.hpp"

namespace attnwalk::model_detail {

using json_input::Value;

namespace {

class ExpertsReader : public KindReader {
public:
    ExpertsReader(ConfigFile& cfg, const FamilySpec& f, const DecoderConfig& c, MoeWeights settings, std::size_t experts, std::size_t hidden,
                  std::size_t first_dense, std::size_t shared_width)
        : cfg_(cfg), f_(f), c_(c), settings_(std::move(settings)), experts_(experts), hidden_(hidden), first_dense_(first_dense), shared_width_(shared_width) {}

    void read(const Reader& r, const std::string& p, std::size_t l, BlockWeights& b) const override {
        const ExpertsPart& n = *f_.experts;
        const MlpPart& dense = f_.dense;
        const std::size_t C = c_.width, E = experts_, I = hidden_;
        MoeWeights moe = settings_;
        const std::string ex = p + n.experts + ".";
        if (!r.find(p + n.router + ".weight") && r.find(p + dense.gate + ".weight") && !n.first_dense.empty())
            throw InputError(cfg_.file(), cfg_.at(n.first_dense), "layer " + std::to_string(l) + " of the checkpoint is a dense MLP (" + dense.gate +
                                                                     "), not experts: expected more than " + std::to_string(first_dense_) + " dense layers");
        moe.router = r.linear(p + n.router + ".weight", C, E, true);
        moe.experts.resize(E);
        if (n.kind == ExpertKind::swiglu) {  // each expert its own gate, up and down, named as the dense MLP's
            if (n.routing == RouterKind::sigmoid_grouped) {
                moe.correction_bias = r.vec(p + n.router + "." + n.router_bias, E);
                // it only chooses experts, so nothing after it would go non-finite: check it here
                for (std::size_t e = 0; e < E; ++e)
                    if (!std::isfinite(moe.correction_bias(e)))
                        throw InputError(r.file_of(p + n.router + "." + n.router_bias)->file(), "$[\"" + r.prefix() + p + n.router + "." + n.router_bias + "\"]",
                                         "holds " + std::string(std::isnan(moe.correction_bias(e)) ? "NaN" : "inf") + " (element " + std::to_string(e) +
                                             "): the choice bias of the experts is finite numbers");
            }
            for (std::size_t e = 0; e < E; ++e) {
                const std::string one = ex + indexed(n.expert, e, "{E}");
                moe.experts[e].gate = r.linear(one + last_part(dense.gate) + ".weight", C, I, true);
                moe.experts[e].up = r.linear(one + last_part(dense.up) + ".weight", C, I, true);
                moe.experts[e].down.dense = r.linear(one + last_part(dense.down) + ".weight", I, C, true);
            }
            if (shared_width_) {
                const std::string sh = p + n.shared_experts + ".";
                moe.shared = SharedExpert{r.linear(sh + last_part(dense.gate) + ".weight", C, shared_width_, true),
                                          r.linear(sh + last_part(dense.up) + ".weight", C, shared_width_, true),
                                          r.linear(sh + last_part(dense.down) + ".weight", shared_width_, C, true), std::nullopt};
                if (!n.shared_expert_gate.empty()) moe.shared->scale = r.linear(p + n.shared_expert_gate + ".weight", C, 1, true);
            }
        } else {
            moe.router.b = r.vec(p + n.router + "." + n.router_bias, E);
            // each projection where it lies: MXFP4 blocks (the released checkpoints) or a stacked float tensor
            if (r.find(ex + "gate_up_proj_blocks") || r.find(ex + "gate_up_proj_scales")) {
                const auto rows = r.mxfp4(ex + "gate_up_proj", E, 2 * I, C);
                for (std::size_t e = 0; e < E; ++e) moe.experts[e].gate_up.mxfp4 = rows[e];
            } else {
                const auto layers = r.stacked_linears(ex + "gate_up_proj", E, C, 2 * I);
                for (std::size_t e = 0; e < E; ++e) moe.experts[e].gate_up.dense = layers[e];
            }
            if (r.find(ex + "down_proj_blocks") || r.find(ex + "down_proj_scales")) {
                const auto rows = r.mxfp4(ex + "down_proj", E, C, I);
                for (std::size_t e = 0; e < E; ++e) moe.experts[e].down.mxfp4 = rows[e];
            } else {
                const auto layers = r.stacked_linears(ex + "down_proj", E, I, C);
                for (std::size_t e = 0; e < E; ++e) moe.experts[e].down.dense = layers[e];
            }
            const Mat gate_up_bias = r.mat(ex + "gate_up_proj_bias", E, 2 * I), down_bias = r.mat(ex + "down_proj_bias", E, C);
            for (std::size_t e = 0; e < E; ++e) {
                moe.experts[e].gate_up_bias = xt::view(gate_up_bias, e, xt::all());
                moe.experts[e].down_bias = xt::view(down_bias, e, xt::all());
            }
        }
        auto block = std::make_shared<ExpertsBlock>();
        block->w = std::move(moe);
        b.feed_forward = std::move(block);
    }

private:
    ConfigFile& cfg_;
    const FamilySpec& f_;
    const DecoderConfig& c_;
    MoeWeights settings_;  // what every layer's mixture shares: its routing and its experts' kind
    std::size_t experts_, hidden_, first_dense_, shared_width_;
};

}  // namespace

std::unique_ptr<KindReader> experts_reader(ConfigFile& cfg, const FamilySpec& f, DecoderConfig& c, std::size_t hidden) {
    if (!f.experts) return nullptr;
    const ExpertsPart& n = *f.experts;
    const std::size_t experts = cfg.count(n.count, std::nullopt, 0);  // 0: every layer a dense MLP (Qwen3-Next allows it)
    if (!experts) return nullptr;
    MoeWeights s;
    s.routing = n.routing;
    s.kind = n.kind;
    s.normalise = n.normalise_default;
    s.top_k = cfg.count(n.per_token, std::nullopt, 1);
    if (s.top_k > experts)
        throw InputError(cfg.file(), cfg.at(n.per_token),
                         "each token chooses at most the " + std::to_string(experts) + " experts there are, not " + std::to_string(s.top_k));
    const std::size_t expert_hidden = cfg.count(n.hidden, hidden);
    std::size_t first_dense = 0, shared_width = 0, sparse_step = 1;
    std::vector<bool> dense_only(c.layers, false);
    if (!n.first_dense.empty()) first_dense = cfg.count(n.first_dense, 3, 0);  // DeepseekV3Config's default
    if (!n.shared_count.empty()) shared_width = cfg.count(n.shared_count, 0, 0) * expert_hidden;
    if (!n.shared_width.empty()) shared_width = cfg.count(n.shared_width, 0, 0);
    if (!n.sparse_step.empty()) sparse_step = cfg.count(n.sparse_step, 1);
    if (!n.dense_layers.empty())
        if (const Value* list = cfg.get(n.dense_layers)) {
            const std::string at = cfg.at(n.dense_layers);
            if (list->type != Value::Type::array) throw InputError(cfg.file(), at, "expected a list of layer indices");
            for (std::size_t i = 0; i < list->array.size(); ++i) {
                const Value& v = list->array[i];
                if (v.type != Value::Type::number || v.number < 0 || v.number != std::floor(v.number) || v.number >= static_cast<double>(c.layers))
                    throw InputError(cfg.file(), at + "[" + std::to_string(i) + "]", "expected a layer index below " + std::to_string(c.layers) + ", got " + value_text(v, true));
                dense_only[static_cast<std::size_t>(v.number)] = true;
            }
        }
    if (n.routing == RouterKind::softmax_all) s.normalise = cfg.flag(n.normalise, s.normalise);  // the family's default when absent
    if (n.kind == ExpertKind::clamped_swiglu) {
        const double limit = cfg.number(n.swiglu_limit, s.limit);  // the clamp when config.json gives none (ops/moe.hpp)
        s.limit = static_cast<float>(cfg.require(limit, limit > 0.0, cfg.at(n.swiglu_limit), "a number above 0 (the SwiGLU's clamp)"));
    }
    if (n.routing == RouterKind::sigmoid_grouped) {  // DeepseekV3TopkRouter's fields, with its defaults
        s.groups = cfg.count(n.groups, 8);
        if (experts % s.groups != 0)
            throw InputError(cfg.file(), cfg.at(n.groups), std::to_string(s.groups) + " groups do not divide " + std::to_string(experts) + " experts");
        if (experts / s.groups < 2)
            throw InputError(cfg.file(), cfg.at(n.groups), "each group needs at least 2 experts (a group is scored by its two best), not " +
                                                          std::to_string(experts) + " experts in " + std::to_string(s.groups) + " groups");
        s.top_groups = cfg.count(n.top_groups, 4);
        if (s.top_groups > s.groups)
            throw InputError(cfg.file(), cfg.at(n.top_groups), "at most the " + std::to_string(s.groups) + " groups there are, not " +
                                                             std::to_string(s.top_groups));
        if (s.top_k > s.top_groups * (experts / s.groups))
            throw InputError(cfg.file(), cfg.at(n.per_token),
                             "each token chooses its experts from the " + std::to_string(s.top_groups * (experts / s.groups)) +
                                 " in its best groups (" + n.top_groups + " × experts per group), not " + std::to_string(s.top_k));
        s.normalise = cfg.flag(n.normalise, s.normalise);  // the family's default when absent
        const double scale = cfg.number(n.routed_scale, 2.5);
        s.routed_scale = static_cast<float>(cfg.require(scale, scale > 0.0 && std::isfinite(static_cast<float>(scale)), cfg.at(n.routed_scale),
                                                        "a number above 0 that float32 holds (the experts' weights are multiplied by it)"));
    }
    for (std::size_t l = 0; l < c.layers; ++l)
        if (l >= first_dense && !dense_only[l] && (l + 1) % sparse_step == 0) c.layer_specs[l].feed_forward = FeedForwardKind::experts;
    return std::make_unique<ExpertsReader>(cfg, f, c, std::move(s), experts, expert_hidden, first_dense, shared_width);
}

}  // namespace attnwalk::model_detail

namespace attnwalk {

Cube ExpertsBlock::forward(const Cube& m, const LayerCall& call) const {
    MoeOutput routed = moe_forward(m, w);  // each token through the few its router chose
    call.tap.hook(call.layer, hooks::experts, routed);
    return std::move(routed.output);
}

}  // namespace attnwalk
