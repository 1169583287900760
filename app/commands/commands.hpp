// The subcommands, one file each (CLI11's subcom_in_files pattern): each adds its
// options to `cli` and, when chosen, leaves the call that builds its trace in `shell`.
#pragma once

#include <CLI/CLI.hpp>

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
void add_rope(CLI::App& cli, Shell& shell);
void add_flash(CLI::App& cli, Shell& shell);
void add_sdpa(CLI::App& cli, Shell& shell);
void add_params(CLI::App& cli, Shell& shell);
void add_gpt2(CLI::App& cli, Shell& shell);  // gpt2.cpp: a pretrained model
void add_model(CLI::App& cli, Shell& shell);  // gpt2.cpp: a Hugging Face model folder
void add_tokenize(CLI::App& cli, Shell& shell);

// scores, softmax and context share their options: one walk each, on one head.
using SingleHeadWalk = Trace (*)(const Embeddings&, const Weights&, const SingleHeadSpec&, const Recording&);
// `headline`: the steps --compact shows.
void add_single_head(CLI::App& cli, Shell& shell, const char* name, const char* description, const char* examples,
                     SingleHeadWalk walk, std::vector<std::string> headline);

// A subcommand with its description, examples footer and the shell's options.
CLI::App* add_command(CLI::App& cli, Shell& shell, const char* name, const char* description, const char* examples);

}  // namespace attnwalk::app
