#include "attnwalk/errors.hpp"
#include "attnwalk/io/vocab.hpp"
#include "test_util.hpp"

TEST_SUITE("vocab") {
    TEST_CASE("vocab.text_becomes_embeddings") {
        const auto vocab = attnwalk::parse_vocab(R"({"cats": [1, 2], "climb": [3, 4]})", "v.json");
        const auto e = attnwalk::embed_text("  climb cats\tclimb ", vocab, "sentence");
        CHECK(e.tokens == std::vector<std::string>{"climb", "cats", "climb"});
        CHECK(e.x.shape == std::vector<std::size_t>{1, 3, 2});
        CHECK(e.x.data == std::vector<float>{3, 4, 1, 2, 3, 4});
    }

    TEST_CASE("vocab.shipped_vocab_covers_the_builtin_sentence") {
        const auto vocab = attnwalk::load_vocab(test::source_path("data/vocab.json"));
        const auto e = attnwalk::embed_text("Your journey starts with one step", vocab, "sentence");
        CHECK(e.x.data == attnwalk::builtin_embeddings().x.data);
    }

    TEST_CASE("vocab.unknown_word_names_the_closest") {
        const auto vocab = attnwalk::parse_vocab(R"({"cats": [1], "climb": [3], "trees": [5]})", "v.json");
        CHECK_THROWS_WITH_AS(attnwalk::embed_text("cats clim", vocab, "sentence"),
                             "'clim' is not in the vocabulary v.json (closest: climb, cats, trees)", attnwalk::UsageError);
        CHECK_THROWS_AS(attnwalk::embed_text("   ", vocab, "sentence"), attnwalk::UsageError);
    }

    TEST_CASE("vocab.bad_files") {
        CHECK_THROWS_WITH_AS(attnwalk::parse_vocab("[]", "v.json"), doctest::Contains("expected a non-empty JSON object"), attnwalk::InputError);
        CHECK_THROWS_WITH_AS(attnwalk::parse_vocab(R"({"a": [1, 2], "b": [1]})", "v.json"),
                             "v.json: at $[\"b\"]: expected 2 numbers like the first word, got 1", attnwalk::InputError);
        CHECK_THROWS_WITH_AS(attnwalk::parse_vocab(R"({"a b": [1]})", "v.json"), doctest::Contains("without whitespace"), attnwalk::InputError);
        CHECK_THROWS_WITH_AS(attnwalk::parse_vocab(R"({"a": [[1]]})", "v.json"), doctest::Contains("expected a vector"), attnwalk::InputError);
    }
}
