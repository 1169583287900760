// Display width of UTF-8 text, padding and shortening for aligned terminal output.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>

namespace attnwalk::app {

// Code points, not bytes (every glyph attnwalk prints is one column wide).
inline std::size_t width(const std::string& s) {
    return static_cast<std::size_t>(
        std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

inline std::string pad_left(const std::string& s, std::size_t w) {
    return std::string(w > width(s) ? w - width(s) : 0, ' ') + s;
}
inline std::string pad_right(const std::string& s, std::size_t w) {
    return s + std::string(w > width(s) ? w - width(s) : 0, ' ');
}

// The first `w` code points of s.
inline std::string shorten(const std::string& s, std::size_t w) {
    std::size_t seen = 0;
    for (std::size_t i = 0; i < s.size(); ++i)
        if ((static_cast<unsigned char>(s[i]) & 0xC0) != 0x80 && seen++ == w) return s.substr(0, i);
    return s;
}

}  // namespace attnwalk::app
