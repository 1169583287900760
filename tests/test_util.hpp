// Test helpers: a tensor checker that reports the largest difference (llm.c's "poor
// man's tensor checker"), file reading, and running the real binary.
#pragma once

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <system_error>
#include <sys/wait.h>
#include <unistd.h>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include <doctest/doctest.h>

namespace test {

// This test program's scratch directory (made on first use, under $TMPDIR or /tmp) and
// everything in it, removed when the program ends: temporary inputs, outputs, FIFOs.
inline const std::string& scratch() {
    static const struct Scratch {
        std::string path;
        Scratch() {
            const char* tmp = std::getenv("TMPDIR");
            std::string pattern = std::string(tmp && *tmp ? tmp : "/tmp") + "/attnwalk_test_XXXXXX";
            if (!::mkdtemp(pattern.data())) throw std::runtime_error("cannot make a scratch directory from " + pattern);
            path = pattern;
        }
        ~Scratch() {
            std::error_code ignored;
            std::filesystem::remove_all(path, ignored);
        }
    } dir;
    return dir.path;
}

inline std::string source_path(const std::string& relative) {
    return std::string(ATTNWALK_SOURCE_DIR) + "/" + relative;
}

inline std::string read_file(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    REQUIRE_MESSAGE(in.good(), "cannot open " << path);
    std::stringstream ss;
    ss << in.rdbuf();
    return ss.str();
}

// Largest |a − b| / max(1, |b|) over all elements; NaN matches NaN, inf matches inf.
template <class A, class B>
double max_rel_diff(const A& a, const B& b) {
    double worst = 0.0;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const double x = static_cast<double>(a[i]), y = static_cast<double>(b[i]);
        if (std::isnan(x) && std::isnan(y)) continue;
        if (std::isnan(x) || std::isnan(y)) return INFINITY;  // NaN on one side only
        if (std::isinf(x) || std::isinf(y)) {
            if (x != y) return INFINITY;
            continue;
        }
        worst = std::max(worst, std::fabs(x - y) / std::max(1.0, std::fabs(y)));
    }
    return worst;
}

#define CHECK_CLOSE_ALL(actual, expected, tol)                                                     \
    do {                                                                                           \
        REQUIRE((actual).size() == (expected).size());                                             \
        const double worst_ = ::test::max_rel_diff((actual), (expected));                          \
        CHECK_MESSAGE(worst_ <= (tol), "max relative difference " << worst_ << " > " << (tol));    \
    } while (0)

struct RunResult {
    int exit_code = -1;
    std::string out;
    std::string err;
};

// Runs a shell command line, capturing its stdout and stderr; stdin from /dev/null
// unless `stdin_text` is given.
inline RunResult run_shell(const std::string& command, const std::string& stdin_text = "") {
    static int counter = 0;
    const std::string base = scratch() + "/run_" + std::to_string(counter++);
    std::string cmd = "{ " + command + " ; } >" + base + ".out 2>" + base + ".err";
    if (!stdin_text.empty()) {
        std::ofstream(base + ".in") << stdin_text;
        cmd += " <" + base + ".in";
    } else {
        cmd += " </dev/null";
    }
    const int status = std::system(cmd.c_str());
    RunResult r;
    r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    r.out = read_file(base + ".out");
    r.err = read_file(base + ".err");
    std::remove((base + ".out").c_str());
    std::remove((base + ".err").c_str());
    std::remove((base + ".in").c_str());
    return r;
}

inline std::string binary() { return std::string("'") + ATTNWALK_BINARY + "'"; }

// Runs the attnwalk binary with a shell-quoted argument string.
inline RunResult run(const std::string& args, const std::string& stdin_text = "") {
    return run_shell(binary() + " " + args, stdin_text);
}

// Runs the binary on a pseudo-terminal (util-linux `script`), as a user at a terminal
// sees it; `env` is prepended (e.g. "NO_COLOR=1").
inline RunResult run_tty(const std::string& args, const std::string& env = "") {
    return run_shell("env " + env + " script -qec \"" + binary() + " " + args + "\" /dev/null");
}

// Writes text to a fresh temporary file and returns its path.
inline std::string temp_file(const std::string& text, const std::string& suffix = ".json") {
    static int counter = 0;
    const std::string path = scratch() + "/input_" + std::to_string(counter++) + suffix;
    std::ofstream(path) << text;
    return path;
}

}  // namespace test
