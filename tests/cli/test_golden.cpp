// PyTorch goldens (tests/golden/*.json, made by tests/make_goldens.py) through the
// binary: each case is an attnwalk command line, its --json checked by golden.hpp.
#include <optional>

#include <nlohmann/json.hpp>

#include "cli_json.hpp"
#include "golden.hpp"

using nlohmann::json;

namespace {

using test::flat;

void check_file(const std::string& name) {
    std::size_t cases = 0;
    for (const auto& c : test::golden_cases(name)) {
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
        test::check_golden_case(c, [&](const std::string& id) -> std::optional<test::GotStep> {
            for (const auto& s : out.at("steps"))
                if (s.at("id") == id) return test::GotStep{s.at("shape").get<std::vector<std::size_t>>(), flat(s.at("data"))};
            return std::nullopt;
        });
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
    TEST_CASE("golden.mla") { check_file("mla.json"); }
    TEST_CASE("golden.kvshare") { check_file("kvshare.json"); }
    TEST_CASE("golden.dsa") { check_file("dsa.json"); }
    TEST_CASE("golden.deltanet") { check_file("deltanet.json"); }
    TEST_CASE("golden.heads") { check_file("heads.json"); }
    TEST_CASE("golden.rope") { check_file("rope.json"); }
    TEST_CASE("golden.flash") { check_file("flash.json"); }
    TEST_CASE("golden.sdpa") { check_file("sdpa.json"); }
    TEST_CASE("golden.params") { check_file("params.json"); }
    TEST_CASE("golden.gpt2") { check_file("gpt2.json"); }
    TEST_CASE("golden.families") { check_file("families.json"); }
    TEST_CASE("golden.circuits") { check_file("circuits.json"); }
}
