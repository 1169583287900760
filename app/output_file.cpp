#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
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
    struct stat target {};
    const bool exists = ::stat(path.c_str(), &target) == 0;
    if (exists && S_ISDIR(target.st_mode)) throw UsageError("cannot write " + path + ": it is a directory");
    if (exists && !S_ISREG(target.st_mode))  // a device, a FIFO, a socket: never replaced by a rename
        throw UsageError("refusing to write " + path + ": it is not a regular file");
    struct stat in {};
    const bool reads_stdin = std::find(inputs.begin(), inputs.end(), "-") != inputs.end();
    if (exists && reads_stdin && ::fstat(STDIN_FILENO, &in) == 0 && in.st_dev == target.st_dev && in.st_ino == target.st_ino)
        throw UsageError("refusing to write " + path + ": it is this run's standard input");

    // The temporary file sits next to the target under a short name of its own, so that a
    // name of up to NAME_MAX bytes stays legal.
    const std::filesystem::path target_path(path);
    const std::string dir = target_path.has_parent_path() ? target_path.parent_path().string() + "/" : "";
    std::string temp = dir + ".attnwalk-XXXXXX";
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
    // mkstemp makes the file 0600: keep the mode of the file it replaces, or give a new one
    // the usual 0666 & ~umask.
    const mode_t mask = ::umask(0);
    ::umask(mask);
    const mode_t mode = exists ? (target.st_mode & 07777) : (0666 & ~mask);
    if (!err && ::fchmod(fd, mode) != 0) err = errno;
    if (!err && ::fsync(fd) != 0) err = errno;
    if (::close(fd) != 0 && !err) err = errno;
    if (!err && ::rename(temp.c_str(), path.c_str()) != 0) err = errno;
    if (err) {
        ::unlink(temp.c_str());
        fail("the write failed", path, err);
    }
}

}  // namespace attnwalk::app
