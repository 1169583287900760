// libFuzzer target: random argument vectors through the real CLI11 setup and walks.
// Arguments are the input split at NUL bytes. Whatever they say, run_cli must return
// 0, 1 or 2 and never crash, leak or hang.
#include <unistd.h>

#include <cstddef>
#include <cstdlib>
#include <cstdint>
#include <cstdio>
#include <sstream>
#include <string>
#include <vector>

#include "cli.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    // "-i -" must not wait for a terminal.
    if (!std::freopen("/dev/null", "r", stdin)) return 1;
    // Files the CLI writes (--svg) land in a private directory, never elsewhere.
    char dir[] = "/tmp/attnwalk_fuzz_cli_XXXXXX";
    if (!::mkdtemp(dir) || ::chdir(dir) != 0) return 1;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    std::vector<std::string> args{"attnwalk"};
    std::string current;
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == 0) {
            args.push_back(current);
            current.clear();
        } else {
            current.push_back(static_cast<char>(data[i]));
        }
    }
    args.push_back(current);
    // Output files go to one fixed name in the private directory.
    for (std::size_t i = 1; i < args.size(); ++i) {
        if (args[i] == "--svg" && i + 1 < args.size()) args[i + 1] = "fuzz_out.svg";
        else if (args[i].rfind("--svg=", 0) == 0) args[i] = "--svg=fuzz_out.svg";
    }
    // Keep runs fast and memory bounded: a small budget unless the input sets one.
    bool has_budget = false;
    for (const auto& a : args) has_budget = has_budget || a.rfind("--max-memory", 0) == 0;
    if (!has_budget && args.size() > 1) {
        args.push_back("--max-memory");
        args.push_back("64M");
    }
    std::vector<const char*> argv;
    for (const auto& a : args) argv.push_back(a.c_str());
    std::ostringstream out, err;
    const int code = attnwalk::app::run_cli(static_cast<int>(argv.size()), argv.data(), out, err);
    if (code < 0 || code > 2) __builtin_trap();
    return 0;
}
