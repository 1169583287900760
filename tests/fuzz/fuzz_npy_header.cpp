// libFuzzer target: a .npy file's header. The first byte picks the format version (1.0, 2.0
// or 3.0) and the rest is the header's text up to the first NUL, then the data's bytes; the
// file is built around them (magic string, version, the header's length) and read as -i
// reads it. A header that is refused is an InputError; one that is read gives a tensor of
// its shape's size, every value finite, that reads back the same after writing it out.
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/io/npy.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const unsigned major = 1 + data[0] % 3;
    const char* rest = reinterpret_cast<const char*>(data + 1);
    const std::size_t n = size - 1;
    const void* nul = std::memchr(rest, '\0', n);
    const std::size_t header_size = nul ? static_cast<std::size_t>(static_cast<const char*>(nul) - rest) : n;
    const std::string header(rest, header_size);
    const std::string values = nul ? std::string(rest + header_size + 1, n - header_size - 1) : std::string();
    std::string file("\x93NUMPY", 6);
    file += static_cast<char>(major);
    file += '\0';
    const std::size_t length_bytes = major == 1 ? 2 : 4;
    for (std::size_t b = 0; b < length_bytes; ++b) file += static_cast<char>((header.size() >> (8 * b)) & 0xff);
    file += header;
    file += values;
    try {
        const attnwalk::Tensor t = attnwalk::parse_npy(file, "fuzz.npy");
        std::size_t count = 1;
        for (std::size_t s : t.shape) count *= s;
        if (t.data.size() != count) __builtin_trap();
        for (float v : t.data)
            if (!std::isfinite(v)) __builtin_trap();
        if (!t.data.empty()) {  // written out and read back: the same shape and bits
            const attnwalk::Tensor again = attnwalk::parse_npy(attnwalk::npy_bytes(t), "again.npy");
            if (again.shape != t.shape || again.data.size() != t.data.size() ||
                std::memcmp(again.data.data(), t.data.data(), t.data.size() * sizeof(float)) != 0)
                __builtin_trap();
            try {  // as -i takes it: T×d or B×T×d, nothing empty
                const attnwalk::Embeddings e = attnwalk::embeddings_of_npy(t, "fuzz.npy");
                if (e.tokens.size() != e.tokens_count()) __builtin_trap();
            } catch (const attnwalk::InputError&) {
            }
        }
    } catch (const attnwalk::InputError& e) {
        if (std::string(e.what()).empty()) __builtin_trap();
    }
    return 0;
}
