#include "data_files.hpp"

#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <system_error>
#include <vector>

namespace attnwalk::app {

namespace {

namespace fs = std::filesystem;

std::vector<fs::path> data_dirs() {
    std::vector<fs::path> dirs;
    if (const char* env = std::getenv("ATTNWALK_DATA"); env && *env) dirs.emplace_back(env);
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) dirs.push_back(exe.parent_path().parent_path() / "share" / "attnwalk");
    dirs.emplace_back(fs::path(ATTNWALK_SOURCE_DIR) / "data");
    return dirs;
}

}  // namespace

std::optional<std::string> shipped_file(const std::string& name) {
    for (const fs::path& dir : data_dirs()) {
        std::error_code ec;
        if (fs::exists(dir / name, ec)) return (dir / name).string();
    }
    return std::nullopt;
}

std::string user_path(const std::string& given) {
    std::error_code ec;
    const std::string prefix = "data/";
    if (given.rfind(prefix, 0) != 0 || given.size() == prefix.size() || fs::exists(given, ec)) return given;
    return shipped_file(given.substr(prefix.size())).value_or(given);
}

std::string shipped_places() {
    std::string out;
    for (const fs::path& dir : data_dirs()) out += (out.empty() ? "" : ", ") + dir.string();
    return out;
}

}  // namespace attnwalk::app
