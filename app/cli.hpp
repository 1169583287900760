// The whole command line as a function, so that main() and the CLI fuzz target share it.
#pragma once

#include <cstddef>
#include <ostream>

namespace attnwalk::app {

// What the process knows about its terminal and environment (main fills it in; the
// fuzz target and tests leave the defaults: not a terminal).
struct Terminal {
    bool stdout_is_tty = false;
    bool stdin_is_tty = false;
    bool no_color = false;     // NO_COLOR is set and not empty, or TERM is dumb
    bool truecolor = false;    // COLORTERM is truecolor or 24bit
    std::size_t columns = 80;  // COLUMNS, else the terminal's width, else 80
    std::size_t lines = 0;     // LINES, else the terminal's height; 0 when unknown (a pipe)
};

// Parses argv with CLI11, runs one walk and renders it to `out`; messages go to `err`.
// Returns the exit code: 0 ok, 1 bad input or runtime error, 2 usage error.
int run_cli(int argc, const char* const* argv, std::ostream& out, std::ostream& err, const Terminal& terminal = {});

// From now on a read of a memory-mapped input that shrank under the process (SIGBUS) is
// one line on stderr naming the file, and exit code 1, instead of a crash.
void report_shrunk_inputs();

// The allocator's policy for a run (glibc; elsewhere nothing): big buffers come from the
// heap and stay there once freed, so a model's next layer lands on pages the previous one
// already faulted in, where fresh mappings would fault (and zero) every page again.
// main() sets it first; the benchmarks of a forward do too.
void keep_freed_memory();

}  // namespace attnwalk::app
