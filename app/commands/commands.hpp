// The subcommands, one file each (CLI11's subcom_in_files pattern): each adds its
// options to `cli` and, when chosen, leaves the call that builds its trace in `shell`.
#pragma once

#include <CLI/CLI.hpp>

#include "attnwalk/lessons/catalogue.hpp"
#include "shell.hpp"

namespace attnwalk::app {

void add_walkthrough(CLI::App& cli, Shell& shell);
void add_scores(CLI::App& cli, Shell& shell);
void add_softmax(CLI::App& cli, Shell& shell);
void add_context(CLI::App& cli, Shell& shell);
void add_causal(CLI::App& cli, Shell& shell);
void add_dropout(CLI::App& cli, Shell& shell);
void add_mha(CLI::App& cli, Shell& shell);
void add_kvcache(CLI::App& cli, Shell& shell);  // beyond.cpp: beyond the chapter
void add_mla(CLI::App& cli, Shell& shell);  // mla.cpp
void add_deltanet(CLI::App& cli, Shell& shell);  // deltanet.cpp
void add_rope(CLI::App& cli, Shell& shell);
void add_flash(CLI::App& cli, Shell& shell);
void add_sdpa(CLI::App& cli, Shell& shell);
void add_params(CLI::App& cli, Shell& shell);
void add_gpt2(CLI::App& cli, Shell& shell);  // gpt2.cpp: a pretrained model
void add_model(CLI::App& cli, Shell& shell);  // gpt2.cpp: a Hugging Face model folder
void add_tokenize(CLI::App& cli, Shell& shell);

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

// Every command, in the order --help lists them: its name and what adds it.
struct CommandEntry {
    const char* name;
    void (*add)(CLI::App& cli, Shell& shell);
};
const std::vector<CommandEntry>& command_table();

}  // namespace attnwalk::app
