// The fuzz targets' way into the CLI: a small budget unless the arguments set one, and a
// trap (a finding) for any exit code other than 0, 1 or 2.
#pragma once

#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"

inline int fuzz_run_cli(std::vector<std::string> args) {
    bool budget = false;
    for (const auto& a : args) budget = budget || a.rfind("--max-memory", 0) == 0 || a.rfind("--max-work", 0) == 0;
    if (!budget && args.size() > 1) args.insert(args.end(), {"--max-memory", "64M", "--max-work", "1e9"});
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    const int code = attnwalk::app::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
    if (code < 0 || code > 2) __builtin_trap();
    return 0;
}
