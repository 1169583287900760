// Display width of UTF-8 text, padding and shortening for aligned terminal output.
#pragma once

#include <algorithm>
#include <cstddef>
#include <string>
#include <vector>

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

// s in at most `w` columns: cut, its last character "…" where something was left out
// ("<|begin_of_text|>" in 6: "<|beg…"); under 3 columns simply cut.
inline std::string abbreviate(const std::string& s, std::size_t w) {
    if (width(s) <= w) return s;
    return w < 3 ? shorten(s, w) : shorten(s, w - 1) + "…";
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

// The words of `text`, split at its spaces; a formula's only at spaces between its terms,
// outside brackets ("exp(ω_2,j − max)" stays one word).
inline std::vector<std::string> words_of(const std::string& text, bool formula = false) {
    std::vector<std::string> words;
    std::string word;
    int depth = 0;
    for (char c : text) {
        if (formula) depth += c == '(' || c == '[' || c == '{' ? 1 : c == ')' || c == ']' || c == '}' ? (depth > 0 ? -1 : 0) : 0;
        if (c == ' ' && depth == 0) {
            if (!word.empty()) words.push_back(word);
            word.clear();
        } else {
            word += c;
        }
    }
    if (!word.empty()) words.push_back(word);
    return words;
}

// `words` in lines no wider than `columns`, a space apart (a word longer than a line stays
// whole); the first line starts with `first`, the others with `rest`.
inline std::string wrap_words(const std::vector<std::string>& words, std::size_t columns, const std::string& first, const std::string& rest) {
    std::string out, line = first;
    bool empty = true;  // nothing but the prefix on this line yet
    for (const std::string& word : words) {
        if (!empty && width(line) + 1 + width(word) > columns) {
            out += line + "\n";
            line = rest;
            empty = true;
        }
        line += (empty ? "" : " ") + word;
        empty = false;
    }
    return out + line + "\n";
}

// `text` in lines no wider than `columns`, broken at spaces only (a word longer than a
// line stays whole); the first line starts with `first`, the others with `rest`.
inline std::string wrap(const std::string& text, std::size_t columns, const std::string& first, const std::string& rest) {
    return wrap_words(words_of(text), columns, first, rest);
}

// A formula wrapped the same way, broken only between its terms (a term longer than a line
// stays whole).
inline std::string wrap_formula(const std::string& formula, std::size_t columns, const std::string& first, const std::string& rest) {
    return wrap_words(words_of(formula, true), columns, first, rest);
}

}  // namespace attnwalk::app
