// attnwalk causal: the causal mask two ways.
#include <memory>

#include "commands.hpp"

namespace attnwalk::app {

namespace {

struct CausalOptions {
    WeightsOptions weights;
    std::optional<double> scale;
    std::optional<std::string> explain;
    std::optional<std::size_t> context_length;
};

}  // namespace

void add_causal(CLI::App& cli, Shell& shell) {
    CLI::App* sub = add_command(cli, shell, "causal",
                                "The causal mask two ways: mask after the softmax and renormalise, or −∞ before the softmax.",
                                "  attnwalk causal --seed 789           # the textbook's causal weights\n"
                                "  attnwalk causal --batch 2 --seed 123 # CausalAttention on a batch of two\n"
                                "  attnwalk causal --explain 2,4        # a future cell: masked, weight 0\n");
    auto o = std::make_shared<CausalOptions>();
    add_explain_option(*sub, o->explain);
    add_weights_options(*sub, o->weights, shell);
    add_scale_option(*sub, o->scale);
    add_context_length_option(*sub, o->context_length);
    sub->callback([&shell, o] {
        shell.headline = {"scores_masked", "weights", "max_difference", "context"};  // --compact
        shell.walk = [&shell, o] {
            Randomness random(o->weights.seed, std::nullopt);
            const OneHead h = prepare_one_head(shell, o->weights, random, false, o->context_length);
            CausalSpec spec;
            spec.scale = o->scale;
            if (o->explain) spec.explain = parse_cell(*o->explain, h.input.tokens);
            return walk_causal(h.input, h.weights, spec, shell.recording);
        };
    });
}

}  // namespace attnwalk::app
