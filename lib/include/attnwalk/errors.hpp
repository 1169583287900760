// Typed errors. The library throws; only main() turns them into a message and an exit code.
#pragma once

#include <stdexcept>
#include <string>

namespace attnwalk {

// Bad input data: names the file, the place in it (a JSON path such as
// `$.embeddings[2][1]`) and what was expected. Exit code 1.
class InputError : public std::runtime_error {
public:
    InputError(std::string file, std::string path, const std::string& what);
    const std::string& file() const { return file_; }
    const std::string& path() const { return path_; }
    const std::string& message() const { return message_; }  // what was expected, without the file and the place

private:
    std::string file_;
    std::string path_;
    std::string message_;
};

// Options that do not fit together or do not fit the input (e.g. a query row out of
// range, d_out not divisible by the number of heads). Exit code 2.
class UsageError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

// Reading something would take more memory than the caller allows (a file's JSON, whose
// parse costs many times its bytes). what(): the whole sentence; need(): the part that says
// what would take how much, for a caller that names its budget in its own words. Exit code 2.
class MemoryBudgetError : public UsageError {
public:
    MemoryBudgetError(const std::string& need, const std::string& budget)
        : UsageError(need + ", more than the memory budget of " + budget), need_(need) {}
    const std::string& need() const { return need_; }

private:
    std::string need_;
};

// Something that should not happen went wrong at run time (e.g. a write failed). Exit code 1.
class RuntimeError : public std::runtime_error {
public:
    using std::runtime_error::runtime_error;
};

}  // namespace attnwalk
