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

    TEST_CASE("embeddings.missing_file") {
        CHECK_THROWS_AS(attnwalk::load_embeddings("/nonexistent/x.json"), InputError);
    }
}
