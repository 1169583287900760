// What the JSON reader says of values (json_input.hpp): their places and types in words,
// quoted text and sizes, UTF-8, numbers as text, and the check of an object's keys.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <sstream>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/did_you_mean.hpp"
#include "attnwalk/io/json_input.hpp"

namespace attnwalk::json_input {

std::string size_text(double b) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB"};
    std::size_t u = 0;
    while (b >= 1024.0 && u + 1 < std::size(units)) {
        b /= 1024.0;
        ++u;
    }
    std::ostringstream os;
    os << std::fixed;
    os.precision(u == 0 ? 0 : 1);
    os << b << ' ' << units[u];
    return os.str();
}

void check_parse_budget(const std::string& file, const std::string& what, double text_bytes, double memory_budget, double bytes_per_text_byte) {
    const double need = text_bytes * bytes_per_text_byte;
    if (!(need > memory_budget)) return;
    const auto size = size_text;
    throw MemoryBudgetError("reading " + file + ": its " + what + " of " + size(text_bytes) + " of JSON would take about " + size(need) +
                                " of memory to parse",
                            size(memory_budget));
}

std::size_t utf8_sequence_length(const char* p, const char* end) {
    const auto* s = reinterpret_cast<const unsigned char*>(p);
    const std::size_t left = static_cast<std::size_t>(end - p);
    const auto cont = [&](std::size_t i) { return i < left && (s[i] & 0xC0) == 0x80; };
    if (left == 0) return 0;
    if (s[0] >= 0xC2 && s[0] <= 0xDF) return cont(1) ? 2 : 0;
    if (s[0] >= 0xE0 && s[0] <= 0xEF) {
        if (!cont(1) || !cont(2)) return 0;
        if (s[0] == 0xE0 && s[1] < 0xA0) return 0;  // overlong
        if (s[0] == 0xED && s[1] >= 0xA0) return 0;  // surrogates
        return 3;
    }
    if (s[0] >= 0xF0 && s[0] <= 0xF4) {
        if (!cont(1) || !cont(2) || !cont(3)) return 0;
        if (s[0] == 0xF0 && s[1] < 0x90) return 0;  // overlong
        if (s[0] == 0xF4 && s[1] >= 0x90) return 0;  // above U+10FFFF
        return 4;
    }
    return 0;
}

std::string number_text(double value) {
    if (!std::isfinite(value)) return value != value ? "nan" : value > 0 ? "inf" : "-inf";
    if (value == std::floor(value) && std::fabs(value) < 1e15) return std::to_string(static_cast<long long>(value));
    for (int precision = 1;; ++precision) {
        std::ostringstream out;
        out.precision(precision);
        out << value;
        // strtod, not std::stod: a subnormal is a number (stod throws on its ERANGE)
        if (precision >= 17 || std::strtod(out.str().c_str(), nullptr) == value) return out.str();
    }
}

std::string utf8(std::uint32_t cp) {
    std::string out;
    if (cp < 0x80) {
        out += static_cast<char>(cp);
    } else if (cp < 0x800) {
        out += static_cast<char>(0xC0 | (cp >> 6));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else if (cp < 0x10000) {
        out += static_cast<char>(0xE0 | (cp >> 12));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    } else {
        out += static_cast<char>(0xF0 | (cp >> 18));
        out += static_cast<char>(0x80 | ((cp >> 12) & 0x3F));
        out += static_cast<char>(0x80 | ((cp >> 6) & 0x3F));
        out += static_cast<char>(0x80 | (cp & 0x3F));
    }
    return out;
}

bool valid_utf8(const std::string& text) {
    const char* p = text.data();
    const char* end = p + text.size();
    while (p < end) {
        if (static_cast<unsigned char>(*p) < 0x80) {
            ++p;
            continue;
        }
        const std::size_t n = utf8_sequence_length(p, end);
        if (n == 0) return false;
        p += n;
    }
    return true;
}

Value number_value(double x) { Value v; v.type = Value::Type::number; v.number = x; return v; }
Value string_value(std::string s) { Value v; v.type = Value::Type::string; v.string = std::move(s); return v; }
Value bool_value(bool b) { Value v; v.type = Value::Type::boolean; v.boolean = b; return v; }
Value object_value(std::vector<std::pair<std::string, Value>> members) { Value v; v.type = Value::Type::object; v.object = std::move(members); return v; }
Value array_value(std::vector<Value> items) { Value v; v.type = Value::Type::array; v.array = std::move(items); return v; }

std::string type_name(const Value& value) {
    switch (value.type) {
        case Value::Type::null: return "null";
        case Value::Type::boolean: return "a boolean";
        case Value::Type::number: return "a number";
        case Value::Type::string: return "a string";
        case Value::Type::object: return "an object";
        case Value::Type::array:
        case Value::Type::tensor: return "an array";
    }
    return "a value";
}

const Tensor& tensor_of(const Value& value, const std::string& file, const std::string& path,
                        const std::vector<std::size_t>& expected, const std::string& name) {
    const Tensor& t = tensor_of(value, file, path);
    if (t.shape != expected)
        throw InputError(file, path, name + " has the wrong shape: expected " + shape_string(expected) + ", got " +
                                         shape_string(t.shape));
    return t;
}

void check_keys(const Value& object, const std::string& file, const std::string& path, const std::vector<std::string>& known) {
    for (const auto& [key, value] : object.object) {
        if (key.rfind('_', 0) == 0 || std::find(known.begin(), known.end(), key) != known.end()) continue;
        throw InputError(file, member_path(path, key),
                         "unknown key " + quote(key) + " (did you mean " + quote(closest(key, known, 1).front()) + "?)");
    }
}

std::string shape_string(const std::vector<std::size_t>& shape) {
    std::string out;
    for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? "×" : "") + std::to_string(shape[i]);
    return out.empty() ? "scalar" : out;
}

std::string member_path(const std::string& path, const std::string& key) {
    const bool plain = !key.empty() && std::all_of(key.begin(), key.end(), [](char c) {
        return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_';
    });
    return plain ? path + "." + key : path + "[" + quote(key) + "]";
}

std::string quote(const std::string& text) {
    std::string out = "\"";
    for (char c : text) {
        const auto u = static_cast<unsigned char>(c);
        if (c == '"' || c == '\\') {
            out += '\\';
            out += c;
        } else if (u < 0x20) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "\\u%04x", u);
            out += buf;
        } else {
            out += c;
        }
    }
    return out + "\"";
}

}  // namespace attnwalk::json_input
