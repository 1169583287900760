// --help laid out for the terminal: a command's own options first, then the groups every
// command shares (input, output, limits); descriptions wrapped at the terminal's width.
#pragma once

#include <cstddef>
#include <memory>

#include <CLI/CLI.hpp>

namespace attnwalk::app {

// The groups add_shell_options puts the shared options in, in the order help lists them
// after a command's own options.
inline constexpr const char* input_group = "Input";
inline constexpr const char* output_group = "Output";
inline constexpr const char* limits_group = "Limits";

std::shared_ptr<CLI::FormatterBase> help_formatter(std::size_t columns);

}  // namespace attnwalk::app
