// attnwalk dropout: the keep mask, the 1/(1−p) scaling, train vs eval.
#include <cmath>
#include <memory>

#include "attnwalk/errors.hpp"
#include "commands.hpp"

namespace attnwalk::app {

namespace {

struct DropoutOptions {
    WeightsOptions weights;
    std::optional<double> scale;
    std::optional<std::size_t> context_length;
    double p = 0.5;  // the textbook's nn.Dropout(0.5)
    std::optional<std::uint64_t> dropout_seed;
    bool eval = false;
    bool causal = true;
    std::optional<std::size_t> ones;
};

}  // namespace

void add_dropout(CLI::App& cli, Shell& shell) {
    CLI::App* sub = add_command(cli, shell, "dropout",
                                "Dropout on the attention weights: the keep mask, the 1/(1−p) scaling, train vs eval.",
                                "  attnwalk dropout --ones 6 --dropout-seed 123   # the textbook's 6×6 matrix of ones\n"
                                "  attnwalk dropout --seed 789 --dropout-seed 123 # dropout on causal weights\n"
                                "  attnwalk dropout --eval              # nothing changes at inference\n");
    auto o = std::make_shared<DropoutOptions>();
    add_weights_options(*sub, o->weights, shell);
    sub->add_option("--scale", o->scale, "Divide the scores by S first (default: 1, or √d_k with projections)");
    sub->add_option("--context-length", o->context_length, "Longest input allowed (error if there are more tokens)");
    sub->add_option("--dropout", o->p, "Dropout rate p in [0, 1)")->capture_default_str();
    sub->add_option("--dropout-seed", o->dropout_seed, "Reseed the generator right before the dropout draw, like torch.manual_seed(S); dropout(...)");
    sub->add_flag("--eval", o->eval, "Inference mode: dropout is the identity");
    sub->add_flag("--causal,!--no-causal", o->causal, "Mask future tokens (default: on)");
    sub->add_option("--ones", o->ones, "Apply dropout to an N×N matrix of ones instead (the textbook's example)");
    sub->callback([&shell, o] {
        shell.walk = [&shell, o] {
            if (!(o->p >= 0.0 && o->p < 1.0))
                throw UsageError("--dropout must be in [0, 1), got " + format_number(o->p));
            if (o->scale && !(std::isfinite(*o->scale) && *o->scale > 0.0))
                throw UsageError("--scale must be a positive finite number");
            if (o->ones) {
                if (*o->ones < 1) throw UsageError("--ones must be at least 1");
                const double n = static_cast<double>(*o->ones);
                prepare_input(shell, [&](const InputShape&) { return 16.0 * n * n; });  // checks the budget
                Randomness random(o->weights.seed, o->dropout_seed);
                return walk_dropout_ones(*o->ones, random.dropout(o->p, !o->eval), shell.recording);
            }
            const Embeddings input = prepare_input(
                shell, [&](const InputShape& s) { return walk_bytes(s.batch, s.tokens, s.d_in, o->weights.width(), 1, s.tokens); },
                o->context_length);
            Randomness random(o->weights.seed, o->dropout_seed);
            const Weights weights = make_weights(o->weights, {input.dim(), default_d_out, 1, HeadLayout::fused, false}, random);
            DropoutSpec spec;
            spec.scale = o->scale;
            spec.causal = o->causal;
            spec.draw = random.dropout(o->p, !o->eval);
            return walk_dropout(input, weights, spec, shell.recording);
        };
    });
}

}  // namespace attnwalk::app
