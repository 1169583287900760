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
    MlpReader(const FamilySpec& f, std::size_t C, std::size_t hidden) : f_(f), C_(C), hidden_(hidden) {}
    void read(const Reader& r, const std::string& p, std::size_t, BlockWeights& b) const override {
        const MlpPart& n = f_.dense;
        auto block = std::make_shared<MlpBlock>();
        block->gate = r.linear(p + n.gate + ".weight", C_, hidden_, true);
        block->up = r.linear(p + n.up + ".weight", C_, hidden_, true);
        block->down = r.linear(p + n.down + ".weight", hidden_, C_, true);
        b.feed_forward = std::move(block);
    }

private:
    const FamilySpec& f_;
    std::size_t C_, hidden_;
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

std::unique_ptr<KindReader> mlp_reader(const FamilySpec& f, std::size_t C, std::size_t hidden) { return std::make_unique<MlpReader>(f, C, hidden); }

}  // namespace attnwalk::model_detail

namespace attnwalk {

Cube MlpBlock::forward(const Cube& m, const LayerCall& call) const {
    const MlpKind act = call.config.mlp;
    const Cube hidden = mlp_hidden(m, act, up, gated(act) ? &gate : nullptr);  // (1,T,hidden)
    call.tap.hook(call.layer, hooks::mlp_hidden, hidden);
    return project(hidden, down);  // (1,T,C)
}

}  // namespace attnwalk
