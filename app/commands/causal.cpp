// attnwalk causal: the causal mask two ways.
#include <memory>

#include "commands.hpp"

namespace attnwalk::app {

namespace {

struct CausalOptions {
    WeightsOptions weights;
    std::optional<double> scale;
    std::optional<std::string> query;
    std::optional<std::string> explain;
    std::optional<std::size_t> context_length;
    DropoutOptions dropout{0.0, std::nullopt, false, true};  // CausalAttention(..., dropout=0.0)
};

}  // namespace

ATTNWALK_COMMAND(causal) {
    CLI::App* sub = add_command(cli, shell, "causal",
                                "  attnwalk causal --seed 789           # the textbook's causal weights\n"
                                "  attnwalk causal --batch 2 --seed 123 # CausalAttention on a batch of two\n"
                                "  attnwalk causal --explain 2,4        # a future cell: masked, weight 0\n"
                                "  attnwalk causal --query journey      # one row: what \"journey\" may see\n"
                                "  attnwalk causal --seed 789 --dropout 0.5   # CausalAttention with dropout\n");
    auto o = std::make_shared<CausalOptions>();
    const OptionBuilder options(*sub, shell.named);
    options.add_option("--query", o->query, "Show one query only: its position (from 1) or its text")
        ->check(non_empty())
        ->excludes(add_explain_option(options, o->explain));
    add_weights_options(options, o->weights, shell);
    add_scale_option(options, o->scale);
    add_context_length_option(options, o->context_length);
    add_dropout_options(options, o->dropout, false);
    sub->callback([&shell, o] {
        shell.headline = headline_of(lesson("causal"));
        shell.walk = [&shell, o] {
            Randomness random(o->weights.seed, o->dropout.seed);
            const OneHead h = prepare_one_head(shell, o->weights, random, o->query.has_value(), o->context_length,
                                                 24.0);  // both ways to mask: scores, mask, masked, weights, renormalised, …
            CausalSpec spec;
            spec.scale = o->scale;
            if (o->query) spec.query = resolve_token(*o->query, h.input.tokens, "--query");
            if (o->explain) spec.explain = parse_cell(*o->explain, h.input.tokens);
            spec.dropout = random.dropout(o->dropout.p, !o->dropout.eval);
            return walk_causal(h.input, h.weights, spec, shell.recording);
        };
    });
}

}  // namespace attnwalk::app
