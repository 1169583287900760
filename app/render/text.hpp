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

// A column's label in a narrow cell: "head 12" as "h12" when it does not fit, then shortened.
inline std::string cell_label(const std::string& s, std::size_t w) {
    if (width(s) > w && s.rfind("head ", 0) == 0) return shorten("h" + s.substr(5), w);
    return shorten(s, w);
}

// Shell-quoted when needed, so that a printed command can be pasted back.
inline std::string shell_word(const std::string& word) {
    if (!word.empty() && word.find_first_not_of("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-./=:,") == std::string::npos)
        return word;
    std::string quoted = "'";
    for (char c : word) quoted += c == '\'' ? std::string("'\\''") : std::string(1, c);
    return quoted + "'";
}

// `text` in lines no wider than `columns`, broken at spaces only (a word longer than a
// line stays whole); the first line starts with `first`, the others with `rest`.
inline std::string wrap(const std::string& text, std::size_t columns, const std::string& first, const std::string& rest) {
    std::string out, line = first;
    bool empty = true;  // nothing but the prefix on this line yet
    std::size_t start = 0;
    while (start <= text.size()) {
        std::size_t end = text.find(' ', start);
        if (end == std::string::npos) end = text.size();
        const std::string word = text.substr(start, end - start);
        if (!word.empty()) {
            if (!empty && width(line) + 1 + width(word) > columns) {
                out += line + "\n";
                line = rest;
                empty = true;
            }
            line += (empty ? "" : " ") + word;
            empty = false;
        }
        start = end + 1;
    }
    return out + line + "\n";
}

}  // namespace attnwalk::app
