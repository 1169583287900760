// Files attnwalk writes besides stdout (--svg): complete or not at all, only over a picture.
#pragma once

#include <string>

namespace attnwalk::app {

// Writes `content` to a temporary file next to `path`, flushes it to disk and renames it
// over `path`, so that a reader never sees half a file. Refuses (UsageError) a directory,
// anything but a regular file, and a file that holds anything but an SVG picture (so
// never an input, whichever option read it); throws RuntimeError when the disk refuses,
// after removing the temporary file.
void write_file_atomically(const std::string& path, const std::string& content);

}  // namespace attnwalk::app
