#include "output_file.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <system_error>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/npy.hpp"
#include "render/render_json.hpp"

namespace attnwalk::app {

namespace {

// Whether the regular file at `path` is empty, holds an SVG picture (its first 4 KB, past
// blanks, begin with "<?xml" or "<svg" and name an <svg element) or a page --html wrote
// (it begins with "<!doctype html>" and names attnwalk as its generator early on).
// Read without following a link and without waiting, and only if it is still the regular
// file `seen` was (a swap in between is refused, not read).
bool empty_or_output(const std::string& path, const struct stat& seen, bool npy) {
    const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK);
    if (fd < 0) return false;
    struct stat now {};
    std::string head(4096, '\0');
    ssize_t got = -1;
    if (::fstat(fd, &now) == 0 && S_ISREG(now.st_mode) && now.st_dev == seen.st_dev && now.st_ino == seen.st_ino)
        got = ::read(fd, head.data(), head.size());
    ::close(fd);
    if (got < 0) return false;
    head.resize(static_cast<std::size_t>(got));
    const std::size_t start = head.find_first_not_of(" \t\r\n");
    if (start == std::string::npos) return true;  // empty, or only blanks
    if (npy) return is_npy(head);                 // in a folder --npy made: its .npy files
    if (head.compare(start, 15, "<!doctype html>") == 0) return head.find(html_generator) != std::string::npos;
    return (head.compare(start, 5, "<?xml") == 0 || head.compare(start, 4, "<svg") == 0) && head.find("<svg") != std::string::npos;
}

[[noreturn]] void fail(const std::string& what, const std::string& path, int err) {
    throw RuntimeError("cannot write " + path + ": " + what + ": " + std::strerror(err));
}

// Where a write to `path` lands: the path itself, or for a link the file it names (the
// rename replaces that file, never the link). Each hop is placed by its real folder and
// checked; refused: a link to nothing, a loop of links, and anything under /dev, /proc or
// /sys (/dev/stdout names the shell's output, and a rename there would replace a system
// link with a file).
std::string landing_place(const std::string& path, const char* hint = "--svg and --html write a file: give its name") {
    std::string hop = path;
    for (int hops = 0;; ++hops) {
        if (hops > 40) throw UsageError("refusing to write " + path + ": it is a link in a loop of links");
        const std::filesystem::path p(hop);
        const std::string name = p.filename().string();
        if (name.empty() || name == "." || name == "..") return hop;  // a folder: refused as one below
        const std::string parent = p.has_parent_path() ? p.parent_path().string() : ".";
        char* real = ::realpath(parent.c_str(), nullptr);
        if (!real) fail("cannot reach its folder", path, errno);
        const std::string folder = real;
        std::free(real);
        const std::string here = folder + (folder.back() == '/' ? "" : "/") + name;
        for (const char* system : {"/dev/", "/proc/", "/sys/"})
            if (here.rfind(system, 0) == 0)
                throw UsageError("refusing to write " + path + (here != path ? " (" + here + ")" : std::string()) +
                                 ": a system file, not a file of your own (" + hint + ")");
        struct stat own {};
        if (::lstat(here.c_str(), &own) != 0) {
            if (errno != ENOENT) fail("cannot look at it", path, errno);
            if (hops > 0) throw UsageError("refusing to write " + path + ": it is a link to a file that does not exist (" + here + ")");
            return here;  // a new file
        }
        if (!S_ISLNK(own.st_mode)) return here;
        std::string target(4096, '\0');
        const ssize_t n = ::readlink(here.c_str(), target.data(), target.size());
        if (n < 0) fail("cannot follow its link", path, errno);
        if (static_cast<std::size_t>(n) == target.size()) fail("cannot follow its link", path, ENAMETOOLONG);
        target.resize(static_cast<std::size_t>(n));
        hop = !target.empty() && target[0] == '/' ? target : folder + "/" + target;
    }
}

// --npy's files are written in its folder under their own names, never through a link
// (`shown`: the name as the user sees it).
void refuse_link_in_npy_folder(const std::string& path, const std::string& shown) {
    struct stat own {};
    if (::lstat(path.c_str(), &own) == 0 && S_ISLNK(own.st_mode))
        throw UsageError("refusing to write " + shown +
                         ": it is a symbolic link (--npy writes its own files in its folder and never through a link; remove the link or give another folder)");
}

}  // namespace

void write_file_atomically(const std::string& path, const std::string& content, bool npy) {
    if (path.empty()) throw UsageError("the output file name is empty");
    if (path == "-")
        throw UsageError(std::string(npy ? "--npy writes files into a folder" : "--svg and --html write a file") +
                         ", not standard output: give a " + (npy ? "folder" : "file") + " name instead of '-'");
    // `path` itself, or for --svg and --html the file its link names. A file in --npy's folder
    // is never written through a link: the link could lead anywhere (outside the folder, to a
    // file of the user's), and --npy replaces only its own .npy files in that folder.
    if (npy) refuse_link_in_npy_folder(path, path);
    const std::string place = npy ? path : landing_place(path);
    struct stat target {};
    const bool exists = ::stat(place.c_str(), &target) == 0;
    if (exists && S_ISDIR(target.st_mode)) throw UsageError("cannot write " + path + ": it is a directory");
    if (exists && !S_ISREG(target.st_mode))  // a device, a FIFO, a socket: never replaced by a rename
        throw UsageError("refusing to write " + path + ": it is not a regular file");
    // The one rule for every file a command reads (an input, a checkpoint, a tokenizer
    // file, a mask, standard input's file): none is a picture or a page of ours, and only
    // those (or an empty file) are ever replaced.
    if (exists && !empty_or_output(place, target, npy))
        throw UsageError("refusing to write " + path +
                         (npy ? ": it holds something other than a .npy file (--npy replaces only those, in a folder it made)"
                              : ": it holds something other than an SVG picture or a page attnwalk wrote (--svg and --html replace only those)"));

    // The temporary file sits next to the target under a short name of its own, so that a
    // name of up to NAME_MAX bytes stays legal.
    const std::filesystem::path target_path(place);
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
    // Looked at once more just before the rename: a name swapped meanwhile for a link, a
    // device or a FIFO is not replaced (a narrower window, not none: docs/robustness.md).
    struct stat last {};
    if (!err && ::lstat(place.c_str(), &last) == 0 &&
        !(exists && S_ISREG(last.st_mode) && last.st_ino == target.st_ino && last.st_dev == target.st_dev)) {
        ::unlink(temp.c_str());
        throw UsageError("refusing to write " + path + ": it changed while the file was written (it is not the file it was, or it appeared)");
    }
    if (!err && ::rename(temp.c_str(), place.c_str()) != 0) err = errno;
    if (err) {
        ::unlink(temp.c_str());
        fail("the write failed", path, err);
    }
}

NpyWritten write_npy_files(const Trace& trace, const std::string& given, const std::string& input) {
    if (given.empty()) throw UsageError("the --npy folder name is empty");
    if (given == "-") throw UsageError("--npy writes files into a folder, not standard output: give a folder name instead of '-'");
    std::string dir = given;  // the name the JSON gives the files: without trailing slashes
    while (dir.size() > 1 && dir.back() == '/') dir.pop_back();
    // where the files land: a link is followed to its folder; /dev, /proc and /sys are refused
    // before anything is made
    const std::string place = landing_place(dir, "--npy writes into a folder of your own: give its name");
    struct stat st {};
    if (::stat(place.c_str(), &st) != 0) {
        if (errno != ENOENT) fail("cannot look at it", given, errno);
        if (::mkdir(place.c_str(), 0777) != 0) fail("cannot make the folder", given, errno);
    } else {
        if (!S_ISDIR(st.st_mode)) throw UsageError("refusing to write into " + given + ": it is not a folder (--npy DIR makes or reuses a folder)");
        refuse_link_in_npy_folder(place + "/" + npy_stamp, dir + "/" + npy_stamp);
        struct stat mark {};
        if (!(::lstat((place + "/" + npy_stamp).c_str(), &mark) == 0 && S_ISREG(mark.st_mode))) {  // not --npy's: only if empty
            std::error_code ec;
            const bool empty = std::filesystem::is_empty(place, ec);
            if (ec) fail("cannot read the folder", given, ec.value());
            if (!empty) throw UsageError("refusing to write into " + given + ": it holds files that --npy did not write (give a new or an empty folder)");
        }
    }
    // every file checked before any is written: none may be a link, nor the input (-i FILE, or
    // the file standard input reads for -i -)
    struct stat in {};
    const bool have_input = input == "-" ? ::fstat(STDIN_FILENO, &in) == 0 && S_ISREG(in.st_mode)
                                         : !input.empty() && ::stat(input.c_str(), &in) == 0;
    const std::vector<std::string> names = npy_file_names(trace);
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        if (trace.steps[i].tensor.data.empty()) continue;
        const std::string path = place + "/" + names[i];
        refuse_link_in_npy_folder(path, dir + "/" + names[i]);
        struct stat there {};
        if (have_input && ::stat(path.c_str(), &there) == 0 && there.st_dev == in.st_dev && there.st_ino == in.st_ino)
            throw UsageError("refusing to write " + dir + "/" + names[i] + ": it is the input file (-i); give --npy another folder");
    }
    write_file_atomically(place + "/" + npy_stamp, "", true);  // this folder is --npy's: later runs may replace its .npy files
    NpyWritten wrote{dir, 0, 0.0};
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        const Step& step = trace.steps[i];
        if (step.tensor.data.empty()) continue;
        const std::string content = npy_bytes(step.tensor);
        write_file_atomically(place + "/" + names[i], content, true);
        wrote.bytes += static_cast<double>(content.size());
        ++wrote.files;
    }
    return wrote;
}

}  // namespace attnwalk::app
