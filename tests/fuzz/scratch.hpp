// A fuzz target's own files in /tmp, removed when the fuzzer exits after its runs. In a
// folder, libFuzzer's files (crash-…, slow-unit-…, a -jobs log) stay, and the folder with
// them; a crash ends the process without this, leaving everything for a look.
#pragma once

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>
#include <vector>

namespace fuzz {

inline std::vector<std::string>& scratch_paths() {
    static std::vector<std::string> paths;
    return paths;
}

inline void remove_scratch() {
    namespace fs = std::filesystem;
    std::error_code ec;
    if (::chdir("/") != 0) return;  // a target may work inside its folder
    for (const std::string& path : scratch_paths()) {
        if (!fs::is_directory(path, ec)) {
            fs::remove(path, ec);
            continue;
        }
        for (const auto& entry : fs::directory_iterator(path, ec)) {
            const std::string name = entry.path().filename().string();
            bool libfuzzers = false;
            for (const char* prefix : {"crash-", "leak-", "timeout-", "oom-", "slow-unit-", "fuzz-"})
                libfuzzers = libfuzzers || name.rfind(prefix, 0) == 0;
            if (!libfuzzers) fs::remove_all(entry.path(), ec);
        }
        fs::remove(path, ec);  // only when nothing is left in it
    }
}

// `path`, a file or a folder, goes when the fuzzer exits.
inline void remove_at_exit(const std::string& path) {
    std::vector<std::string>& paths = scratch_paths();  // made before the handler: destroyed after it runs
    static const bool registered = std::atexit(remove_scratch) == 0;
    (void)registered;
    paths.push_back(path);
}

}  // namespace fuzz
