#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/errors.hpp"
#include "test_util.hpp"

using attnwalk::InputError;
using attnwalk::parse_embeddings;

namespace {
std::string error_of(const std::string& text) {
    try {
        parse_embeddings(text, "in.json");
    } catch (const InputError& e) {
        return e.what();
    }
    return "";
}
}  // namespace

TEST_SUITE("embeddings") {
    TEST_CASE("embeddings.builtin_is_the_textbook_sentence") {
        const auto e = attnwalk::builtin_embeddings();
        CHECK(e.tokens.size() == 6);
        CHECK(e.tokens[1] == "journey");
        CHECK(e.dim() == 3);
        CHECK_FALSE(e.batched);
        CHECK(e.x.data[3] == 0.55f);
    }

    TEST_CASE("embeddings.shipped_file_equals_builtin") {
        const auto file = attnwalk::load_embeddings(test::source_path("data/your_journey.json"));
        const auto builtin = attnwalk::builtin_embeddings();
        CHECK(file.tokens == builtin.tokens);
        CHECK(file.x.data == builtin.x.data);
        CHECK(file.x.shape == builtin.x.shape);
    }

    TEST_CASE("embeddings.tokens_are_optional") {
        const auto e = parse_embeddings(R"({"embeddings": [[1, 2], [3, 4]]})", "x");
        CHECK(e.tokens == std::vector<std::string>{"t1", "t2"});
    }

    TEST_CASE("embeddings.batch_input") {
        const auto e = parse_embeddings(R"({"embeddings": [[[1, 2]], [[3, 4]]]})", "x");
        CHECK(e.batched);
        CHECK(e.batch() == 2);
        CHECK(e.tokens_count() == 1);
    }

    TEST_CASE("embeddings.bad_input_names_file_and_place") {
        CHECK(error_of("{").find("in.json: not valid JSON") != std::string::npos);
        CHECK(error_of("[1, 2]").find("at $: expected a JSON object") != std::string::npos);
        CHECK(error_of("{}").find("missing \"embeddings\"") != std::string::npos);
        CHECK(error_of(R"({"embeddings": []})").find("at $.embeddings: expected a non-empty array") != std::string::npos);
        CHECK(error_of(R"({"embeddings": [[1, 2], [3]]})").find("at $.embeddings[1]: ragged array: expected 2 values") != std::string::npos);
        CHECK(error_of(R"({"embeddings": [[1, "a"]]})").find("at $.embeddings[0][1]: expected a number, got a string") != std::string::npos);
        CHECK(error_of(R"({"embeddings": [[1, 1e39]]})").find("expected a finite float32 number") != std::string::npos);
        CHECK(error_of(R"({"embeddings": [[1, NaN]]})").find("not valid JSON") != std::string::npos);
        CHECK(error_of(R"({"embeddings": [[1]], "tokens": ["a", "b"]})").find("at $.tokens: expected 1 tokens") != std::string::npos);
        CHECK(error_of(R"({"embeddings": [[1]], "tokens": [3]})").find("at $.tokens[0]: expected a string") != std::string::npos);
        CHECK(error_of(R"({"embeddings": [[[1, 2]], [[3, 4], [5, 6]]]})").find("at $.embeddings[1]: ragged array") != std::string::npos);
        CHECK(error_of(R"({"embeddings": [[[[1]]]]})").find("levels of nesting") != std::string::npos);
        CHECK(error_of(R"({"embeddings": 5})").find("expected an array of numbers, got a number") != std::string::npos);
    }

    TEST_CASE("embeddings.a_tensor_name_may_hold_colons") {
        // FILE is the longest part before a colon that is a safetensors file
        const auto st = [](const std::string& header, std::size_t data) {
            std::string bytes;
            for (int i = 0; i < 8; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
            return test::temp_file(bytes + header + std::string(data, '\0'), ".safetensors");
        };
        const std::string f = st(R"({"y:z": {"dtype": "F32", "shape": [1, 2], "data_offsets": [0, 8]},)"
                                 R"( "y": {"dtype": "F32", "shape": [1, 2], "data_offsets": [8, 16]}})",
                                 16);
        const attnwalk::InputSource a = attnwalk::input_source(f + ":y:z");
        CHECK(a.safetensors);
        CHECK(a.file == f);
        CHECK(a.tensor == "y:z");
        CHECK(attnwalk::input_source(f + ":y").tensor == "y");
        CHECK(attnwalk::input_source(f).tensor.empty());
        CHECK_FALSE(attnwalk::input_source("/nonexistent/x.json:y").safetensors);
        CHECK(attnwalk::load_embeddings(f + ":y:z").source == f + ":y:z");
        CHECK_THROWS_WITH_AS(attnwalk::load_embeddings(f + ":y:w"), doctest::Contains("no such tensor (it holds y, y:z)"), InputError);
        CHECK_THROWS_WITH_AS(attnwalk::load_embeddings(f), doctest::Contains(":NAME"), InputError);
    }

    TEST_CASE("embeddings.a_safetensors_tensor_is_counted_and_checked_before_it_is_used") {
        const std::string header = R"({"x": {"dtype": "BF16", "shape": [64, 64], "data_offsets": [0, 8192]}})";
        std::string bytes;
        for (int i = 0; i < 8; ++i) bytes += static_cast<char>((header.size() >> (8 * i)) & 0xFF);
        std::string values;
        for (int i = 0; i < 64 * 64; ++i) values += i == 64 ? std::string("\xC0\x7F", 2) : std::string("\x80\x3F", 2);  // 1, and NaN at [1, 0]
        const std::string f = test::temp_file(bytes + header + values, ".safetensors");
        // its 8 KiB where they lie and 16 KiB of float32: 24 KiB, refused before they are read
        CHECK_THROWS_WITH_AS(attnwalk::load_embeddings(f, 24575.0), doctest::Contains("as float32 would take about 24.0 KiB"),
                             attnwalk::MemoryBudgetError);
        CHECK_THROWS_WITH_AS(attnwalk::load_embeddings(f, 24576.0), doctest::Contains("at $.x[1, 0]: expected a finite number, got nan"),
                             InputError);
    }

    TEST_CASE("embeddings.missing_file") {
        CHECK_THROWS_AS(attnwalk::load_embeddings("/nonexistent/x.json"), InputError);
    }
}
