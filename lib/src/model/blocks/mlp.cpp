// The dense MLP: down(act(up(x))), or gated, down(act(gate(x)) ⊙ up(x)), of `hidden`
// features. Checks the activation config.json names against the family's; the forward is
// ops/activations' mlp_hidden and the down projection.
#include <algorithm>

#include "attnwalk/errors.hpp"
#include "attnwalk/model/blocks/mlp.hpp"
#include "attnwalk/ops/activations.hpp"
#include "../kinds.hpp"

namespace attnwalk::model_detail {

namespace {

class MlpReader : public KindReader {
public:
    MlpReader(const FamilySpec& f, const DecoderConfig& c, std::size_t hidden, bool double_wide)
        : f_(f), c_(c), hidden_(hidden), double_wide_(double_wide) {}
    void read(const Reader& r, const std::string& p, std::size_t layer, BlockWeights& b) const override {
        const MlpPart& n = f_.dense;
        const std::size_t C = c_.width, hidden = double_wide_ && c_.layer_specs.at(layer).kv_from ? 2 * hidden_ : hidden_;
        auto block = std::make_shared<MlpBlock>();
        block->gate = r.linear(p + n.gate + ".weight", C, hidden, true);
        block->up = r.linear(p + n.up + ".weight", C, hidden, true);
        block->down = r.linear(p + n.down + ".weight", hidden, C, true);
        b.feed_forward = std::move(block);
    }

private:
    const FamilySpec& f_;
    const DecoderConfig& c_;
    std::size_t hidden_;
    bool double_wide_;  // the layers that share keys and values have twice the hidden width (Gemma 4's use_double_wide_mlp)
};

}  // namespace

void check_activation(ConfigFile& cfg, const FamilySpec& f) {
    const std::vector<std::string>& fields = f.dense.activation_fields;
    const auto present = std::find_if(fields.begin(), fields.end(), [&](const std::string& k) { return cfg.get(k); });
    const std::string field = present == fields.end() ? fields.front() : *present;
    const std::string act = cfg.text(field);
    const std::vector<std::string>& accepted = f.dense.activations;
    if (std::find(accepted.begin(), accepted.end(), act) == accepted.end())
        throw InputError(cfg.file(), cfg.at(field), f.model_type + "'s MLP is " + accepted.front() + "; \"" + act + "\" is not supported");
}

std::unique_ptr<KindReader> mlp_reader(ConfigFile& cfg, const FamilySpec& f, const DecoderConfig& c, std::size_t hidden) {
    const bool double_wide = !f.dense.double_wide.empty() && cfg.flag(f.dense.double_wide, false);
    return std::make_unique<MlpReader>(f, c, hidden, double_wide);
}

}  // namespace attnwalk::model_detail

namespace attnwalk {

Cube MlpBlock::forward(const Cube& m, const LayerCall& call) const {
    const MlpKind act = call.config.mlp;
    const Cube hidden = mlp_hidden(m, act, up, gated(act) ? &gate : nullptr);  // (1,T,hidden)
    call.tap.hook(call.layer, hooks::mlp_hidden, hidden);
    return project(hidden, down);  // (1,T,C)
}

}  // namespace attnwalk
