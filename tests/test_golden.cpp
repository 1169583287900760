// PyTorch goldens (tests/golden/*.json, made by tests/make_goldens.py): each case is an
// attnwalk command line; every expected step must match. Weights drawn from --seed and
// dropout masks must be equal bit for bit, every other value within 1e-5 relative.
#include <cmath>
#include <set>

#include <nlohmann/json.hpp>

#include "cli_json.hpp"

using nlohmann::json;

namespace {

using test::flat;

void check_file(const std::string& name) {
    const json doc = json::parse(test::read_file(test::source_path("tests/golden/" + name)));
    std::size_t cases = 0;
    for (const auto& c : doc.at("cases")) {
        std::string args;
        for (const auto& a : c.at("args")) {
            std::string arg = a.get<std::string>();
            if (arg.rfind("@SRC@/", 0) == 0) arg = test::source_path(arg.substr(6));  // a file of the repository
            args += " '" + arg + "'";
        }
        if (c.contains("input")) args += " -i '" + test::temp_file(c.at("input").dump()) + "'";
        CAPTURE(args);
        const auto r = test::run(args + " --json");
        INFO("stderr: " << r.err);
        REQUIRE(r.exit_code == 0);
        const json out = json::parse(r.out);
        std::set<std::string> exact;
        for (const auto& e : c.at("exact")) exact.insert(e.get<std::string>());
        for (const auto& [id, expected] : c.at("expect").items()) {
            CAPTURE(id);
            const json* got = nullptr;
            for (const auto& s : out.at("steps"))
                if (s.at("id") == id) got = &s;
            REQUIRE_MESSAGE(got != nullptr, "missing step " << id);
            CHECK(got->at("shape") == expected.at("shape"));
            const auto a = flat(got->at("data"));
            const auto b = flat(expected.at("data"));
            REQUIRE(a.size() == b.size());
            if (exact.count(id)) {
                // JSON carries the shortest text that reads back to the same float32.
                for (std::size_t i = 0; i < a.size(); ++i)
                    CHECK(static_cast<float>(a[i]) == static_cast<float>(b[i]));
            } else {
                CHECK_CLOSE_ALL(a, b, 1e-5);
            }
        }
        ++cases;
    }
    CHECK(cases > 0);
}

}  // namespace

TEST_SUITE("golden") {
    TEST_CASE("golden.single_head") { check_file("single_head.json"); }
    TEST_CASE("golden.dropout") { check_file("dropout.json"); }
    TEST_CASE("golden.mha") { check_file("mha.json"); }
    TEST_CASE("golden.mha_beyond") { check_file("mha_beyond.json"); }
    TEST_CASE("golden.kvcache") { check_file("kvcache.json"); }
    TEST_CASE("golden.rope") { check_file("rope.json"); }
    TEST_CASE("golden.flash") { check_file("flash.json"); }
    TEST_CASE("golden.sdpa") { check_file("sdpa.json"); }
    TEST_CASE("golden.params") { check_file("params.json"); }
    TEST_CASE("golden.gpt2") { check_file("gpt2.json"); }
}
