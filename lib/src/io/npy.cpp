#include "attnwalk/io/npy.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/json_input.hpp"
#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

namespace {

const std::string magic("\x93NUMPY", 6);
constexpr std::size_t max_rank = 4;

// The value of `key` in the header dict's text: what follows "'key':" up to the next
// top-level comma or closing brace (a tuple's commas inside its parentheses).
std::string entry(const std::string& header, const std::string& key, const std::string& source) {
    std::size_t at = header.find("'" + key + "'");
    if (at == std::string::npos) at = header.find("\"" + key + "\"");
    if (at == std::string::npos) throw InputError(source, "header", "no '" + key + "' in the header " + header);
    // a key given twice: numpy's dict keeps the last, a reader taking the first would read another array
    if (header.find("'" + key + "'", at + 1) != std::string::npos || header.find("\"" + key + "\"", at + 1) != std::string::npos)
        throw InputError(source, "header", "'" + key + "' appears twice in the header " + header + ": expected each key once");
    at = header.find(':', at);
    if (at == std::string::npos) throw InputError(source, "header", "no ':' after '" + key + "'");
    ++at;
    std::size_t end = at;
    int depth = 0;
    for (; end < header.size(); ++end) {
        const char c = header[end];
        if (c == '(') depth += 1;
        else if (c == ')') depth -= 1;
        else if ((c == ',' || c == '}') && depth == 0) break;
    }
    std::string value = header.substr(at, end - at);
    const auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n'; };
    while (!value.empty() && space(value.front())) value.erase(value.begin());
    while (!value.empty() && space(value.back())) value.pop_back();
    return value;
}

std::vector<std::size_t> shape_of(const std::string& text, const std::string& source) {
    if (text.size() < 2 || text.front() != '(' || text.back() != ')')
        throw InputError(source, "shape", "expected a tuple of sizes such as (6, 3), got " + text);
    std::vector<std::size_t> shape;
    std::size_t i = 1;
    const std::size_t end = text.size() - 1;
    while (i < end) {
        while (i < end && (text[i] == ' ' || text[i] == ',')) ++i;
        if (i >= end) break;
        std::size_t size = 0, digits = 0;
        for (; i < end && text[i] >= '0' && text[i] <= '9'; ++i, ++digits) {
            if (size > (std::numeric_limits<std::size_t>::max() - 9) / 10)
                throw InputError(source, "shape", "a size too large to mean anything: " + text);
            size = size * 10 + static_cast<std::size_t>(text[i] - '0');
        }
        if (digits == 0) throw InputError(source, "shape", "expected whole numbers in the shape, got " + text);
        while (i < end && text[i] == 'L') ++i;  // Python 2's long integers
        shape.push_back(size);
    }
    if (shape.size() > max_rank)
        throw InputError(source, "shape", "at most " + std::to_string(max_rank) + " axes, got " + std::to_string(shape.size()));
    return shape;
}

// The product of the sizes, or 0 past what fits in memory at all.
std::size_t count_of(const std::vector<std::size_t>& shape) {
    std::size_t n = 1;
    for (std::size_t s : shape) {
        if (s != 0 && n > std::numeric_limits<std::size_t>::max() / 16 / s) return std::numeric_limits<std::size_t>::max();
        n *= s;
    }
    return n;
}

std::uint64_t little(const unsigned char* p, std::size_t bytes) {
    std::uint64_t v = 0;
    for (std::size_t i = bytes; i-- > 0;) v = (v << 8) | p[i];
    return v;
}

}  // namespace

bool is_npy(const std::string& bytes) { return bytes.compare(0, magic.size(), magic) == 0; }

Tensor parse_npy(const std::string& bytes, const std::string& source) {
    if (!is_npy(bytes)) throw InputError(source, "", "not a .npy file (it does not start with \\x93NUMPY)");
    if (bytes.size() < 10) throw InputError(source, "header", "the file ends inside its header");
    const auto* u = reinterpret_cast<const unsigned char*>(bytes.data());
    const unsigned major = u[6];
    if (major < 1 || major > 3) throw InputError(source, "header", "format version " + std::to_string(major) + "." + std::to_string(u[7]) + " is not one of 1.0, 2.0, 3.0");
    const std::size_t length_bytes = major == 1 ? 2 : 4;
    if (bytes.size() < 8 + length_bytes) throw InputError(source, "header", "the file ends inside its header");
    const std::uint64_t header_length = little(u + 8, length_bytes), start = 8 + length_bytes;
    if (header_length > bytes.size() - start) throw InputError(source, "header", "the header says " + std::to_string(header_length) + " bytes; the file ends before");
    const std::string header = bytes.substr(start, header_length);

    const std::string descr = entry(header, "descr", source);
    std::size_t item = 0;
    if (descr == "'<f4'" || descr == "'<f8'" || descr == "'<f2'") item = static_cast<std::size_t>(descr[3] - '0');
    if (item != 4 && item != 8 && item != 2)
        throw InputError(source, "descr", "expected float32, float64 or float16 little-endian ('<f4', '<f8', '<f2'), got " + descr +
                                              " (numpy: x.astype(np.float32))");
    const std::string order = entry(header, "fortran_order", source);
    if (order != "False" && order != "True") throw InputError(source, "fortran_order", "expected True or False, got " + order);
    Tensor t;
    t.shape = shape_of(entry(header, "shape", source), source);
    const std::size_t n = count_of(t.shape);
    const std::size_t data_at = static_cast<std::size_t>(start + header_length), have = bytes.size() - data_at;
    if (n == std::numeric_limits<std::size_t>::max() || n * item != have)
        throw InputError(source, "data", "the shape " + json_input::shape_string(t.shape) + " of " + std::to_string(item * 8) + "-bit values needs " +
                                             (n == std::numeric_limits<std::size_t>::max() ? std::string("more bytes than any file holds")
                                                                                          : std::to_string(n * item) + " bytes") +
                                             "; the file holds " + std::to_string(have));
    t.data.resize(n);
    const unsigned char* p = u + data_at;
    const bool fortran = order == "True" && t.shape.size() > 1;
    std::vector<std::size_t> place(t.shape.size(), 0);  // Fortran order: the file's element i, the first axis fastest
    for (std::size_t i = 0; i < n; ++i, p += item) {
        double v;
        if (item == 4) {
            const auto bits = static_cast<std::uint32_t>(little(p, 4));
            float f;
            std::memcpy(&f, &bits, sizeof f);
            v = f;
        } else if (item == 8) {
            const std::uint64_t bits = little(p, 8);
            std::memcpy(&v, &bits, sizeof v);
        } else {
            v = half_to_float(static_cast<std::uint16_t>(little(p, 2)));
        }
        const auto f = static_cast<float>(v);
        if (!std::isfinite(f)) {
            std::string where;  // the element's index, as numpy writes it: [i, j]
            std::size_t rest = i;
            std::vector<std::size_t> index(t.shape.size());
            for (std::size_t a = t.shape.size(); a-- > 0;) {
                index[a] = rest % t.shape[a];
                rest /= t.shape[a];
            }
            if (order == "True") {  // the file's i-th value is at the reversed index
                rest = i;
                for (std::size_t a = 0; a < t.shape.size(); ++a) {
                    index[a] = rest % t.shape[a];
                    rest /= t.shape[a];
                }
            }
            for (std::size_t a = 0; a < index.size(); ++a) where += (a ? ", " : "") + std::to_string(index[a]);
            throw InputError(source, "data[" + where + "]",
                             "expected a finite float32 number, got " + std::string(std::isnan(v) ? "nan" : v > 0 ? "inf (or a value past float32's range)" : "-inf (or a value past float32's range)"));
        }
        if (!fortran) {
            t.data[i] = f;
            continue;
        }
        std::size_t at = 0;  // column-major in the file: placed row-major as it is read (no second copy)
        for (std::size_t a = 0; a < t.shape.size(); ++a) at = at * t.shape[a] + place[a];
        t.data[at] = f;
        for (std::size_t a = 0; a < t.shape.size() && ++place[a] == t.shape[a]; ++a) place[a] = 0;
    }
    return t;
}

std::string npy_bytes(const Tensor& t) {
    const bool whole = t.is_integer();
    std::string header = std::string("{'descr': '") + (whole ? "<i8" : "<f4") + "', 'fortran_order': False, 'shape': (";
    for (std::size_t a = 0; a < t.shape.size(); ++a) header += std::to_string(t.shape[a]) + (t.shape.size() == 1 || a + 1 < t.shape.size() ? "," : "") + (a + 1 < t.shape.size() ? " " : "");
    header += "), }";
    const std::size_t unpadded = magic.size() + 2 + 2 + header.size() + 1;  // + '\n'
    header.append((64 - unpadded % 64) % 64, ' ');
    header += '\n';
    std::string out = magic;
    out += '\x01';
    out += '\x00';
    out += static_cast<char>(header.size() & 0xff);
    out += static_cast<char>(header.size() >> 8);
    out += header;
    const std::size_t n = t.size();
    out.reserve(out.size() + n * (whole ? 8 : 4));
    for (std::size_t i = 0; i < n; ++i) {
        std::uint64_t bits;
        std::size_t bytes;
        if (whole) {
            bits = static_cast<std::uint64_t>(static_cast<std::int64_t>(t.integers[i]));
            bytes = 8;
        } else {
            std::uint32_t b32;
            std::memcpy(&b32, &t.data[i], sizeof b32);
            bits = b32;
            bytes = 4;
        }
        for (std::size_t k = 0; k < bytes; ++k) out += static_cast<char>((bits >> (8 * k)) & 0xff);
    }
    return out;
}

}  // namespace attnwalk
