// The subcommands, one file each (CLI11's subcom_in_files pattern): each adds its
// options to `cli` and, when chosen, leaves the call that builds its trace in `shell`.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include <CLI/CLI.hpp>

#include "attnwalk/lessons/catalogue.hpp"
#include "shell.hpp"

namespace attnwalk::app {

// Declares the function that adds command `name` to the command line and, when it is
// chosen, leaves its walk in `shell`: `ATTNWALK_COMMAND(mla) { … }`, at the start of a line
// of a file of app/commands/. The build finds these lines and makes the command table of
// them (cmake/registry.cmake): a new command is its own file, with no list to edit.
#define ATTNWALK_COMMAND(name) void add_##name(CLI::App& cli, Shell& shell)

// The lesson a command runs, as the library declares it: its one-line summary (the
// command's description) and the steps --compact shows (headline_of).
const LessonDecl& lesson(const std::string& name);

// The options of a lesson that draws its own weights (mla, deltanet, kvshare): its spec,
// whose defaults are the library's, --seed (absent: 123) and the cache's --context (absent:
// the input's tokens) and --cache-dtype.
template <class Spec>
struct SeededOptions {
    Spec spec;
    std::optional<std::uint64_t> seed;
    std::optional<std::size_t> context;
    std::string dtype = "float32";
};

// Its walk: the spec with the seed and the cache's tokens and bytes per number (float32 4,
// float8 1, else 2) filled in, the input within `cost`'s limits, and default_seed recorded
// when --seed was not given. Cost and Walk: lesson functions as mla_cost and walk_mla.
template <class Spec, class CostOf, class Walk>
Trace seeded_walk(const Shell& shell, const SeededOptions<Spec>& o, CostOf cost, Walk walk) {
    Spec spec = o.spec;
    spec.seed = o.seed.value_or(default_layer_seed);
    spec.context_tokens = o.context.value_or(0);
    spec.bytes_per_value = o.dtype == "float32" ? 4 : o.dtype == "float8" ? 1 : 2;
    const Embeddings input = prepare_input(shell, [&](const InputShape& in) { return cost(in.batch, in.tokens, in.d_in, spec); });
    Trace trace = walk(input, spec, shell.recording);
    if (!o.seed) trace.set_param("default_seed", true);
    return trace;
}

// scores, softmax and context share their options: one walk each, on one head.
using SingleHeadWalk = Trace (*)(const Embeddings&, const Weights&, const SingleHeadSpec&, const Recording&);
void add_single_head(CLI::App& cli, Shell& shell, const char* name, const char* examples, SingleHeadWalk walk);

// A subcommand with its lesson's summary, the examples footer and the shell's options. The
// shell's options are built only if the command line names them (shell.named, options.hpp):
// reach one through OptionBuilder::find, not CLI::App::get_option, which throws for one not
// built.
CLI::App* add_command(CLI::App& cli, Shell& shell, const char* name, const char* examples);

// Every command, in the order --help lists them (walkthrough, then the lessons' order,
// lessons.hpp's lesson_names()): its name and what adds it.
struct CommandEntry {
    const char* name;
    void (*add)(CLI::App& cli, Shell& shell);
};
const std::vector<CommandEntry>& command_table();

}  // namespace attnwalk::app
