// scores, softmax, context: the options they share and the one call into lib/.
#include <memory>

#include "commands.hpp"

namespace attnwalk::app {

CLI::App* add_command(CLI::App& cli, Shell& shell, const char* name, const char* description, const char* examples) {
    CLI::App* sub = cli.add_subcommand(name, description);
    sub->footer(std::string("Examples:\n") + examples);
    add_shell_options(*sub, shell, std::string(name) != "walkthrough");
    return sub;
}

namespace {

struct SingleHeadOptions {
    WeightsOptions weights;
    std::optional<double> scale;
    std::optional<std::string> query;
    std::optional<std::string> explain;
};

}  // namespace

void add_single_head(CLI::App& cli, Shell& shell, const char* name, const char* description, const char* examples,
                     SingleHeadWalk walk, std::vector<std::string> headline) {
    CLI::App* sub = add_command(cli, shell, name, description, examples);
    auto o = std::make_shared<SingleHeadOptions>();
    CLI::Option* query = sub->add_option("--query", o->query, "Show one query only: a 0-based index or a token's text")
                               ->check(non_empty());
    query->excludes(add_explain_option(*sub, o->explain));  // --explain I,J already names the query I
    add_weights_options(*sub, o->weights, shell);
    add_scale_option(*sub, o->scale);
    sub->callback([&shell, o, walk, headline] {
        shell.headline = headline;
        shell.walk = [&shell, o, walk] {
            Randomness random(o->weights.seed, std::nullopt);
            const OneHead h = prepare_one_head(shell, o->weights, random, o->query.has_value());
            SingleHeadSpec spec;
            spec.scale = o->scale;
            if (o->query) spec.query = resolve_token(*o->query, h.input.tokens, "--query");
            if (o->explain) spec.explain = parse_cell(*o->explain, h.input.tokens);
            return walk(h.input, h.weights, spec, shell.recording);
        };
    });
}

void add_scores(CLI::App& cli, Shell& shell) {
    add_single_head(cli, shell, "scores",
                    "Dot-product attention scores: one query with every token, or the full ω = X·Xᵀ (Q·Kᵀ with projections).",
                    "  attnwalk scores                      # the full 6×6 score matrix of the built-in sentence\n"
                    "  attnwalk scores --query journey      # one query, each dot product written out\n"
                    "  attnwalk scores --seed 123 --init rand --query 1\n",
                    walk_scores, {"scores_loop", "scores"});
}

void add_softmax(CLI::App& cli, Shell& shell) {
    add_single_head(cli, shell, "softmax",
                    "From scores to weights: divide by the sum vs naive softmax vs stable softmax, each row's sum shown.",
                    "  attnwalk softmax --query journey     # the three normalisations side by side\n"
                    "  attnwalk softmax -i data/large_scores.json   # naive softmax overflows, the stable one does not\n"
                    "  attnwalk softmax --scale 2           # divide the scores by 2 first\n"
                    "  attnwalk softmax --explain journey,starts   # one weight, every number that goes into it\n",
                    walk_softmax, {"weights_sum", "weights_naive", "weights"});
}

void add_context(CLI::App& cli, Shell& shell) {
    add_single_head(cli, shell, "context",
                    "Context vectors: each token's weighted sum of the embeddings (or of the values, with projections).",
                    "  attnwalk context --query journey     # the weighted sum, term by term\n"
                    "  attnwalk context --seed 123 --init rand     # the textbook's SelfAttention_v1\n"
                    "  attnwalk context --seed 789          # SelfAttention_v2 (nn.Linear initialisation)\n"
                    "  attnwalk context --explain 1,2 --seed 123 --init rand   # one cell, through W_query and W_key\n",
                    walk_context, {"weights", "context"});
}

}  // namespace attnwalk::app
