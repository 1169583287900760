// The dense MLP: down(act(up(x))), or gated, down(act(gate(x)) ⊙ up(x)), of `hidden`
// features. Checks the activation config.json names against the family's; the forward is
// ops/activations' mlp_hidden and the down projection.
#include <algorithm>

#include "attnwalk/errors.hpp"
#include "attnwalk/model/blocks/mlp.hpp"
#include "../kinds.hpp"

namespace attnwalk::model_detail {

namespace {

class MlpReader : public KindReader {
public:
    MlpReader(const FamilySpec& f, std::size_t C, std::size_t hidden) : f_(f), C_(C), hidden_(hidden) {}
    void read(const Reader& r, const std::string& p, std::size_t, BlockWeights& b) const override {
        const MlpPart& n = f_.dense;
        b.gate = r.linear(p + n.gate + ".weight", C_, hidden_, true);
        b.up = r.linear(p + n.up + ".weight", C_, hidden_, true);
        b.down = r.linear(p + n.down + ".weight", hidden_, C_, true);
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

Cube mlp_forward(const DecoderConfig& c, const BlockWeights& b, std::size_t layer, const Cube& m, DecoderTap& tap) {
    const Cube hidden = mlp_hidden(m, c.mlp, b.up, gated(c.mlp) ? &b.gate : nullptr);  // (1,T,hidden)
    tap.hook(layer, hooks::mlp_hidden, hidden);
    return project(hidden, b.down);  // (1,T,C)
}

}  // namespace attnwalk::model_detail
