// GPT-2's tokenizer: known ids, the pre-tokenisation rule, and the byte-level round trip.
// (tests/tokenizer_vs_npm.sh compares it with the npm package on a few hundred strings.)
#include "attnwalk/io/bpe.hpp"
#include "attnwalk/io/bpe_merge.hpp"
#include "attnwalk/io/string_ids.hpp"
#include "attnwalk/errors.hpp"
#include "test_util.hpp"

#include <stdexcept>

using namespace attnwalk;

TEST_SUITE("bpe") {
    TEST_CASE("bpe.known_ids") {
        const auto bpe = Bpe::load(test::source_path("data/gpt2"));
        CHECK(bpe->vocab_size() == 50257);
        CHECK(bpe->encode("Hello world is") == std::vector<std::size_t>{15496, 995, 318});
        CHECK(bpe->decode(50256) == "<|endoftext|>");
        CHECK(bpe->decode(995) == " world");
        // every string comes back byte for byte, whatever its characters
        for (const std::string s : {"It's 2026,   isn't it?", "東京 🤖\n\n x", "caf\xC3\xA9 \xF0\x9F\x9A\x80", "\t\t tab"}) {
            std::string back;
            for (std::size_t id : bpe->encode(s)) back += bpe->decode(id);
            CHECK(back == s);
        }
    }

    TEST_CASE("bpe.pretokenize_like_gpt2s_rule") {
        using V = std::vector<std::string>;
        CHECK(Bpe::pretokenize("Hello world") == V{"Hello", " world"});
        CHECK(Bpe::pretokenize("it's they're we'll") == V{"it", "'s", " they", "'re", " we", "'ll"});
        CHECK(Bpe::pretokenize("a  b") == V{"a", " ", " b"});           // a run of spaces leaves the last to the word
        CHECK(Bpe::pretokenize("a \n b") == V{"a", " \n", " b"});          // (as JavaScript's regex cuts it)
        CHECK(Bpe::pretokenize("end  ") == V{"end", "  "});             // at the end the run stays whole
        CHECK(Bpe::pretokenize("x123 4.5!?") == V{"x", "123", " 4", ".", "5", "!?"});
        CHECK(Bpe::pretokenize("naïve 東京") == V{"naïve", " 東京"});
    }

    TEST_CASE("bpe.merge_lowest_rank_first_leftmost_among_equals") {
        using attnwalk::bpe_merge::key;
        using attnwalk::bpe_merge::Rule;
        enum : std::size_t { a, b, aa, aaa, ab };
        attnwalk::bpe_merge::Rules rules;
        rules.insert(key(a, a), Rule{0, aa});
        rules.insert(key(aa, a), Rule{1, aaa});
        rules.insert(key(a, b), Rule{2, ab});
        std::vector<std::size_t> word{a, a, a, a, a};  // GPT-2's bpe(): a a → aa everywhere, left to right, then aa a
        attnwalk::bpe_merge::merge(word, rules);
        CHECK(word == std::vector<std::size_t>{aa, aaa});
        word = {a, a, a, b};  // aa first (rank 0), then aa·a (rank 1) before a·b (rank 2) could take the last a
        attnwalk::bpe_merge::merge(word, rules);
        CHECK(word == std::vector<std::size_t>{aaa, b});
        word = {b, a, b};  // one merge
        attnwalk::bpe_merge::merge(word, rules);
        CHECK(word == std::vector<std::size_t>{b, ab});
    }

    TEST_CASE("bpe.rules_table_keeps_the_first_rule_of_a_pair_and_finds_every_one_after_growing") {
        using attnwalk::bpe_merge::key;
        using attnwalk::bpe_merge::Rule;
        attnwalk::bpe_merge::Rules rules;
        CHECK(rules.find(key(1, 2)) == nullptr);  // empty: nothing, no crash
        for (std::uint32_t i = 0; i < 5000; ++i) CHECK(rules.insert(key(i, i + 1), Rule{i, 100000 + i}));
        CHECK_FALSE(rules.insert(key(7, 8), Rule{99, 99}));  // a later rank of the same pair is dropped
        CHECK(rules.size() == 5000);
        for (std::uint32_t i = 0; i < 5000; ++i) {
            const Rule* r = rules.find(key(i, i + 1));
            REQUIRE(r != nullptr);
            CHECK(r->rank == i);
            CHECK(r->merged == 100000 + i);
        }
        CHECK(rules.find(key(8, 7)) == nullptr);  // order matters
        CHECK(rules.find(key(0, 5000 + 1)) == nullptr);
    }

    TEST_CASE("bpe.string_ids_finds_every_key_once_and_only_those") {
        attnwalk::StringIds ids;
        CHECK_FALSE(ids.find("a"));
        std::vector<std::string> keys{"", "a", "ab", "Ġthe", "<0x0A>", std::string("\0x", 3), "東京"};
        for (int i = 0; i < 3000; ++i) keys.push_back("k" + std::to_string(i));
        for (std::size_t i = 0; i < keys.size(); ++i) CHECK(ids.insert(keys[i], i));
        CHECK_FALSE(ids.insert("ab", 42));  // the first id stays
        CHECK(ids.size() == keys.size());
        for (std::size_t i = 0; i < keys.size(); ++i) {
            const auto id = ids.find(keys[i]);
            REQUIRE(id);
            CHECK(*id == i);
        }
        CHECK_FALSE(ids.find("abc"));
        CHECK_FALSE(ids.find(std::string("\0", 1)));  // a prefix of a key with a NUL
        CHECK_FALSE(ids.find("k3000"));
    }

    TEST_CASE("bpe.bad_files") {
        const std::string dir = test::scratch() + "/bpe";
        (void)std::system(("mkdir -p " + dir).c_str());
        std::ofstream(dir + "/encoder.json") << R"({"a": 0, "b": 0})";
        std::ofstream(dir + "/vocab.bpe") << "#version: 0.2\na b\n";
        CHECK_THROWS_WITH_AS(Bpe::load(dir), doctest::Contains("id 0 is given twice"), InputError);
        std::ofstream(dir + "/encoder.json") << R"({"a": 0, "b": 1})";
        std::ofstream(dir + "/vocab.bpe") << "#version: 0.2\na b c\n";
        CHECK_THROWS_WITH_AS(Bpe::load(dir), doctest::Contains("line 2: expected two symbols"), InputError);
        std::ofstream(dir + "/encoder.json") << R"({"a": 0, "b": x})";
        CHECK_THROWS_WITH_AS(Bpe::load(dir), doctest::Contains("expected a token id"), InputError);
        std::ofstream(dir + "/encoder.json") << R"({"a": 0, "b": 1})";
        std::ofstream(dir + "/vocab.bpe") << "#version: 0.2\na b\n\xff \xfe\n";
        CHECK_THROWS_WITH_AS(Bpe::load(dir), doctest::Contains("line 3: not UTF-8 text"), InputError);
        CHECK_THROWS_WITH_AS(Bpe::load(dir, TokenizerUse::decode), doctest::Contains("line 3: not UTF-8 text"), InputError);  // read for its syntax
        std::ofstream(dir + "/vocab.bpe") << "#version: 0.2\na b c\n";
        CHECK_THROWS_WITH_AS(Bpe::load(dir, TokenizerUse::decode), doctest::Contains("line 2: expected two symbols"), InputError);
        CHECK_THROWS_AS(Bpe::load("/nonexistent"), InputError);
    }

    TEST_CASE("bpe.read_to_decode_ids_alone") {
        // The merges are not kept: every id names the same text, and encoding is refused.
        const auto all = Bpe::load(test::source_path("data/gpt2"));
        const auto names = Bpe::load(test::source_path("data/gpt2"), TokenizerUse::decode);
        REQUIRE(names->vocab_size() == all->vocab_size());
        for (std::size_t id = 0; id < all->vocab_size(); id += 97) CHECK(names->decode(id) == all->decode(id));
        CHECK(names->decode(50256) == all->decode(50256));
        CHECK(names->memory_bytes() < all->memory_bytes() / 2);
        CHECK_THROWS_AS((void)names->encode("Hello"), std::logic_error);
        CHECK_THROWS_AS((void)names->pieces("Hello"), std::logic_error);
    }
}
