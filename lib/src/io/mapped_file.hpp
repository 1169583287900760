// A regular file opened read-only and mapped whole: what the safetensors and the GGUF
// readers share before each reads its own header (safetensors.cpp). Internal to lib/src/io/.
#pragma once

#include <cstddef>
#include <string>

namespace attnwalk::io_detail {

struct MappedFile {
    int fd = -1;
    std::size_t size = 0;
    const unsigned char* map = nullptr;
};

// Opens `path` (a FIFO with no writer must not block the open), checks that it is a regular
// file of at least `least` bytes and maps it. `kind` names the format ("a GGUF file"),
// `least_words` why it needs that much ("its header alone takes 24"). Throws InputError
// naming the file; nothing is left open then.
MappedFile map_file(const std::string& path, const std::string& kind, std::size_t least, const std::string& least_words);

// A mapping alive, named for mapped_file_at (the SIGBUS handler of app/cli.cpp says which
// file shrank while mapped), and forgotten before it is unmapped.
void note_mapping(const unsigned char* begin, std::size_t size, const std::string& path);
void forget_mapping(const unsigned char* begin);

}  // namespace attnwalk::io_detail
