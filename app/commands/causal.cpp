// attnwalk causal: the causal mask two ways.
#include <cmath>
#include <memory>

#include "attnwalk/errors.hpp"
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
    sub->add_option("--explain", o->explain, "Write out one cell I,J (query row, key column; indices or tokens): "
                                             "the dot product term by term, the scaling, each exp, the sum, the division, the weighted sum");
    add_weights_options(*sub, o->weights, shell);
    sub->add_option("--scale", o->scale, "Divide the scores by S first (default: 1, or √d_k with projections)");
    sub->add_option("--context-length", o->context_length, "Longest input allowed (error if there are more tokens)");
    sub->callback([&shell, o] {
        shell.walk = [&shell, o] {
            if (o->scale && !(std::isfinite(*o->scale) && *o->scale > 0.0))
                throw UsageError("--scale must be a positive finite number");
            const Embeddings input = prepare_input(
                shell, [&](const InputShape& s) { return walk_bytes(s.batch, s.tokens, s.d_in, o->weights.width(), 1, s.tokens); },
                o->context_length);
            Randomness random(o->weights.seed, std::nullopt);
            const Weights weights = make_weights(o->weights, {input.dim(), default_d_out, 1, HeadLayout::fused, false}, random);
            CausalSpec spec;
            spec.scale = o->scale;
            if (o->explain) spec.explain = parse_cell(*o->explain, input.tokens);
            return walk_causal(input, weights, spec, shell.recording);
        };
    });
}

}  // namespace attnwalk::app
