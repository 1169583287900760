#include "attnwalk/errors.hpp"

namespace attnwalk {

namespace {
std::string locate(const std::string& file, const std::string& path, const std::string& what) {
    std::string out = file;
    if (!path.empty()) out += (out.empty() ? "" : ": ") + std::string("at ") + path;
    return out.empty() ? what : out + ": " + what;
}
}  // namespace

InputError::InputError(std::string file, std::string path, const std::string& what)
    : std::runtime_error(locate(file, path, what)), file_(std::move(file)), path_(std::move(path)), message_(what) {}

}  // namespace attnwalk
