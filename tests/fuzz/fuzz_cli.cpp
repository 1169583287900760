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

#include "run_args.hpp"
#include "scratch.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    // "-i -" must not wait for a terminal.
    if (!std::freopen("/dev/null", "r", stdin)) return 1;
    // Files the CLI writes (--svg) land in a private directory, never elsewhere.
    char dir[] = "/tmp/attnwalk_fuzz_cli_XXXXXX";
    if (!::mkdtemp(dir) || ::chdir(dir) != 0) return 1;
    fuzz::remove_at_exit(dir);
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
    return fuzz_run_cli(std::move(args));  // a small budget unless the input sets one
}

