#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "attnwalk/errors.hpp"

namespace attnwalk::app {

namespace {

bool same_file(const std::string& a, const std::string& b) {
    std::error_code ec;
    if (std::filesystem::equivalent(a, b, ec)) return true;
    const auto ca = std::filesystem::weakly_canonical(a, ec);
    if (ec) return false;
    const auto cb = std::filesystem::weakly_canonical(b, ec);
    return !ec && ca == cb;
}

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
    throw RuntimeError("cannot write " + path + ": " + what + ": " + std::strerror(err));
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content, const std::vector<std::string>& inputs) {
    if (path.empty()) throw UsageError("the output file name is empty");
    for (const auto& input : inputs)
        if (!input.empty() && input != "-" && same_file(path, input))
            throw UsageError("refusing to write " + path + ": it is an input of this run (" + input + ")");
    std::error_code ec;
    if (std::filesystem::is_directory(path, ec)) throw UsageError("cannot write " + path + ": it is a directory");

    std::string temp = path + ".tmp-XXXXXX";
    const int fd = ::mkstemp(temp.data());
    if (fd < 0) fail("cannot create a temporary file next to it", path, errno);
    std::size_t done = 0;
    int err = 0;
    while (done < content.size()) {
        const ssize_t n = ::write(fd, content.data() + done, content.size() - done);
        if (n < 0) {
            if (errno == EINTR) continue;
            err = errno;
            break;
        }
        done += static_cast<std::size_t>(n);
    }
    const mode_t mask = ::umask(0);  // mkstemp makes the file 0600; give it the usual 0666 & ~umask
    ::umask(mask);
    if (!err && ::fchmod(fd, 0666 & ~mask) != 0) err = errno;
    if (!err && ::fsync(fd) != 0) err = errno;
    if (::close(fd) != 0 && !err) err = errno;
    if (!err && ::rename(temp.c_str(), path.c_str()) != 0) err = errno;
    if (err) {
        ::unlink(temp.c_str());
        fail("the write failed", path, err);
    }
}

}  // namespace attnwalk::app
