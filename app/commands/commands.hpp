// The subcommands, one file each (CLI11's subcom_in_files pattern): each adds its
// options to `cli` and, when chosen, leaves the call that builds its trace in `shell`.
#pragma once

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
