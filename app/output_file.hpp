// Files attnwalk writes besides stdout (--svg): complete or not at all, never over an input.
#pragma once

#include <string>
#include <vector>

namespace attnwalk::app {

// Writes `content` to a temporary file next to `path`, flushes it to disk and renames it
// over `path`, so that a reader never sees half a file. Refuses (UsageError) when `path`
// is one of `inputs` or a directory; throws RuntimeError when the disk refuses, after
// removing the temporary file.
void write_file_atomically(const std::string& path, const std::string& content, const std::vector<std::string>& inputs);

}  // namespace attnwalk::app
