#include "printable.hpp"

#include <cstdio>

namespace attnwalk::app {

std::size_t utf8_sequence(const std::string& s, std::size_t i, unsigned& code) {
    const auto byte = [&](std::size_t k) { return static_cast<unsigned>(static_cast<unsigned char>(s[k])); };
    const auto cont = [&](std::size_t k) { return k < s.size() && (byte(k) & 0xC0) == 0x80; };
    const unsigned b = byte(i);
    if (b < 0x80) {
        code = b;
        return 1;
    }
    if (b >= 0xC2 && b <= 0xDF && cont(i + 1)) {
        code = ((b & 0x1F) << 6) | (byte(i + 1) & 0x3F);
        return 2;
    }
    if (b >= 0xE0 && b <= 0xEF && cont(i + 1) && cont(i + 2)) {
        code = ((b & 0x0F) << 12) | ((byte(i + 1) & 0x3F) << 6) | (byte(i + 2) & 0x3F);
        return code >= 0x800 && (code < 0xD800 || code > 0xDFFF) ? 3 : 0;
    }
    if (b >= 0xF0 && b <= 0xF4 && cont(i + 1) && cont(i + 2) && cont(i + 3)) {
        code = ((b & 0x07) << 18) | ((byte(i + 1) & 0x3F) << 12) | ((byte(i + 2) & 0x3F) << 6) | (byte(i + 3) & 0x3F);
        return code >= 0x10000 && code <= 0x10FFFF ? 4 : 0;
    }
    return 0;
}

namespace {

// Bidi controls, and the line and paragraph separators (U+2028, U+2029), which end a line
// in some terminals and editors.
bool is_bidi(unsigned c) {
    return c == 0x061C || c == 0x200E || c == 0x200F || (c >= 0x2028 && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069);
}

}  // namespace

std::string printable(const std::string& text) {
    std::string out;
    out.reserve(text.size());
    for (std::size_t i = 0; i < text.size();) {
        unsigned code = 0;
        const std::size_t n = utf8_sequence(text, i, code);
        if (n == 0) {
            out += "\xEF\xBF\xBD";  // U+FFFD
            ++i;
            continue;
        }
        if (code < 0x20) {  // U+2400 + code: ␀ … ␟
            out += "\xE2\x90";
            out += static_cast<char>(0x80 + code);
        } else if (code == 0x7F) {
            out += "\xE2\x90\xA1";  // ␡
        } else if ((code >= 0x80 && code <= 0x9F) || is_bidi(code) || code == 0xFFFE || code == 0xFFFF) {  // U+FFFE, U+FFFF: not XML text
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04X", code);
            out += buf;
        } else {
            out.append(text, i, n);
        }
        i += n;
    }
    return out;
}

Trace printable(Trace trace) {
    for (auto& t : trace.tokens) t = printable(t);
    for (auto& [name, value] : trace.params)
        if (auto* s = std::get_if<std::string>(&value)) *s = printable(*s);
    for (Step& step : trace.steps) {
        step.title = printable(step.title);
        step.formula = printable(step.formula);
        step.note = printable(step.note);
        step.summary.scope = printable(step.summary.scope);
        for (Expansion& e : step.expansion) e.label = printable(e.label);
        for (std::string& l : step.labels) l = printable(l);  // the candidates' tokens of top_k_ids
        for (std::string& w : step.tensor.words) w = printable(w);  // the logit lens's tokens
    }
    return trace;
}

}  // namespace attnwalk::app
