#include "attnwalk/embeddings.hpp"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <iterator>
#include <sstream>

#include "attnwalk/errors.hpp"
#include "attnwalk/json_input.hpp"

namespace attnwalk {

namespace {

// The textbook's sentence, compiled in so that every command runs with no arguments.
// data/your_journey.json holds the same text (a test checks that they agree).
const char* const builtin_json_text = R"({
  "tokens": ["Your", "journey", "starts", "with", "one", "step"],
  "embeddings": [
    [0.43, 0.15, 0.89],
    [0.55, 0.87, 0.66],
    [0.57, 0.85, 0.64],
    [0.22, 0.58, 0.33],
    [0.77, 0.25, 0.10],
    [0.05, 0.80, 0.55]
  ]
}
)";

}  // namespace

std::string source_name(const std::string& path) { return path == "-" ? "<stdin>" : path; }

std::string read_text_file(const std::string& path) {
    const std::string name = source_name(path);
    std::ifstream file;
    std::istream* in = &std::cin;
    if (path != "-") {
        file.open(path, std::ios::binary);
        if (!file) throw InputError(path, "", std::string("cannot open file: ") + std::strerror(errno));
        in = &file;
    }
    // Read in chunks so that an endless or huge stream stops at the limit; a regular
    // file's size is reserved up front (one allocation, no copies as the text grows).
    std::string text;
    if (path != "-") {
        std::error_code ec;
        const auto size = std::filesystem::file_size(path, ec);
        if (!ec && size <= max_input_bytes) text.reserve(static_cast<std::size_t>(size) + 1);
    }
    char chunk[1 << 16];
    while (in->read(chunk, sizeof chunk) || in->gcount() > 0) {
        text.append(chunk, static_cast<std::size_t>(in->gcount()));
        if (text.size() > max_input_bytes)
            throw InputError(name, "", "larger than " + std::to_string(max_input_bytes >> 20) +
                                           " MiB: attnwalk reads input files up to that size");
    }
    if (in->bad()) throw InputError(name, "", std::string("cannot read: ") + std::strerror(errno));
    return text;
}

Embeddings parse_embeddings(const std::string& text, const std::string& source) {
    using json_input::json;
    Tensor streamed_x;
    bool streamed = false;
    const json doc = json_input::parse_with_tensor(text, source, "embeddings", streamed_x, streamed);
    if (!doc.is_object())
        throw InputError(source, "$", "expected a JSON object with \"embeddings\", got " +
                                          json_input::type_name(doc));
    if (!doc.contains("embeddings"))
        throw InputError(source, "$", "missing \"embeddings\" (a T×d or B×T×d array of numbers)");

    Embeddings out;
    out.source = source;
    Tensor x = streamed ? std::move(streamed_x) : json_input::read_tensor(doc["embeddings"], source, "$.embeddings");
    if (x.shape.size() == 2) {
        x.shape.insert(x.shape.begin(), 1);  // one sequence: B = 1
    } else if (x.shape.size() == 3) {
        out.batched = true;
    } else {
        throw InputError(source, "$.embeddings",
                         "expected a T×d array (or B×T×d for a batch), got " +
                             std::to_string(x.shape.size()) + " levels of nesting (" +
                             json_input::shape_string(x.shape) + ")");
    }
    out.x = std::move(x);
    const std::size_t T = out.tokens_count();

    if (doc.contains("tokens")) {
        const json& tokens = doc["tokens"];
        if (!tokens.is_array())
            throw InputError(source, "$.tokens", "expected an array of strings, got " +
                                                     json_input::type_name(tokens));
        if (tokens.size() != T)
            throw InputError(source, "$.tokens",
                             "expected " + std::to_string(T) + " tokens (one per embedding row), got " +
                                 std::to_string(tokens.size()));
        for (std::size_t i = 0; i < tokens.size(); ++i) {
            if (!tokens[i].is_string())
                throw InputError(source, "$.tokens[" + std::to_string(i) + "]",
                                 "expected a string, got " + json_input::type_name(tokens[i]));
            const auto& token = tokens[i].get_ref<const std::string&>();
            if (token.size() > max_token_bytes)
                throw InputError(source, "$.tokens[" + std::to_string(i) + "]",
                                 "token is " + std::to_string(token.size()) + " bytes long; at most " +
                                     std::to_string(max_token_bytes) + " are allowed");
            out.tokens.push_back(token);
        }
    } else {
        for (std::size_t i = 0; i < T; ++i) out.tokens.push_back("t" + std::to_string(i));
    }
    return out;
}

Embeddings load_embeddings(const std::string& path) {
    return parse_embeddings(read_text_file(path), source_name(path));
}

const std::string& builtin_embeddings_json() {
    static const std::string text = builtin_json_text;
    return text;
}

Embeddings builtin_embeddings() { return parse_embeddings(builtin_embeddings_json(), "<built-in>"); }

Embeddings stack_batch(const Embeddings& input, std::size_t n) {
    Embeddings out = input;
    out.batched = true;
    out.x.shape[0] = input.x.shape[0] * n;
    out.x.data.clear();
    for (std::size_t i = 0; i < n; ++i)
        out.x.data.insert(out.x.data.end(), input.x.data.begin(), input.x.data.end());
    return out;
}

}  // namespace attnwalk
