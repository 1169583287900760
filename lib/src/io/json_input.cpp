// The one JSON reader (json_input.hpp): a parser that checks as it reads (depth, duplicate
// and unknown keys, numbers, UTF-8) and reads numeric arrays straight into tensors, naming
// the place of anything wrong. What it says of values (paths, quotes, sizes) is
// json_values.cpp.
#include "attnwalk/io/json_input.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <sstream>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/string_ids.hpp"

namespace attnwalk::json_input {

namespace {

constexpr std::size_t max_rank = 4;    // nothing attnwalk reads has more axes
constexpr std::size_t max_depth = 64;  // objects and arrays inside each other

std::string index_path(const std::string& path, std::size_t i) { return path + "[" + std::to_string(i) + "]"; }

// Where a value sits in the document, as a chain up to "$": written out as text only when
// an error names it (a 280,000-entry array costs no path strings).
struct Where {
    const Where* parent = nullptr;     // null at the top
    const std::string* key = nullptr;  // a member's key; null for an array's element
    std::size_t index = 0;             // an element's index
    std::string text() const {
        if (!parent) return "$";
        return key ? member_path(parent->text(), *key) : index_path(parent->text(), index);
    }
};

std::string number_text(double v) {
    std::ostringstream os;
    os << v;
    return os.str();
}

// A numeric array, read as it is parsed. The shape comes from the first elements;
// later arrays must match it; every element must be a finite float32 number.
class TensorReader {
public:
    TensorReader(const std::string& file, const Where& path) : file_(file), path_(path) {}

    void start_array() {
        const std::size_t level = counts_.size();
        if (rank_ && level >= rank_) fail(element_path(), "expected a number, got an array");
        if (!rank_ && level >= max_rank)
            fail(element_path(), "nested too deeply: at most " + std::to_string(max_rank) + " levels of arrays");
        counts_.push_back(0);
    }
    // Returns true when the outermost array closed: the tensor is complete.
    bool end_array() {
        const std::size_t level = counts_.size() - 1, count = counts_.back();
        if (!rank_ && count == 0) fail(open_path(), "expected a non-empty array of numbers, got []");
        if (tensor_.shape.size() <= level) tensor_.shape.resize(level + 1, 0);  // 0: not known yet
        if (tensor_.shape[level] == 0) {
            tensor_.shape[level] = count;  // the first array of this level: its length is the shape
        } else if (count != tensor_.shape[level]) {
            const std::string like = level == 0 ? "" : " (like the first one)";
            fail(open_path(), "ragged array: expected " + std::to_string(tensor_.shape[level]) + " values" + like + ", got " +
                                  std::to_string(count));
        }
        counts_.pop_back();
        if (counts_.empty()) return true;
        ++counts_.back();
        return false;
    }
    void number(double v, const char* text, std::size_t size) {
        const std::size_t level = counts_.size();
        if (!rank_) rank_ = level;
        if (level < rank_) fail(element_path(), "expected an array of " + std::to_string(tensor_.shape.at(level)) + " values, got a number");
        if (!std::isfinite(v) || std::fabs(v) > static_cast<double>(std::numeric_limits<float>::max()))
            fail(element_path(), "expected a finite float32 number, got " +
                                     (std::isfinite(v) ? number_text(v) : std::string(text, std::min<std::size_t>(size, 40))));
        tensor_.data.push_back(static_cast<float>(v));
        ++counts_.back();
    }
    // Anything else where an element belongs.
    [[noreturn]] void other(const std::string& type) {
        const std::size_t level = counts_.size();
        if (rank_ && level < rank_)
            fail(element_path(), "expected an array of " + std::to_string(tensor_.shape.at(level)) + " values, got " + type);
        fail(element_path(), "expected a number, got " + type);
    }
    Tensor take() {
        tensor_.shape.resize(rank_);
        return std::move(tensor_);
    }

private:
    // The path of the element about to be added to the innermost open array.
    std::string element_path() const {
        std::string p = path_.text();
        for (std::size_t count : counts_) p = index_path(p, count);
        return p;
    }
    // The path of the innermost open array.
    std::string open_path() const {
        std::string p = path_.text();
        for (std::size_t l = 0; l + 1 < counts_.size(); ++l) p = index_path(p, counts_[l]);
        return p;
    }
    [[noreturn]] void fail(const std::string& where, const std::string& what) const { throw InputError(file_, where, what); }

    const std::string& file_;
    const Where& path_;  // written out only for an error
    Tensor tensor_;
    std::size_t rank_ = 0;             // levels of arrays, known at the first number
    std::vector<std::size_t> counts_;  // elements so far in each open array
};

class Parser {
public:
    Parser(std::string_view text, const std::string& file, bool tensors = true, const std::vector<Stream>* streams = nullptr)
        : text_(text), file_(file), p_(text.data()), end_(p_ + text.size()), tensors_(tensors), streams_(streams) {}

    Value document(const std::vector<std::string>* keep) {
        skip_space();
        Value v;
        if (const Stream* whole = streamed_document()) {
            v = streamed_value(*whole, Where{}, 0);
        } else if (keep && p_ != end_ && *p_ == '{') {
            v = object(Where{}, 0, keep);
        } else {
            v = value(Where{}, 0, true);
        }
        skip_space();
        if (p_ != end_) syntax("unexpected " + describe_here() + " after the end of the document");
        return v;
    }

private:
    // ---- errors ------------------------------------------------------------------------
    [[noreturn]] void syntax(const std::string& what) const {
        std::size_t line = 1, column = 1;
        for (const char* c = text_.data(); c < p_ && c < end_; ++c) {
            if (*c == '\n') {
                ++line;
                column = 1;
            } else if ((static_cast<unsigned char>(*c) & 0xC0) != 0x80) {
                ++column;
            }
        }
        throw InputError(file_, "", "not valid JSON: parse error at line " + std::to_string(line) + ", column " +
                                        std::to_string(column) + ": " + what);
    }
    std::string describe_here() const {
        if (p_ == end_) return "end of input";
        if (*p_ == '\0') return "NUL byte (a binary file?)";
        const auto c = static_cast<unsigned char>(*p_);
        if (c < 0x20 || c == 0x7f) {
            char buf[8];
            std::snprintf(buf, sizeof buf, "0x%02X", c);
            return std::string("control character ") + buf;
        }
        if (c >= 0x80) return "non-ASCII character";
        return std::string("'") + *p_ + "'";
    }
    [[noreturn]] void expected(const std::string& what) const { syntax("expected " + what + ", got " + describe_here()); }

    // ---- lexing --------------------------------------------------------------------------
    void skip_space() {
        while (p_ != end_ && (*p_ == ' ' || *p_ == '\n' || *p_ == '\t' || *p_ == '\r')) ++p_;
    }
    bool literal(const char* word) {
        const std::size_t n = std::strlen(word);
        if (static_cast<std::size_t>(end_ - p_) < n || std::memcmp(p_, word, n) != 0) return false;
        p_ += n;
        return true;
    }
    unsigned hex4() {
        if (end_ - p_ < 4) syntax("a \\u escape needs 4 hex digits");
        unsigned code = 0;
        for (int i = 0; i < 4; ++i, ++p_) {
            const char c = *p_;
            code <<= 4;
            if (c >= '0' && c <= '9') code |= static_cast<unsigned>(c - '0');
            else if (c >= 'a' && c <= 'f') code |= static_cast<unsigned>(c - 'a' + 10);
            else if (c >= 'A' && c <= 'F') code |= static_cast<unsigned>(c - 'A' + 10);
            else syntax("a \\u escape needs 4 hex digits");
        }
        return code;
    }
    // The length of a valid UTF-8 sequence at p_, or 0.
    std::size_t utf8_length() const { return utf8_sequence_length(p_, end_); }
    // A string; `out` null skips it.
    void string(std::string* out) {
        if (p_ == end_ || *p_ != '"') expected("a string");
        ++p_;
        for (;;) {
            const char* run = p_;  // plain ASCII in one piece
            while (p_ != end_ && *p_ != '"' && *p_ != '\\' && static_cast<unsigned char>(*p_) >= 0x20 &&
                   static_cast<unsigned char>(*p_) < 0x80)
                ++p_;
            if (out) out->append(run, p_);
            if (p_ == end_) syntax("a string is not closed before the end of input");
            const auto c = static_cast<unsigned char>(*p_);
            if (c == '"') {
                ++p_;
                return;
            }
            if (c == '\\') {
                ++p_;
                if (p_ == end_) syntax("a string is not closed before the end of input");
                const char e = *p_++;
                switch (e) {
                    case '"': case '\\': case '/': if (out) *out += e; break;
                    case 'b': if (out) *out += '\b'; break;
                    case 'f': if (out) *out += '\f'; break;
                    case 'n': if (out) *out += '\n'; break;
                    case 'r': if (out) *out += '\r'; break;
                    case 't': if (out) *out += '\t'; break;
                    case 'u': {
                        unsigned code = hex4();
                        if (code >= 0xD800 && code <= 0xDBFF) {
                            if (!literal("\\u")) syntax("a \\u escape of a high surrogate must be followed by a low one");
                            const unsigned low = hex4();
                            if (low < 0xDC00 || low > 0xDFFF) syntax("a \\u escape of a high surrogate must be followed by a low one");
                            code = 0x10000 + ((code - 0xD800) << 10) + (low - 0xDC00);
                        } else if (code >= 0xDC00 && code <= 0xDFFF) {
                            syntax("a lone low surrogate in a \\u escape");
                        }
                        if (out) *out += utf8(code);
                        break;
                    }
                    default: p_ -= 1; syntax("invalid escape \\" + std::string(1, e) + " in a string");
                }
                continue;
            }
            if (c < 0x20) syntax("a " + describe_here() + " in a string (escape it)");
            const std::size_t n = utf8_length();
            if (!n) syntax("ill-formed UTF-8 in a string");
            if (out) out->append(p_, n);
            p_ += n;
        }
    }
    // JSON's number grammar: -?(0|[1-9][0-9]*)(\.[0-9]+)?([eE][+-]?[0-9]+)?
    double number(const char*& start) {
        start = p_;
        auto digits = [&] {
            const char* d = p_;
            while (p_ != end_ && *p_ >= '0' && *p_ <= '9') ++p_;
            return p_ != d;
        };
        if (p_ != end_ && *p_ == '-') ++p_;
        if (p_ != end_ && *p_ == '0') ++p_;
        else if (!digits()) { p_ = start; expected("a value"); }
        if (p_ != end_ && *p_ == '.') {
            ++p_;
            if (!digits()) expected("a digit after the decimal point");
        }
        if (p_ != end_ && (*p_ == 'e' || *p_ == 'E')) {
            ++p_;
            if (p_ != end_ && (*p_ == '+' || *p_ == '-')) ++p_;
            if (!digits()) expected("a digit in the exponent");
        }
        double v = 0.0;
        const auto r = std::from_chars(start, p_, v);
        if (r.ec == std::errc::result_out_of_range) return start[0] == '-' ? -INFINITY : INFINITY;  // 1e400: said by the reader of it
        return v;
    }

    // ---- values ----------------------------------------------------------------------------
    void enter(std::size_t depth) const {
        if (depth > max_depth) syntax("nested more than " + std::to_string(max_depth) + " levels deep");
    }

    // The first character after the '[' s of a run of array starts: a number starts a tensor.
    bool tensor_ahead() const {
        for (const char* q = p_; q != end_; ++q) {
            const char c = *q;
            if (c == '[' || c == ' ' || c == '\n' || c == '\t' || c == '\r') continue;
            return c == '-' || (c >= '0' && c <= '9');
        }
        return false;
    }

    Value value(const Where& path, std::size_t depth, bool store) {
        enter(depth);
        skip_space();
        if (p_ == end_) expected("a value");
        Value v;
        switch (*p_) {
            case '{': return object(path, depth, nullptr, store);
            case '[': return tensors_ && tensor_ahead() ? tensor(path, depth, store) : array(path, depth, store);
            case '"':
                v.type = Value::Type::string;
                string(store ? &v.string : nullptr);
                return v;
            case 't':
            case 'f':
            case 'n':
                if (literal("true")) v = boolean(true);
                else if (literal("false")) v = boolean(false);
                else if (literal("null")) v.type = Value::Type::null;
                else expected("a value");
                return v;
            default: {
                const char* start = nullptr;
                v.type = Value::Type::number;
                v.number = number(start);
                return v;
            }
        }
    }
    static Value boolean(bool b) {
        Value v;
        v.type = Value::Type::boolean;
        v.boolean = b;
        return v;
    }

    Value tensor(const Where& path, std::size_t depth, bool store) {
        TensorReader reader(file_, path);
        for (;;) {
            skip_space();
            if (p_ == end_) expected("a value");
            if (*p_ == '[') {
                ++p_;
                reader.start_array();
                skip_space();
                if (p_ != end_ && *p_ == ']') {
                    ++p_;
                    if (reader.end_array() || !comma_or_end(reader)) break;
                }
                continue;
            }
            const char c = *p_;
            if (c == '-' || (c >= '0' && c <= '9')) {
                const char* start = nullptr;
                const double v = number(start);
                reader.number(v, start, static_cast<std::size_t>(p_ - start));
            } else if (c == '"' || c == '{' || c == 't' || c == 'f' || c == 'n') {
                const Value other = value(path, depth + 1, false);  // read it for the syntax, then say what it is
                reader.other(type_name(other));
            } else {
                expected("a value");
            }
            // after an element: ',' or the end of one or more arrays
            if (!comma_or_end(reader)) break;
        }
        Value v;
        v.type = Value::Type::tensor;
        if (store) v.tensor = std::make_shared<const Tensor>(reader.take());
        return v;
    }
    // After an element of a tensor: a comma (true: more to read), or ']'s closing arrays
    // (false once the outermost closed).
    bool comma_or_end(TensorReader& reader) {
        for (;;) {
            skip_space();
            if (p_ == end_) expected("',' or ']'");
            if (*p_ == ',') {
                ++p_;
                return true;
            }
            if (*p_ != ']') expected("',' or ']'");
            ++p_;
            if (reader.end_array()) return false;
        }
    }

    // After a member or an element: true at a comma (more follow), false at `close`.
    bool more(char close) {
        skip_space();
        if (p_ != end_ && (*p_ == ',' || *p_ == close)) return *p_++ == ',';
        expected(std::string("',' or '") + close + "'");
    }

    Value array(const Where& path, std::size_t depth, bool store) {
        ++p_;  // '['
        Value v;
        v.type = Value::Type::array;
        skip_space();
        if (p_ != end_ && *p_ == ']') {
            ++p_;
            return v;
        }
        for (std::size_t i = 0;; ++i) {
            Value element = value(Where{&path, nullptr, i}, depth + 1, store);
            if (store) v.array.push_back(std::move(element));
            if (!more(']')) return v;
        }
    }

    Value object(const Where& path, std::size_t depth, const std::vector<std::string>* keep, bool store = true) {
        enter(depth);
        ++p_;  // '{'
        Value v;
        v.type = Value::Type::object;
        StringIds seen;  // the keys so far, for duplicates
        skip_space();
        if (p_ != end_ && *p_ == '}') {
            ++p_;
            return v;
        }
        for (;;) {
            skip_space();
            std::string key;
            string(&key);
            skip_space();
            if (p_ == end_ || *p_ != ':') expected("':' after a key");
            ++p_;
            const Where at{&path, &key};
            if (!seen.insert(key, 0)) throw InputError(file_, at.text(), "duplicate key \"" + key + "\": each key may appear once");
            const bool kept = store && (!keep || std::find(keep->begin(), keep->end(), key) != keep->end());
            const Stream* stream = kept ? streamed(at, depth + 1) : nullptr;
            Value member = stream ? streamed_value(*stream, at, depth + 1) : value(at, depth + 1, kept);
            if (kept) v.object.emplace_back(std::move(key), std::move(member));
            if (!more('}')) return v;
        }
    }

    // A stream of the document's own members (an empty path), if any.
    const Stream* streamed_document() const {
        if (streams_)
            for (const Stream& s : *streams_)
                if (s.path.empty()) return &s;
        return nullptr;
    }
    // The stream whose path leads to the member `at` (`depth` keys from the top), if any.
    const Stream* streamed(const Where& at, std::size_t depth) const {
        if (!streams_) return nullptr;
        for (const Stream& s : *streams_) {
            if (s.path.size() != depth) continue;
            const Where* w = &at;
            std::size_t k = depth;
            while (k > 0 && w->key && *w->key == s.path[k - 1]) {
                w = w->parent;
                k -= 1;
            }
            if (k == 0 && !w->parent) return &s;
        }
        return nullptr;
    }
    // A streamed object or array: each member (element) handed to the stream's reader, not stored.
    Value streamed_value(const Stream& stream, const Where& path, std::size_t depth) {
        enter(depth);
        skip_space();
        if (p_ == end_ || (*p_ != '{' && *p_ != '[')) return value(path, depth, true);
        Value v;
        v.type = *p_ == '{' ? Value::Type::object : Value::Type::array;
        if (!stream.each) {
            value(path, depth, false);
            return v;
        }
        const bool object = v.type == Value::Type::object;
        ++p_;
        skip_space();
        if (p_ != end_ && *p_ == (object ? '}' : ']')) {
            ++p_;
            return v;
        }
        std::string key;
        for (std::size_t i = 0;; ++i) {
            if (object) {
                skip_space();
                key.clear();
                string(&key);
                skip_space();
                if (p_ == end_ || *p_ != ':') expected("':' after a key");
                ++p_;
            }
            const Where at = object ? Where{&path, &key} : Where{&path, nullptr, i};
            Value member = value(at, depth + 1, true);
            const bool again = more(object ? '}' : ']');  // the syntax first, as for a stored value
            if (!stream.each(object ? &key : nullptr, i, std::move(member)))
                throw InputError(file_, at.text(), "duplicate key \"" + key + "\": each key may appear once");
            if (!again) return v;
        }
    }

    std::string_view text_;
    const std::string& file_;
    const char* p_;
    const char* end_;
    bool tensors_ = true;                        // numeric arrays become Tensors
    const std::vector<Stream>* streams_ = nullptr;  // members handed over as they are read
};

}  // namespace

const Value* Value::find(const std::string& key) const {
    for (const auto& [k, v] : object)
        if (k == key) return &v;
    return nullptr;
}

Value parse(const std::string& text, const std::string& file, const std::vector<std::string>* keep) {
    return Parser(text, file).document(keep);
}

Value parse_plain(const std::string& text, const std::string& file) {
    return Parser(text, file, false).document(nullptr);
}

Value parse_plain(std::string_view text, const std::string& file, const std::vector<Stream>& streams) {
    return Parser(text, file, false, &streams).document(nullptr);
}

const Tensor& tensor_of(const Value& value, const std::string& file, const std::string& path) {
    if (value.type == Value::Type::tensor) {
        static const Tensor none;
        return value.tensor ? *value.tensor : none;
    }
    if (value.type != Value::Type::array) throw InputError(file, path, "expected an array of numbers, got " + type_name(value));
    // Not a tensor: say what the first element that is not an array is.
    const Value* cur = &value;
    std::string at = path;
    for (std::size_t level = 0;; ++level) {
        if (cur->type == Value::Type::array && cur->array.empty())
            throw InputError(file, at, "expected a non-empty array of numbers, got []");
        if (cur->type != Value::Type::array) {
            if (level == 0) throw InputError(file, at, "expected an array of numbers, got " + type_name(*cur));
            throw InputError(file, at, "expected a number, got " + type_name(*cur));
        }
        if (level == max_rank) throw InputError(file, at, "nested too deeply: at most " + std::to_string(max_rank) + " levels of arrays");
        cur = &cur->array.front();
        at = index_path(at, 0);
    }
}

std::string display_text(double value) {
    char buf[40];
    for (int digits = 6; digits <= 17; ++digits) {  // six, or as many more as tell the value from ±1
        std::snprintf(buf, sizeof buf, "%.*g", digits, value);
        const double shown = std::strtod(buf, nullptr);
        if (std::fabs(shown) != 1.0 || shown == value) break;
    }
    return buf;
}

std::string float32_text(float v) {
    char buf[32];
    for (int digits = 1; digits <= 9; ++digits) {
        std::snprintf(buf, sizeof buf, "%.*g", digits, static_cast<double>(v));
        if (std::strtof(buf, nullptr) == v) break;
    }
    return buf;
}

}  // namespace attnwalk::json_input
