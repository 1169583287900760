// attnwalk dropout: the keep mask, the 1/(1−p) scaling, train vs eval.
#include <memory>

#include "attnwalk/errors.hpp"
#include "commands.hpp"

namespace attnwalk::app {

namespace {

struct DropoutWalkOptions {
    WeightsOptions weights;
    std::optional<double> scale;
    std::optional<std::size_t> context_length;
    DropoutOptions dropout{0.5, std::nullopt, false, true};  // the textbook's nn.Dropout(0.5)
    std::optional<std::size_t> ones;
};

}  // namespace

ATTNWALK_COMMAND(dropout) {
    CLI::App* sub = add_command(cli, shell, "dropout",
                                "  attnwalk dropout --ones 6 --dropout-seed 123   # the textbook's 6×6 matrix of ones\n"
                                "  attnwalk dropout --seed 789 --dropout-seed 123 # dropout on causal weights\n"
                                "  attnwalk dropout --eval              # nothing changes at inference\n");
    auto o = std::make_shared<DropoutWalkOptions>();
    const OptionBuilder options(*sub, shell.named);
    add_weights_options(options, o->weights, shell);
    add_scale_option(options, o->scale);
    add_context_length_option(options, o->context_length);
    add_dropout_options(options, o->dropout);
    MaybeOption ones = options.add_option("--ones", o->ones, "Apply dropout to an N×N matrix of ones instead (the textbook's example)")
                   ->check(whole_number(1));
    for (const char* name : {"--input", "--text", "--vocab", "--weights", "--seed", "--init", "--d-out", "--qkv-bias", "--show-weights",
                             "--batch", "--scale", "--context-length", "--causal"})
        ones->excludes(options.find(name));  // the matrix of ones has no input, weights or scores
    sub->callback([&shell, o] {
        shell.headline = headline_of(lesson("dropout"));
        shell.walk = [&shell, o] {
            const DropoutOptions& d = o->dropout;
            if (o->ones) {
                prepare_input(shell, [&](const InputShape&) { return dropout_ones_cost(*o->ones); });  // checks the budget
                Randomness random(o->weights.seed, d.seed);
                return walk_dropout_ones(*o->ones, random.dropout(d.p, !d.eval, true), shell.recording);
            }
            Randomness random(o->weights.seed, d.seed);
            const OneHead h = prepare_one_head(shell, o->weights, random, false, o->context_length, 20.0);  // and the keep mask, the dropped weights
            DropoutSpec spec;
            spec.scale = o->scale;
            spec.causal = d.causal;
            spec.draw = random.dropout(d.p, !d.eval, true);
            return walk_dropout(h.input, h.weights, spec, shell.recording);
        };
    });
}

}  // namespace attnwalk::app
