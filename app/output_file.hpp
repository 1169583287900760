// Files attnwalk writes besides stdout (--svg, --html): complete or not at all, only over a
// picture or a page of its own.
#pragma once

#include <cstddef>
#include <string>

#include "attnwalk/trace.hpp"

namespace attnwalk::app {

// Writes `content` to a temporary file next to `path`, flushes it to disk and renames it
// over `path`, so that a reader never sees half a file. Refuses (UsageError) a directory,
// anything but a regular file, and a file that holds anything but an SVG picture or a page
// --html wrote (so never an input, whichever option read it); throws RuntimeError when the
// disk refuses, after removing the temporary file.
// `npy`: the file is a .npy of --npy's, in a folder it made, and replaces only a .npy file.
void write_file_atomically(const std::string& path, const std::string& content, bool npy = false);

// --npy DIR: DIR made (or reused, when an earlier --npy made it or it is empty) and each
// step's tensor written as DIR/NAME (npy_file_names), never over `input` (-i's file).
// Returns what it wrote, for the line on stderr.
struct NpyWritten {
    std::string dir;  // the folder as the JSON names it (the name given, without trailing slashes)
    std::size_t files;
    double bytes;
};
NpyWritten write_npy_files(const Trace& trace, const std::string& dir, const std::string& input);

// The empty file that marks a folder as --npy's.
constexpr const char* npy_stamp = ".attnwalk-npy";

// What an HTML page of attnwalk's names in its first lines: the mark write_file_atomically
// looks for before it replaces a page.
constexpr const char* html_generator = "<meta name=\"generator\" content=\"attnwalk\">";

}  // namespace attnwalk::app
