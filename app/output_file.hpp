// Files attnwalk writes besides stdout (--svg, --html): complete or not at all, only over a
// picture or a page of its own.
#pragma once

#include <string>

namespace attnwalk::app {

// Writes `content` to a temporary file next to `path`, flushes it to disk and renames it
// over `path`, so that a reader never sees half a file. Refuses (UsageError) a directory,
// anything but a regular file, and a file that holds anything but an SVG picture or a page
// --html wrote (so never an input, whichever option read it); throws RuntimeError when the
// disk refuses, after removing the temporary file.
void write_file_atomically(const std::string& path, const std::string& content);

// What an HTML page of attnwalk's names in its first lines: the mark write_file_atomically
// looks for before it replaces a page.
constexpr const char* html_generator = "<meta name=\"generator\" content=\"attnwalk\">";

}  // namespace attnwalk::app
