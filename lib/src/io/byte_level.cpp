#include "byte_level.hpp"

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "attnwalk/io/json_input.hpp"

namespace attnwalk::byte_level {

namespace {

const std::vector<std::string>& byte_chars() {
    static const std::vector<std::string> table = [] {
        std::vector<std::string> out(256);
        std::uint32_t n = 0;
        for (std::uint32_t b = 0; b < 256; ++b) {
            const bool kept = (b >= '!' && b <= '~') || (b >= 0xA1 && b <= 0xAC) || (b >= 0xAE && b <= 0xFF);
            out[b] = json_input::utf8(kept ? b : 256 + n++);
        }
        return out;
    }();
    return table;
}

const std::unordered_map<std::string, char>& char_bytes() {
    static const std::unordered_map<std::string, char> table = [] {
        std::unordered_map<std::string, char> m;
        for (std::size_t b = 0; b < 256; ++b) m.emplace(byte_chars()[b], static_cast<char>(b));
        return m;
    }();
    return table;
}

}  // namespace

std::string encode(const std::string& bytes) {
    std::string out;
    for (unsigned char c : bytes) out += byte_chars()[c];
    return out;
}

std::string decode(const std::string& text) {
    std::string out;
    for (std::size_t i = 0; i < text.size();) {
        const unsigned char c = static_cast<unsigned char>(text[i]);
        std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : 4;
        if (i + n > text.size()) n = text.size() - i;
        const auto it = char_bytes().find(text.substr(i, n));
        out += it != char_bytes().end() ? std::string(1, it->second) : text.substr(i, n);
        i += n;
    }
    return out;
}

}  // namespace attnwalk::byte_level
