// The generator against sequences drawn by python3-torch (tests/golden/rng.json).
#include <cstring>

#include <nlohmann/json.hpp>

#include "attnwalk/ops/rng.hpp"
#include "test_util.hpp"

namespace {

std::vector<std::uint32_t> bits_of(const std::vector<float>& values) {
    std::vector<std::uint32_t> out;
    for (float v : values) {
        std::uint32_t u;
        std::memcpy(&u, &v, sizeof u);
        out.push_back(u);
    }
    return out;
}

std::vector<float> draw(attnwalk::Generator& g, const std::string& kind, std::size_t n) {
    if (kind == "rand") return g.rand(n);
    if (kind == "randn") return g.randn(n);
    if (kind == "linear") {
        auto l = g.linear(n, 3, true);
        l.weight.insert(l.weight.end(), l.bias.begin(), l.bias.end());
        return l.weight;
    }
    if (kind == "bernoulli") {
        std::vector<float> out;
        for (auto b : g.bernoulli(n, 0.7)) out.push_back(b);
        return out;
    }
    if (kind == "rand_after_5000") {
        g.rand(5000);
        return g.rand(n);
    }
    if (kind == "randn_3_3_5") {
        auto a = g.randn(3), b = g.randn(3), c = g.randn(5);
        a.insert(a.end(), b.begin(), b.end());
        a.insert(a.end(), c.begin(), c.end());
        return a;
    }
    FAIL("unknown kind " << kind);
    return {};
}

}  // namespace

TEST_SUITE("rng") {
    TEST_CASE("rng.matches_pytorch_bit_for_bit") {
        const auto doc = nlohmann::json::parse(test::read_file(test::source_path("tests/golden/rng.json")));
        std::size_t checked = 0;
        for (const auto& seq : doc.at("sequences")) {
            const auto seed = seq.at("seed").get<std::uint64_t>();
            const auto kind = seq.at("kind").get<std::string>();
            const auto n = seq.at("n").get<std::size_t>();
            CAPTURE(seed);
            CAPTURE(kind);
            CAPTURE(n);
            attnwalk::Generator g(seed);
            const auto expected = seq.at("bits").get<std::vector<std::uint32_t>>();
            CHECK(bits_of(draw(g, kind, n)) == expected);
            ++checked;
        }
        CHECK(checked >= 40);
    }

    TEST_CASE("rng.seed_uses_low_32_bits") {
        attnwalk::Generator a(5), b((std::uint64_t{1} << 32) + 5);
        CHECK(a.rand(10) == b.rand(10));
    }

    TEST_CASE("rng.manual_seed_clears_the_normal_cache") {
        attnwalk::Generator g(1);
        const auto first = g.randn(1);  // leaves a cached sample behind
        g.manual_seed(1);
        CHECK(g.randn(1) == first);
    }

    TEST_CASE("rng.linear_bound_is_computed_like_torch_init") {
        // kaiming_uniform_(a=√5) gives 1/√fan_in up to double rounding
        CHECK(attnwalk::linear_weight_bound(3) == doctest::Approx(1.0 / std::sqrt(3.0)).epsilon(1e-15));
    }
}
