// The JSON reader's streams: a large object or array handed over member by member, with
// the same syntax checks, duplicate-key errors and places as a stored one.
#include "test_util.hpp"

#include <string>
#include <utility>
#include <vector>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/json_input.hpp"

using namespace attnwalk;
using json_input::Value;

TEST_SUITE("io") {
    TEST_CASE("io.json_stream_hands_over_members_and_keeps_the_rest") {
        const std::string text = R"({"a": 1, "model": {"type": "BPE", "vocab": {"x": 0, "y": 1}, "merges": ["x y", ["x", "y"]]}, "b": [2]})";
        std::vector<std::pair<std::string, double>> members;
        std::vector<std::size_t> elements;
        const std::vector<json_input::Stream> streams{
            {{"model", "vocab"}, [&](const std::string* key, std::size_t, Value&& v) {
                 members.emplace_back(*key, v.number);
                 return true;
             }},
            {{"model", "merges"}, [&](const std::string* key, std::size_t i, Value&& v) {
                 CHECK(key == nullptr);
                 CHECK((v.type == Value::Type::string || v.type == Value::Type::array));
                 elements.push_back(i);
                 return true;
             }}};
        const Value doc = json_input::parse_plain(text, "t.json", streams);
        CHECK(members == std::vector<std::pair<std::string, double>>{{"x", 0.0}, {"y", 1.0}});
        CHECK(elements == std::vector<std::size_t>{0, 1});
        const Value* model = doc.find("model");
        REQUIRE(model);
        CHECK(model->find("type")->string == "BPE");
        CHECK(model->find("vocab")->type == Value::Type::object);  // kept empty, in its place
        CHECK(model->find("vocab")->object.empty());
        CHECK(model->find("merges")->type == Value::Type::array);
        CHECK(model->find("merges")->array.empty());
        CHECK(doc.find("b")->array.size() == 1);
        // a stream's path from the top: the same keys deeper down are stored as usual
        const Value nested = json_input::parse_plain(R"({"x": {"model": {"vocab": {"z": 2}}}})", "t.json", streams);
        CHECK(nested.find("x")->find("model")->find("vocab")->object.size() == 1);
    }

    TEST_CASE("io.json_stream_of_the_document_itself") {
        // an empty path streams the top object's members (a safetensors header's tensors)
        std::vector<std::string> keys;
        const std::vector<json_input::Stream> streams{{{}, [&](const std::string* key, std::size_t, Value&& v) {
                                                           keys.push_back(*key);
                                                           CHECK(v.is_object());
                                                           return true;
                                                       }}};
        const Value doc = json_input::parse_plain(R"({"a": {"x": 1}, "b": {"y": [1, 2]}})", "t.json", streams);
        CHECK(keys == std::vector<std::string>{"a", "b"});
        CHECK(doc.is_object());
        CHECK(doc.object.empty());  // kept empty: nothing stored
        const std::vector<json_input::Stream> refusing{{{}, [](const std::string* key, std::size_t, Value&&) { return *key != "a"; }}};
        CHECK_THROWS_WITH_AS(json_input::parse_plain(R"({"b": {}, "a": {}})", "t.json", refusing), doctest::Contains("duplicate key \"a\""),
                             InputError);
        std::vector<std::size_t> elements;  // an array: its elements handed over without keys
        const std::vector<json_input::Stream> array{{{}, [&](const std::string* key, std::size_t i, Value&&) {
                                                         CHECK(key == nullptr);
                                                         elements.push_back(i);
                                                         return true;
                                                     }}};
        CHECK(json_input::parse_plain("[1, 2]", "t.json", array).type == Value::Type::array);
        CHECK(elements == std::vector<std::size_t>{0, 1});
        CHECK_THROWS_WITH_AS(json_input::parse_plain(R"({"a": {}} x)", "t.json", streams), doctest::Contains("after the end of the document"),
                             InputError);
    }

    TEST_CASE("io.json_stream_checks_what_it_hands_over") {
        const auto count = [](const std::string& text, bool keep) {
            std::size_t n = 0;
            std::vector<json_input::Stream> streams{{{"v"}, nullptr}};
            if (keep)
                streams.back().each = [&n](const std::string* key, std::size_t, Value&&) {
                    ++n;
                    return !key || *key != "dup";  // the reader saw this key before
                };
            json_input::parse_plain(text, "t.json", streams);
            return n;
        };
        CHECK(count(R"({"v": [1, 2, 3]})", true) == 3);
        CHECK(count(R"({"v": [1, 2, 3]})", false) == 0);  // read for its syntax alone
        CHECK(count(R"({"v": {}})", true) == 0);
        CHECK(count(R"({"v": "text"})", true) == 0);  // another type is stored for its reader to refuse
        CHECK_THROWS_WITH_AS(count(R"({"v": {"a": 1, "dup": 2}})", true), doctest::Contains("at $.v.dup: duplicate key \"dup\""), InputError);
        CHECK_THROWS_WITH_AS(count(R"({"v": [1, 2,]})", true), doctest::Contains("line 1, column 13: expected a value"), InputError);
        CHECK_THROWS_WITH_AS(count(R"({"v": [1, "\x"]})", false), doctest::Contains("invalid escape"), InputError);
        CHECK_THROWS_WITH_AS(count(R"({"v": [1, {"a": 1, "a": 2}]})", true), doctest::Contains("at $.v[1].a: duplicate key"), InputError);
        // the comma after an element is read before the element is handed over: a syntax
        // error is said as such, not as what the reader thought of the element
        std::vector<json_input::Stream> strict{{{"v"}, [](const std::string*, std::size_t i, Value&&) -> bool {
                                                    if (i == 1) throw InputError("t.json", "$.v[1]", "the reader's complaint");
                                                    return true;
                                                }}};
        CHECK_THROWS_WITH_AS(json_input::parse_plain("{\"v\": [1,\n2 3]}", "t.json", strict), doctest::Contains("line 2, column 3: expected ',' or ']'"),
                             InputError);
        CHECK_THROWS_WITH_AS(json_input::parse_plain(R"({"v": [1, 2, 3]})", "t.json", strict), doctest::Contains("the reader's complaint"), InputError);
    }

    TEST_CASE("io.json_depth_is_limited_inside_numeric_arrays_too") {
        // an object inside an array of numbers used to be read at depth 0 again: a deep
        // enough nesting overflowed the stack
        std::string deep = R"({"tokens": ["a"], "embeddings": )";
        for (int i = 0; i < 100; ++i) deep += R"([1, {"a": )";
        deep += "1";
        for (int i = 0; i < 100; ++i) deep += "}]";
        deep += "}";
        CHECK_THROWS_WITH_AS(json_input::parse(deep, "t.json"), doctest::Contains("nested more than 64 levels deep"), InputError);
    }

    TEST_CASE("io.json_subnormal_numbers_are_numbers") {
        // a subnormal is written as the shortest text that reads back, never an error
        CHECK(json_input::number_text(1e-310) == "1e-310");
        CHECK(json_input::number_text(-4.9406564584124654e-324) == "-5e-324");  // the shortest text that reads back
        CHECK(json_input::number_text(2.2250738585072009e-308) != "");
    }
}
