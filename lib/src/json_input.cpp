#include "attnwalk/json_input.hpp"

#include <charconv>
#include <cmath>
#include <cstring>
#include <functional>
#include <limits>
#include <sstream>

#include "attnwalk/errors.hpp"

namespace attnwalk::json_input {

namespace {
json parse_with(const std::string& file, const std::function<json()>& parser);
}

json parse(const std::string& text, const std::string& file) {
    return parse_with(file, [&] { return json::parse(text); });
}

namespace {

json parse_with(const std::string& file, const std::function<json()>& parser) {
    try {
        return parser();
    } catch (const json::parse_error& e) {
        // nlohmann's message reads "[json.exception.parse_error.101] parse error at line 1, column 5: ..."
        std::string what = e.what();
        const auto at = what.find("parse error");
        if (at != std::string::npos) what = what.substr(at);
        throw InputError(file, "", "not valid JSON: " + what);
    } catch (const json::out_of_range& e) {  // e.g. 1e400: no double holds it
        std::string what = e.what();
        const auto at = what.find("] ");
        if (at != std::string::npos) what = what.substr(at + 2);
        throw InputError(file, "", "number out of range (" + what + "): expected finite float32 numbers");
    }
}

}  // namespace

std::string type_name(const json& value) {
    switch (value.type()) {
        case json::value_t::null: return "null";
        case json::value_t::boolean: return "a boolean";
        case json::value_t::string: return "a string";
        case json::value_t::array: return "an array";
        case json::value_t::object: return "an object";
        case json::value_t::binary: return "binary data";
        case json::value_t::discarded: return "nothing";
        default: return "a number";
    }
}

std::string shape_string(const std::vector<std::size_t>& shape) {
    std::string out;
    for (std::size_t i = 0; i < shape.size(); ++i) out += (i ? "×" : "") + std::to_string(shape[i]);
    return out.empty() ? "scalar" : out;
}

namespace {

constexpr std::size_t max_rank = 4;  // nothing attnwalk reads has more axes

std::string index_path(const std::string& path, std::size_t i) {
    return path + "[" + std::to_string(i) + "]";
}

// Walks the nested arrays along their first elements to find the shape.
std::vector<std::size_t> probe_shape(const json& value, const std::string& file, std::string path) {
    std::vector<std::size_t> shape;
    const json* cur = &value;
    while (cur->is_array()) {
        if (shape.size() == max_rank)
            throw InputError(file, path, "nested too deeply: at most " + std::to_string(max_rank) + " levels of arrays");
        if (cur->empty()) throw InputError(file, path, "expected a non-empty array of numbers, got []");
        shape.push_back(cur->size());
        cur = &(*cur)[0];
        path = index_path(path, 0);
    }
    if (shape.empty())
        throw InputError(file, path, "expected an array of numbers, got " + type_name(value));
    return shape;
}

void read_into(const json& value, const std::vector<std::size_t>& shape, std::size_t depth,
               const std::string& file, const std::string& path, std::vector<float>& out) {
    if (depth == shape.size()) {
        if (!value.is_number())
            throw InputError(file, path, "expected a number, got " + type_name(value));
        const double v = value.get<double>();
        if (!std::isfinite(v) || std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max())) {
            std::ostringstream os;
            os << v;
            throw InputError(file, path, "expected a finite float32 number, got " + os.str());
        }
        out.push_back(static_cast<float>(v));
        return;
    }
    if (!value.is_array()) {
        throw InputError(file, path, "expected an array of " + std::to_string(shape[depth]) +
                                         " values, got " + type_name(value));
    }
    if (value.size() != shape[depth]) {
        const std::string like = depth == 0 ? "" : " (like the first one)";
        throw InputError(file, path, "ragged array: expected " + std::to_string(shape[depth]) +
                                         " values" + like + ", got " + std::to_string(value.size()));
    }
    for (std::size_t i = 0; i < value.size(); ++i)
        read_into(value[i], shape, depth + 1, file, index_path(path, i), out);
}

}  // namespace

Tensor read_tensor(const json& value, const std::string& file, const std::string& path) {
    Tensor t;
    t.shape = probe_shape(value, file, path);
    t.data.reserve(t.size());
    read_into(value, t.shape, 0, file, path, t.data);
    return t;
}

Tensor read_tensor_shaped(const json& value, const std::string& file, const std::string& path,
                          const std::vector<std::size_t>& expected, const std::string& name) {
    Tensor t = read_tensor(value, file, path);
    if (t.shape != expected) {
        throw InputError(file, path, name + " has the wrong shape: expected " +
                                         shape_string(expected) + ", got " + shape_string(t.shape));
    }
    return t;
}

namespace {

// SAX events: everything goes to nlohmann's DOM builder, except the array under the
// top-level `key`, whose numbers go straight into a float vector. The checks and
// messages are read_tensor's: the shape comes from the first elements, later arrays must
// match it, every element must be a finite float32 number.
class TensorSax {
public:
    using number_integer_t = json::number_integer_t;
    using number_unsigned_t = json::number_unsigned_t;
    using number_float_t = json::number_float_t;
    using string_t = json::string_t;
    using binary_t = json::binary_t;

    TensorSax(json& doc, const std::string& file, const std::string& key, Tensor& tensor, bool& streamed)
        : dom_(doc, true), file_(file), key_(key), tensor_(tensor), streamed_(streamed) {}

    bool null() { return inside() ? element("null") : dom_.null(); }
    bool boolean(bool v) { return inside() ? element("a boolean") : dom_.boolean(v); }
    bool number_integer(number_integer_t v) { return inside() ? number(static_cast<double>(v)) : dom_.number_integer(v); }
    bool number_unsigned(number_unsigned_t v) { return inside() ? number(static_cast<double>(v)) : dom_.number_unsigned(v); }
    bool number_float(number_float_t v, const string_t& s) { return inside() ? number(v) : dom_.number_float(v, s); }
    bool string(string_t& v) { return inside() ? element("a string") : dom_.string(v); }
    bool binary(binary_t& v) { return inside() ? element("binary data") : dom_.binary(v); }
    bool start_object(std::size_t n) {
        if (inside()) return element("an object");
        ++depth_;
        pending_ = false;
        return dom_.start_object(n);
    }
    bool key(string_t& k) {
        pending_ = depth_ == 1 && k == key_;  // the next value, if an array, is streamed
        return dom_.key(k);
    }
    bool end_object() {
        --depth_;
        return dom_.end_object();
    }
    bool start_array(std::size_t n) {
        if (pending_) {  // the tensor starts: level 0
            pending_ = false;
            streamed_ = true;
            tensor_ = Tensor{};
            rank_ = 0;
            counts_.assign(1, 0);
            return dom_.null();  // its place in the document
        }
        if (!inside()) {
            ++depth_;
            return dom_.start_array(n);
        }
        // an array as an element at level counts_.size()
        const std::size_t level = counts_.size();
        if (rank_ && level >= rank_) fail(path(), "expected a number, got an array");
        if (!rank_ && level >= max_rank) fail(path(), "nested too deeply: at most " + std::to_string(max_rank) + " levels of arrays");
        counts_.push_back(0);
        return true;
    }
    bool end_array() {
        if (!inside()) {
            --depth_;
            return dom_.end_array();
        }
        const std::size_t level = counts_.size() - 1, count = counts_.back();
        counts_.pop_back();
        if (!rank_ && count == 0) {
            counts_.push_back(0);  // the path of the empty array itself
            fail(path_of_open(), "expected a non-empty array of numbers, got []");
        }
        if (tensor_.shape.size() <= level) tensor_.shape.resize(level + 1, 0);  // 0: not known yet
        if (tensor_.shape[level] != 0) {
            if (count != tensor_.shape[level]) {
                const std::string like = level == 0 ? "" : " (like the first one)";
                counts_.push_back(count);
                fail(path_of_open(), "ragged array: expected " + std::to_string(tensor_.shape[level]) + " values" + like +
                                         ", got " + std::to_string(count));
            }
        } else {
            tensor_.shape[level] = count;  // the first array of this level: its length is the shape
        }
        if (!counts_.empty()) ++counts_.back();
        return true;
    }
    template <class Exception>  // the concrete type (parse_error, out_of_range), so that it is thrown as such
    bool parse_error(std::size_t position, const std::string& token, const Exception& e) {
        return dom_.parse_error(position, token, e);
    }

private:
    bool inside() const { return !counts_.empty(); }

    // The JSON path of the element about to be added at the current level.
    std::string path() const {
        std::string p = "$." + key_;
        for (std::size_t count : counts_) p += "[" + std::to_string(count) + "]";
        return p;
    }
    // The path of the innermost open array (whose count is counts_.back()).
    std::string path_of_open() const {
        std::string p = "$." + key_;
        for (std::size_t l = 0; l + 1 < counts_.size(); ++l) p += "[" + std::to_string(counts_[l]) + "]";
        return p;
    }
    [[noreturn]] void fail(const std::string& where, const std::string& what) const { throw InputError(file_, where, what); }

    // A non-number, non-array element.
    bool element(const std::string& type) {
        const std::size_t level = counts_.size();
        if (!rank_ && level == 0) fail("$." + key_, "expected an array of numbers, got " + type);
        if (rank_ && level < rank_)
            fail(path(), "expected an array of " + std::to_string(tensor_.shape.at(level)) + " values, got " + type);
        fail(path(), "expected a number, got " + type);
    }
    bool number(double v) {
        const std::size_t level = counts_.size();
        if (!rank_) rank_ = level;
        if (level < rank_) fail(path(), "expected an array of " + std::to_string(tensor_.shape.at(level)) + " values, got a number");
        if (!std::isfinite(v) || std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max())) {
            std::ostringstream os;
            os << v;
            fail(path(), "expected a finite float32 number, got " + os.str());
        }
        tensor_.data.push_back(static_cast<float>(v));
        ++counts_.back();
        return true;
    }

    nlohmann::detail::json_sax_dom_parser<json> dom_;
    const std::string& file_;
    const std::string& key_;
    Tensor& tensor_;
    bool& streamed_;
    std::size_t depth_ = 0;            // open objects and arrays outside the tensor
    bool pending_ = false;             // the last key was `key` at the top level
    std::size_t rank_ = 0;             // levels of arrays, known at the first number
    std::vector<std::size_t> counts_;  // elements so far in each open array of the tensor
};

}  // namespace

// A lean reader of the common case: ASCII strings without escapes, numbers checked
// against JSON's grammar and converted with std::from_chars (correctly rounded, like
// nlohmann's strtod). It sends the same events to the same handler. Anything else
// (escapes, non-ASCII, a syntax error) makes it give up, and nlohmann's parser reads
// the text instead, with its own messages. Iterative: nesting depth costs no stack.
class FastReader {
public:
    FastReader(const std::string& text, TensorSax& sax) : p_(text.data()), end_(text.data() + text.size()), sax_(sax) {}

    // True when the whole text was read; false to fall back.
    bool read() {
        std::vector<char> open;  // '{' or '['
        bool expect_value = true;
        for (;;) {
            skip_space();
            if (expect_value) {
                if (p_ == end_) return false;
                const char c = *p_;
                if (c == '{' || c == '[') {
                    ++p_;
                    open.push_back(c);
                    if (c == '{') sax_.start_object(static_cast<std::size_t>(-1));
                    else sax_.start_array(static_cast<std::size_t>(-1));
                    skip_space();
                    if (p_ != end_ && *p_ == (c == '{' ? '}' : ']')) {
                        ++p_;
                        open.pop_back();
                        if (c == '{') sax_.end_object();
                        else sax_.end_array();
                        expect_value = false;
                        if (open.empty()) break;
                        continue;
                    }
                    if (c == '{' && !read_key()) return false;
                    continue;
                }
                if (!read_scalar()) return false;
                expect_value = false;
                if (open.empty()) break;
                continue;
            }
            // after a value: a comma or the end of the innermost container
            if (p_ == end_) return false;
            const char c = *p_++;
            if (c == ',') {
                expect_value = true;
                if (open.back() == '{' && !read_key()) return false;
            } else if (c == (open.back() == '{' ? '}' : ']')) {
                if (open.back() == '{') sax_.end_object();
                else sax_.end_array();
                open.pop_back();
                if (open.empty()) break;
            } else {
                return false;
            }
        }
        skip_space();
        return p_ == end_;
    }

private:
    void skip_space() {
        while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\t' || *p_ == '\r')) ++p_;
    }
    bool read_string(std::string& out) {
        if (p_ == end_ || *p_ != '"') return false;
        const char* start = ++p_;
        while (p_ != end_ && *p_ != '"') {
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '\\' || c < 0x20 || c >= 0x80) return false;  // escapes, control, non-ASCII: nlohmann's job
            ++p_;
        }
        if (p_ == end_) return false;
        out.assign(start, p_);
        ++p_;
        return true;
    }
    bool read_key() {
        skip_space();
        std::string k;
        if (!read_string(k)) return false;
        skip_space();
        if (p_ == end_ || *p_ != ':') return false;
        ++p_;
        sax_.key(k);
        return true;
    }
    bool literal(const char* word) {
        const std::size_t n = std::strlen(word);
        if (static_cast<std::size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return false;
        p_ += n;
        return true;
    }
    bool read_scalar() {
        const char c = *p_;
        if (c == '"') {
            std::string v;
            if (!read_string(v)) return false;
            sax_.string(v);
            return true;
        }
        if (c == 't') return literal("true") && sax_.boolean(true);
        if (c == 'f') return literal("false") && sax_.boolean(false);
        if (c == 'n') return literal("null") && sax_.null();
        return read_number();
    }
    // JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    bool read_number() {
        const char* start = p_;
        auto digits = [&] {
            const char* d = p_;
            while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
            return p_ != d;
        };
        if (p_ != end_ && *p_ == '-') ++p_;
        if (p_ == end_) return false;
        if (*p_ == '0') ++p_;
        else if (!digits()) return false;
        bool integral = true;
        if (p_ != end_ && *p_ == '.') {
            ++p_;
            integral = false;
            if (!digits()) return false;
        }
        if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
            ++p_;
            integral = false;
            if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
            if (!digits()) return false;
        }
        if (integral) {
            std::int64_t i = 0;
            if (std::from_chars(start, p_, i).ec == std::errc()) return sax_.number_integer(i);
            std::uint64_t u = 0;
            if (std::from_chars(start, p_, u).ec == std::errc()) return sax_.number_unsigned(u);
        }
        double v = 0.0;
        const auto r = std::from_chars(start, p_, v);
        if (r.ec != std::errc() || r.ptr != p_ || !std::isfinite(v)) return false;  // 1e400: nlohmann says why
        std::string token;  // the DOM keeps no text of numbers
        return sax_.number_float(v, token);
    }

    const char* p_;
    const char* end_;
    TensorSax& sax_;
};

json parse_with_tensor(const std::string& text, const std::string& file, const std::string& key, Tensor& tensor,
                       bool& streamed) {
    streamed = false;
    {
        json doc;
        TensorSax sax(doc, file, key, tensor, streamed);
        if (FastReader(text, sax).read()) return doc;  // InputErrors about the tensor propagate from here
    }
    streamed = false;
    tensor = Tensor{};
    return parse_with(file, [&] {
        json doc;
        TensorSax sax(doc, file, key, tensor, streamed);
        json::sax_parse(text, &sax);
        return doc;
    });
}

}  // namespace attnwalk::json_input
