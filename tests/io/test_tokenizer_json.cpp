// tokenizer.json (io/tokenizer_json.cpp): the test folders' files read, one read for
// decoding alone, and each fault as one message naming the place.
#include <stdexcept>
#include <string>
#include <vector>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/tokenizer.hpp"
#include "test_util.hpp"

using namespace attnwalk;

TEST_SUITE("io") {
    TEST_CASE("io.tokenizer_json_reads_the_test_folders_and_names_what_it_cannot" * doctest::skip(!ATTNWALK_TOKENIZER_JSON)) {
        const auto llama = load_tokenizer_json(test::source_path("tests/data/models/tiny_llama/tokenizer.json"));
        const std::vector<std::size_t> ids = llama->encode("the cat");
        REQUIRE(ids.size() >= 2);
        CHECK(ids.front() == 318);  // <|begin_of_text|> from the post-processor
        std::string back;
        for (std::size_t k = 1; k < ids.size(); ++k) back += llama->decode(ids[k]);
        CHECK(back == "the cat");
        const auto gemma = load_tokenizer_json(test::source_path("tests/data/models/tiny_gemma3/tokenizer.json"));
        CHECK(gemma->encode("the") == std::vector<std::size_t>{2, 22, 27});
        const std::vector<std::size_t> cat = gemma->encode("the cat");
        std::string text;
        for (std::size_t k = 1; k < cat.size(); ++k) text += gemma->decode(cat[k]);  // ▁ decodes as a space
        CHECK(text == "the cat");
        CHECK_THROWS_WITH_AS(load_tokenizer_json(test::temp_file(R"({"model": {"type": "WordPiece"}})")),
                             doctest::Contains("model type \"WordPiece\" is not supported"), InputError);
        CHECK_THROWS_WITH_AS(
            load_tokenizer_json(test::temp_file(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": []}, "pre_tokenizer": {"type": "Whitespace"}})")),
            doctest::Contains("pre-tokenizer \"Whitespace\" is not supported"), InputError);
        CHECK_THROWS_WITH_AS(load_tokenizer_json(test::temp_file(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b"]}})")),
                             doctest::Contains("$.model.merges[0]"), InputError);
        CHECK_THROWS_WITH_AS(llama->encode("bad \xff byte"), doctest::Contains("not UTF-8"), UsageError);
    }

    TEST_CASE("io.tokenizer_json_read_to_decode_keeps_no_merges" * doctest::skip(!ATTNWALK_TOKENIZER_JSON)) {
        const std::string file = test::source_path("tests/data/models/tiny_llama/tokenizer.json");
        const auto full = load_tokenizer_json(file);
        const auto names = load_tokenizer_json(file, 1e12, TokenizerUse::decode);
        REQUIRE(names->vocab_size() == full->vocab_size());
        for (std::size_t id = 0; id < full->vocab_size(); ++id) CHECK(names->decode(id) == full->decode(id));
        CHECK(names->memory_bytes() < full->memory_bytes());
        CHECK(names->describe().find("merges not read") != std::string::npos);
        CHECK_THROWS_AS(names->encode("the cat"), std::logic_error);
        CHECK_THROWS_AS(names->pieces("the cat"), std::logic_error);
        // the merges are still read for their syntax, and the vocabulary checked in full
        CHECK_THROWS_WITH_AS(load_tokenizer_json(test::temp_file(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": ["a b",]}})"), 1e12,
                                                 TokenizerUse::decode),
                             doctest::Contains("not valid JSON"), InputError);
        CHECK_THROWS_WITH_AS(load_tokenizer_json(test::temp_file(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 0}, "merges": []}})")),
                             doctest::Contains("at $.model.vocab.b: id 0 is given twice"), InputError);
        CHECK_THROWS_WITH_AS(load_tokenizer_json(test::temp_file(R"({"model": {"type": "BPE", "vocab": {"a": 0, "a": 1}, "merges": []}})")),
                             doctest::Contains("at $.model.vocab.a: duplicate key \"a\""), InputError);
        CHECK_THROWS_WITH_AS(load_tokenizer_json(test::temp_file(R"({"model": {"type": "BPE", "vocab": {"a": 0.5}, "merges": []}})")),
                             doctest::Contains("at $.model.vocab.a: expected a token id"), InputError);
        CHECK_THROWS_WITH_AS(load_tokenizer_json(test::temp_file(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1, "ab": 2}, "merges": ["a b", "b"]}})")),
                             doctest::Contains("at $.model.merges[1]: expected two symbols"), InputError);
        CHECK_THROWS_WITH_AS(load_tokenizer_json(test::temp_file(R"({"model": {"type": "BPE", "vocab": {"a": 0, "b": 1}, "merges": ["a b"]}})")),
                             doctest::Contains("at $.model.merges[0]: \"ab\" is not in the vocabulary"), InputError);
        // a file is refused in its reader's order, whatever order the parser meets the faults in:
        // its syntax, then the model's type, then the vocabulary, then the merges
        CHECK_THROWS_WITH_AS(load_tokenizer_json(test::temp_file("{\"model\": {\"type\": \"BPE\", \"vocab\": {\"a\": 0, \"b\": 1}, \"merges\": [\"a b\",\n\"a\" \"b\"]}}")),
                             doctest::Contains("line 2, column 5: expected ',' or ']'"), InputError);
        CHECK_THROWS_WITH_AS(load_tokenizer_json(test::temp_file(R"({"model": {"type": "BPE", "vocab": {"a": 0.5, "merges": ["a b"]}})")),
                             doctest::Contains("not valid JSON"), InputError);
        CHECK_THROWS_WITH_AS(load_tokenizer_json(test::temp_file(R"({"model": {"vocab": {"a": 0.5}, "type": "WordPiece"}})")),
                             doctest::Contains("model type \"WordPiece\" is not supported"), InputError);
        CHECK_THROWS_WITH_AS(load_tokenizer_json(test::temp_file(R"({"model": {"type": "BPE", "merges": ["x"], "vocab": {"a": 0.5}}})")),
                             doctest::Contains("at $.model.vocab.a: expected a token id"), InputError);
        CHECK_THROWS_WITH_AS(load_tokenizer_json(test::temp_file(R"({"model": {"type": "BPE", "vocab": {"a": 0}, "merges": {"a": 1}}})")),
                             doctest::Contains("at $.model.merges: expected an array of merges"), InputError);
        // merges before the vocabulary (the order is the file's): the same rules
        const auto late = load_tokenizer_json(test::temp_file(R"({"model": {"type": "BPE", "merges": [["a", "b"]], "vocab": {"a": 0, "b": 1, "ab": 2}}})"));
        CHECK(late->encode("ab") == std::vector<std::size_t>{2});
    }
}
