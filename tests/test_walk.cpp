// Every walk called as a library function, each intermediate against the PyTorch
// goldens (tests/golden/*.json from tests/make_goldens.py), in the spirit of llm.c's
// test_gpt2.c. The goldens name their configuration as attnwalk command lines; this
// file reads those few options into the library's values itself, so that the CLI is
// not involved. Drawn weights and dropout masks must be equal bit for bit, every other
// value within 1e-5 relative.
#include <algorithm>
#include <cmath>
#include <functional>
#include <set>

#include <nlohmann/json.hpp>

#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/lessons/lessons.hpp"
#include "test_util.hpp"

using namespace attnwalk;
using nlohmann::json;

namespace {

// The options a golden case uses, as values.
struct Config {
    std::string command;
    std::optional<std::uint64_t> seed, dropout_seed;
    Init init = Init::linear;
    std::size_t d_out = 2, heads = 2, batch = 1;
    std::optional<std::string> query;  // an index or a token
    std::optional<std::size_t> ones;
    std::optional<double> scale, dropout;
    bool bias = false, causal = true, wrapper = false;
};

Config config_of(const json& args) {
    Config c;
    c.command = args.at(0).get<std::string>();
    for (std::size_t i = 1; i < args.size(); ++i) {
        const std::string a = args.at(i).get<std::string>();
        const auto next = [&] { return args.at(++i).get<std::string>(); };
        if (a == "--seed") c.seed = std::stoull(next());
        else if (a == "--dropout-seed") c.dropout_seed = std::stoull(next());
        else if (a == "--init") c.init = *init_from_name(next());
        else if (a == "--d-out") c.d_out = std::stoul(next());
        else if (a == "--heads") c.heads = std::stoul(next());
        else if (a == "--batch") c.batch = std::stoul(next());
        else if (a == "--query") c.query = next();
        else if (a == "--ones") c.ones = std::stoul(next());
        else if (a == "--scale") c.scale = std::stod(next());
        else if (a == "--dropout") c.dropout = std::stod(next());
        else if (a == "--variant") c.wrapper = next() == "wrapper";
        else if (a == "--qkv-bias") c.bias = true;
        else if (a == "--no-causal") c.causal = false;
        else FAIL("the golden uses an option this test does not read: " << a);
    }
    return c;
}

// The walk the case describes, with the documented seeding: weights from the seed's
// stream, dropout continuing it unless a dropout seed starts a fresh one.
Trace walk_of(const Config& c, const Embeddings& given) {
    const Embeddings input = c.batch > 1 ? stack_batch(given, c.batch) : given;
    std::optional<Generator> gen, fresh;
    if (c.seed) gen.emplace(*c.seed);
    if (c.command == "mha" && !gen) gen.emplace(123);
    DropoutDraw draw;
    draw.p = c.dropout.value_or(c.command == "dropout" ? 0.5 : 0.0);
    if (c.dropout_seed || !gen) {
        fresh.emplace(c.dropout_seed.value_or(123));
        draw.gen = &*fresh;
        draw.reseeded = true;
    } else {
        draw.gen = &*gen;
    }
    if (c.ones) return walk_dropout_ones(*c.ones, draw, {});
    Weights weights;
    if (gen) {
        const bool mha = c.command == "mha";
        const WeightsShape shape{input.dim(), c.d_out, mha ? c.heads : 1,
                                 c.wrapper ? HeadLayout::stacked : HeadLayout::fused, mha && !c.wrapper};
        weights = draw_weights(*gen, shape, c.init, c.bias);
    }
    if (c.command == "causal") {
        CausalSpec spec;
        spec.scale = c.scale;
        return walk_causal(input, weights, spec, {});
    }
    if (c.command == "dropout") return walk_dropout(input, weights, {c.scale, c.causal, draw}, {});
    if (c.command == "mha") {
        MhaSpec spec;
        spec.causal = c.causal;
        spec.dropout = draw;
        return walk_mha(input, weights, spec, {});
    }
    SingleHeadSpec spec{c.scale, std::nullopt, std::nullopt};
    if (c.query) {
        const auto named = std::find(input.tokens.begin(), input.tokens.end(), *c.query);
        spec.query = named != input.tokens.end() ? static_cast<std::size_t>(named - input.tokens.begin()) : std::stoul(*c.query);
    }
    if (c.command == "scores") return walk_scores(input, weights, spec, {});
    if (c.command == "softmax") return walk_softmax(input, weights, spec, {});
    return walk_context(input, weights, spec, {});
}

void check_file(const std::string& name) {
    const json doc = json::parse(test::read_file(test::source_path("tests/golden/" + name)));
    std::size_t cases = 0;
    for (const auto& c : doc.at("cases")) {
        CAPTURE(c.at("name").get<std::string>());
        const Embeddings input = c.contains("input") ? parse_embeddings(c.at("input").dump(), "golden") : builtin_embeddings();
        const Trace trace = walk_of(config_of(c.at("args")), input);
        std::set<std::string> exact;
        for (const auto& e : c.at("exact")) exact.insert(e.get<std::string>());
        for (const auto& [id, expected] : c.at("expect").items()) {
            CAPTURE(id);
            const Step* got = nullptr;
            for (const Step& s : trace.steps)
                if (s.id == id) got = &s;
            REQUIRE_MESSAGE(got != nullptr, "missing step " << id);
            CHECK(got->tensor.shape == expected.at("shape").get<std::vector<std::size_t>>());
            const auto want = expected.at("data").get<std::vector<double>>();
            if (exact.count(id)) {
                REQUIRE(got->tensor.data.size() == want.size());
                for (std::size_t i = 0; i < want.size(); ++i) CHECK(got->tensor.data[i] == static_cast<float>(want[i]));
            } else {
                CHECK_CLOSE_ALL(got->tensor.data, want, 1e-5);
            }
        }
        ++cases;
    }
    CHECK(cases > 0);
}

}  // namespace

TEST_SUITE("walk") {
    TEST_CASE("walk.single_head_walks_match_pytorch") { check_file("single_head.json"); }
    TEST_CASE("walk.dropout_matches_pytorch") { check_file("dropout.json"); }
    TEST_CASE("walk.mha_matches_pytorch") { check_file("mha.json"); }

    TEST_CASE("walk.blocked_mha_summary_matches_the_full_forward") {
        // 150 tokens, 4 heads: the blocked path (a summary) against the full forward.
        Embeddings input;
        input.source = "test";
        input.x.shape = {1, 150, 8};
        Generator data(9);
        input.x.data = data.randn(150 * 8);
        for (std::size_t t = 0; t < 150; ++t) input.tokens.push_back("t" + std::to_string(t));
        for (const bool causal : {true, false}) {
            CAPTURE(causal);
            Generator a(1), b(1);
            const WeightsShape shape{8, 8, 4, HeadLayout::fused, true};
            MhaSpec spec;
            spec.causal = causal;
            const Trace blocked = walk_mha(input, draw_weights(a, shape, Init::linear, true), spec, {true, false});
            const Trace full = walk_mha(input, draw_weights(b, shape, Init::linear, true), spec, {});
            const Step& y = blocked.steps.back();
            REQUIRE(y.id == "output");
            CHECK_CLOSE_ALL(y.tensor.data, full.steps.back().tensor.data, 1e-5);
            for (const Step& s : blocked.steps)
                if (s.id == "scores" || s.id == "weights") CHECK(s.tensor.data.empty());  // never held
        }
    }
}
