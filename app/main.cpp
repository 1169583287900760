// attnwalk: the process around the command line (app/cli.cpp).
#include <csignal>
#include <iostream>

#include "cli.hpp"

int main(int argc, char** argv) {
    std::signal(SIGPIPE, SIG_IGN);  // a closed pipe becomes EPIPE on write: a quiet exit
    return attnwalk::app::run_cli(argc, argv, std::cout, std::cerr);
}
