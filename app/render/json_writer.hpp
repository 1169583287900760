// The one JSON writer: --json's document (render_json.cpp) and the page's data
// (render_html.cpp) are written by it, so a string, a number or a non-finite value reads the
// same in both. It streams to an ostream in chunks (no document tree in memory).
#pragma once

#include <charconv>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <ostream>
#include <string>
#include <type_traits>
#include <vector>

#include "printable.hpp"
#include "render_json.hpp"

namespace attnwalk::app {

class JsonWriter {
public:
    JsonWriter(std::ostream& out, NonFinite non_finite, bool pack = false) : packed(pack), out_(out), non_finite_(non_finite) {
        buf_.reserve(chunk + 256);
    }
    const bool packed;  // large float tensors as {"f32": base64}: see render_json.hpp
    ~JsonWriter() { flush(); }
    JsonWriter(const JsonWriter&) = delete;
    JsonWriter& operator=(const JsonWriter&) = delete;

    void flush() {
        out_.write(buf_.data(), static_cast<std::streamsize>(buf_.size()));
        buf_.clear();
    }
    JsonWriter& raw(const char* s) {
        buf_ += s;
        return spill();
    }
    JsonWriter& raw(const std::string& s) {  // JSON this writer wrote before (a piece kept aside)
        buf_ += s;
        return spill();
    }
    JsonWriter& raw(char c) {
        buf_ += c;
        return spill();
    }
    // A JSON string: UTF-8 passes through; control characters are escaped and invalid
    // UTF-8 (a file name, say) becomes U+FFFD, so the document always parses.
    JsonWriter& string(const std::string& s) {
        buf_ += '"';
        for (std::size_t i = 0; i < s.size();) {
            const auto c = static_cast<unsigned char>(s[i]);
            if (c == '"' || c == '\\') {
                buf_ += '\\';
                buf_ += static_cast<char>(c);
                ++i;
            } else if (c < 0x20) {
                static const char* hex = "0123456789abcdef";
                if (c == '\n') buf_ += "\\n";
                else if (c == '\t') buf_ += "\\t";
                else if (c == '\r') buf_ += "\\r";
                else buf_ += std::string("\\u00") + hex[c >> 4] + hex[c & 15];
                ++i;
            } else if (c < 0x80) {
                buf_ += static_cast<char>(c);
                ++i;
            } else {
                unsigned code = 0;
                const std::size_t n = utf8_sequence(s, i, code);
                if (n == 0) {
                    buf_ += "\\ufffd";
                    ++i;
                } else {
                    buf_.append(s, i, n);
                    i += n;
                }
            }
        }
        buf_ += '"';
        return spill();
    }
    // A non-finite value: "nan", "inf", "-inf" (strings), null, or Python's literals NaN,
    // Infinity, -Infinity (which json.loads and then torch.tensor accept).
    JsonWriter& non_finite(double v) {
        switch (non_finite_) {
            case NonFinite::null: return raw("null");
            case NonFinite::literal: return raw(std::isnan(v) ? "NaN" : v > 0 ? "Infinity" : "-Infinity");
            case NonFinite::string: break;
        }
        return string(std::isnan(v) ? "nan" : v > 0 ? "inf" : "-inf");
    }
    // float32: the shortest text that reads back to the same float, with ".0" on whole
    // numbers (so that readers see a float).
    // (double for statistics and parameters, the same way.)
    template <class F>
    JsonWriter& number(F v) {
        static_assert(std::is_floating_point_v<F>);
        if (!std::isfinite(v)) return non_finite(static_cast<double>(v));
        char tmp[40];
        const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
        append_number(tmp, r.ptr);
        return spill();
    }
    JsonWriter& integer(unsigned long long v) {
        char tmp[24];
        const auto r = std::to_chars(tmp, tmp + sizeof tmp, v);
        buf_.append(tmp, r.ptr);
        return spill();
    }
    JsonWriter& boolean(bool v) { return raw(v ? "true" : "false"); }
    // The values' float32 bits, 4 little-endian bytes each, in base64 (RFC 4648, padded),
    // as a JSON string.
    JsonWriter& base64_f32(const std::vector<float>& values) {
        static const char alphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
        buf_ += '"';
        std::uint32_t group = 0;
        int held = 0;  // bytes in group
        const auto put = [&](std::uint8_t byte) {
            group = group << 8 | byte;
            if (++held < 3) return;
            for (int shift = 18; shift >= 0; shift -= 6) buf_ += alphabet[group >> shift & 63];
            group = 0;
            held = 0;
            if (buf_.size() >= chunk) flush();
        };
        for (float v : values) {
            std::uint32_t bits;
            std::memcpy(&bits, &v, sizeof bits);
            for (int b = 0; b < 4; ++b) put(static_cast<std::uint8_t>(bits >> (8 * b)));
        }
        if (held) {
            group <<= 8 * (3 - held);
            for (int k = 0; k <= held; ++k) buf_ += alphabet[group >> (18 - 6 * k) & 63];
            for (int k = held; k < 3; ++k) buf_ += '=';
        }
        buf_ += '"';
        return spill();
    }
    JsonWriter& key(const char* k) {
        string(k);
        return raw(':');
    }

private:
    static constexpr std::size_t chunk = 1 << 20;

    JsonWriter& spill() {
        if (buf_.size() >= chunk) flush();
        return *this;
    }
    void append_number(const char* begin, const char* end) {
        buf_.append(begin, end);
        for (const char* p = begin; p != end; ++p)
            if (*p == '.' || *p == 'e') return;
        buf_ += ".0";
    }

    std::ostream& out_;
    NonFinite non_finite_;
    std::string buf_;
};

}  // namespace attnwalk::app
