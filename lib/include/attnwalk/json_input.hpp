// Helpers for validating JSON input with precise error locations. Shared by the
// embeddings and weights loaders; include only from lib/src and tests.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "attnwalk/trace.hpp"

namespace attnwalk::json_input {

using nlohmann::json;

// Parses text as JSON; a syntax error becomes an InputError with line and column.
json parse(const std::string& text, const std::string& file);

// Like parse, but the array under the top-level key `key` is read straight into `tensor`
// (validated exactly like read_tensor, with the same messages) instead of becoming JSON
// values: a 4096×768 embeddings file then costs its floats, not a tree of 3 million
// nodes. The returned document holds null in its place; `streamed` says whether it was
// found as an array (when it is anything else, it stays in the document).
json parse_with_tensor(const std::string& text, const std::string& file, const std::string& key, Tensor& tensor,
                       bool& streamed);

// A short description of a JSON value's type, for "expected X, got Y" messages.
std::string type_name(const json& value);

// Reads a numeric array of any rank ≥ 1 into a Tensor: rectangular, finite, float32 range.
// `path` is the JSON path of `value`, used in errors.
Tensor read_tensor(const json& value, const std::string& file, const std::string& path);

// Like read_tensor, and also checks the exact expected shape; `name` says what it is.
Tensor read_tensor_shaped(const json& value, const std::string& file, const std::string& path,
                          const std::vector<std::size_t>& expected, const std::string& name);

std::string shape_string(const std::vector<std::size_t>& shape);

}  // namespace attnwalk::json_input
