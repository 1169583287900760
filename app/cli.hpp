// The whole command line as a function, so that main() and the CLI fuzz target share it.
#pragma once

#include <ostream>

namespace attnwalk::app {

// Parses argv with CLI11, runs one walk and renders it to `out`; messages go to `err`.
// Returns the exit code: 0 ok, 1 bad input or runtime error, 2 usage error.
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err);

}  // namespace attnwalk::app
