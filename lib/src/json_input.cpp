#include "attnwalk/json_input.hpp"

#include <cmath>
#include <limits>
#include <sstream>

#include "attnwalk/errors.hpp"

namespace attnwalk::json_input {

json parse(const std::string& text, const std::string& file) {
    try {
        return json::parse(text);
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

}  // namespace attnwalk::json_input
