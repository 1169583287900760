// What scores, softmax and context share: their options and the one call into lib/
// (each command's own file gives its description, examples and headline steps).
#include <memory>

#include "commands.hpp"

namespace attnwalk::app {

const LessonDecl& lesson(const std::string& name) {
    const LessonDecl* l = find_lesson(name);
    if (!l) throw std::logic_error("no lesson declares the command " + name);
    return *l;
}

CLI::App* add_command(CLI::App& cli, Shell& shell, const char* name, const char* examples) {
    CLI::App* sub = cli.add_subcommand(name, lesson(name).summary);
    sub->footer(std::string("Examples:\n") + examples);
    add_shell_options(OptionBuilder(*sub, shell.named), shell, true);  // every command here walks a lesson
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

void add_single_head(CLI::App& cli, Shell& shell, const char* name, const char* examples, SingleHeadWalk walk) {
    CLI::App* sub = add_command(cli, shell, name, examples);
    const std::vector<std::string> headline = headline_of(lesson(name));
    auto o = std::make_shared<SingleHeadOptions>();
    const OptionBuilder options(*sub, shell.named);
    MaybeOption query = options.add_option("--query", o->query, "Show one query only: its position (from 1) or its text")->check(non_empty());
    query->excludes(add_explain_option(options, o->explain));  // --explain I,J already names the query I
    add_weights_options(options, o->weights, shell);
    add_scale_option(options, o->scale);
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

}  // namespace attnwalk::app
