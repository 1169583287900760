// The one JSON reader of attnwalk's input files (embeddings, weights, vocabularies).
//
// It reads the whole text once, with JSON's grammar, and builds a small tree of Values.
// An array whose first number comes before anything else (`[[0.43, ...`) is read as a
// Tensor while it is parsed: rectangular, at most 4 levels, every element a finite
// float32 number, each fault reported with its JSON path. That is the one place those
// checks live, and it keeps a large embeddings file as floats rather than a tree.
// Every fault is an InputError naming the file, the place and what was expected:
// syntax errors with line and column, duplicate keys, a NUL byte.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "attnwalk/trace.hpp"

namespace attnwalk::json_input {

struct Value {
    enum class Type { null, boolean, number, string, array, object, tensor };
    Type type = Type::null;
    bool boolean = false;
    double number = 0.0;
    std::string string;
    std::vector<Value> array;                           // an array that is not a tensor
    std::vector<std::pair<std::string, Value>> object;  // members in file order, keys unique
    std::shared_ptr<const Tensor> tensor;               // a numeric array (apart: a Value is 112 bytes, not 176)

    bool is_object() const { return type == Type::object; }
    const Value* find(const std::string& key) const;    // an object's member, or null
};

// Parses `text`; `file` names it in errors. With `keep`, only those members of the
// top-level object are stored: the others are read for syntax and then dropped.
Value parse(const std::string& text, const std::string& file, const std::vector<std::string>* keep = nullptr);

// The same, with every array an array of Values: numbers stay doubles (exact integers up
// to 2^53, e.g. the byte offsets of a safetensors header).
Value parse_plain(const std::string& text, const std::string& file);

// A large object or array handed over member by member (element by element) as it is
// read, instead of stored in the tree: a tokenizer's 128,000-token vocabulary and 280,000
// merges cost no Value each. The tree keeps an empty object (array) in its place; a value
// of another type there is stored as usual, for its reader to refuse. An empty path streams
// the document itself (a safetensors header's tensors).
struct Stream {
    std::vector<std::string> path;  // the keys from the top object down: {"model", "vocab"}
    // Gets each member's key (null for an array's element), its index and its value, once
    // the comma or bracket after it is read; a member returns false when its key came
    // before (the parser then says "duplicate key"). An exception it throws ends the
    // parse. Null: the value is read for its syntax alone and dropped.
    std::function<bool(const std::string* key, std::size_t index, Value&& value)> each;
};
Value parse_plain(std::string_view text, const std::string& file, const std::vector<Stream>& streams);

// What parsing JSON text into Values costs: about 21 bytes of memory per byte of text
// (measured on a 67 MB safetensors header of a million entries: a 1.4 GB peak; 1.9 GB
// before a Value held its tensor apart), counted as 32.
constexpr double parse_bytes_per_text_byte = 32.0;
// MemoryBudgetError when parsing `text_bytes` of `file`'s JSON (`what`: "header", "index")
// would take more than `memory_budget` bytes, at `bytes_per_text_byte` (a reader that streams
// its members costs less than the tree): checked before the parse.
void check_parse_budget(const std::string& file, const std::string& what, double text_bytes, double memory_budget,
                        double bytes_per_text_byte = parse_bytes_per_text_byte);
// "900 bytes", "46.9 KiB", "73.3 MiB", "2.3 GiB": a size in a message.
std::string size_text(double bytes);

// "null", "a boolean", "a number", "a string", "an array", "an object".
std::string type_name(const Value& value);

// Values made in code, as a reader of the JSON expects them (a GGUF file's metadata as
// config.json's fields, its tokenizer as a tokenizer.json).
Value number_value(double x);
Value string_value(std::string s);
Value bool_value(bool b);
Value object_value(std::vector<std::pair<std::string, Value>> members = {});
Value array_value(std::vector<Value> items = {});

// The length of the valid UTF-8 sequence of 2 to 4 bytes at p (before end), as the
// standard defines it (no overlong forms, no surrogates, nothing above U+10FFFF), or 0.
std::size_t utf8_sequence_length(const char* p, const char* end);
// A number as its shortest text: a whole number below 10^15 as digits, else the fewest
// significant digits that read back to it ("1e+300", not 300 digits).
std::string number_text(double value);
// A float32 as the fewest significant digits (%g) that read back to the same float32
// (a GGUF file's scales and factors, written out).
std::string float32_text(float value);
// A number as a person reads it in a title or a header: six significant digits (%g), or,
// where those would read as ±1 and the value is not (a dropout rate of 0.9999999), as many
// more as tell it apart.
std::string display_text(double value);
// A code point as UTF-8 (the JSON reader's \u escapes, the byte-level tokenizers' map).
std::string utf8(std::uint32_t cp);
// Whether `text` is valid UTF-8 throughout.
bool valid_utf8(const std::string& text);

// The value as a tensor of any rank ≥ 1 (checked while parsing); any other value is an
// InputError at `path` saying why it is not one.
const Tensor& tensor_of(const Value& value, const std::string& file, const std::string& path);
// Like tensor_of, and also the exact shape; `name` says what it is.
const Tensor& tensor_of(const Value& value, const std::string& file, const std::string& path,
                        const std::vector<std::size_t>& expected, const std::string& name);

std::string shape_string(const std::vector<std::size_t>& shape);

// Refuses a member of `object` (at `path`) whose key is not in `known`, naming the closest
// known key. Keys starting with '_' are comments and always allowed.
void check_keys(const Value& object, const std::string& file, const std::string& path, const std::vector<std::string>& known);

// `text` as a JSON string, quotes included.
std::string quote(const std::string& text);

// `key` as it appears in a JSON path: .key, or ["key"] when it is not a plain name.
std::string member_path(const std::string& path, const std::string& key);

}  // namespace attnwalk::json_input
