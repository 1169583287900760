// attnwalk: the process around the command line (app/cli.cpp).
#include <sys/ioctl.h>
#include <unistd.h>

#include <csignal>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include "cli.hpp"

namespace {

attnwalk::app::Terminal read_terminal() {
    attnwalk::app::Terminal t;
    t.stdout_is_tty = ::isatty(STDOUT_FILENO) == 1;
    t.stdin_is_tty = ::isatty(STDIN_FILENO) == 1;
    const char* no_color = std::getenv("NO_COLOR");
    const char* term = std::getenv("TERM");
    t.no_color = (no_color && *no_color) || (term && std::strcmp(term, "dumb") == 0);
    const char* colorterm = std::getenv("COLORTERM");
    t.truecolor = colorterm && (std::strcmp(colorterm, "truecolor") == 0 || std::strcmp(colorterm, "24bit") == 0);
    winsize ws{};
    if (t.stdout_is_tty && ::ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0) {
        t.columns = ws.ws_col;
        t.lines = ws.ws_row;
    }
    if (const char* lines = std::getenv("LINES")) {
        char* end = nullptr;
        const long n = std::strtol(lines, &end, 10);
        if (end != lines && *end == '\0' && n >= 10 && n <= 10000) t.lines = static_cast<std::size_t>(n);
    }
    if (const char* columns = std::getenv("COLUMNS")) {
        char* end = nullptr;
        const long n = std::strtol(columns, &end, 10);
        if (end != columns && *end == '\0' && n >= 20 && n <= 10000) t.columns = static_cast<std::size_t>(n);
    }
    return t;
}

}  // namespace

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN);  // a closed pipe becomes EPIPE on write: a quiet exit
    attnwalk::app::keep_freed_memory();
    attnwalk::app::report_shrunk_inputs();  // a checkpoint truncated while mapped: one line, not a crash
    return attnwalk::app::run_cli(argc, argv, std::cout, std::cerr, read_terminal());
}
