#include "test_util.hpp"

#include <cstring>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/weights.hpp"
#include "attnwalk/ops/kv_sharing.hpp"

using namespace attnwalk;

namespace {

// L layers of H heads and width d_out, drawn as nn.Linear draws them, the first reading d_in.
std::vector<Weights> stack_of(std::size_t L, std::size_t d_in, std::size_t d_out, std::size_t H, std::uint64_t seed) {
    Generator gen(seed);
    std::vector<Weights> layers;
    for (std::size_t l = 0; l < L; ++l)
        layers.push_back(draw_weights(gen, WeightsShape{l ? d_out : d_in, d_out, H, HeadLayout::fused, true}, Init::linear, false));
    return layers;
}

Cube input(std::size_t B, std::size_t T, std::size_t d, std::uint64_t seed) {
    Generator g(seed);
    const std::vector<float> v = g.uniform(B * T * d, -1.0, 1.0);
    Cube x = Cube::from_shape({B, T, d});
    std::copy(v.begin(), v.end(), x.data());
    return x;
}

bool same_bits(const Cube& a, const Cube& b) {
    return a.shape() == b.shape() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}

}  // namespace

TEST_SUITE("kv_sharing") {
    TEST_CASE("kv_sharing.the_later_layers_read_the_last_producer") {
        CHECK(kv_sources(4, 2) == std::vector<std::size_t>{0, 1, 1, 1});
        CHECK(kv_sources(3, 3) == std::vector<std::size_t>{0, 1, 2});
        CHECK(kv_sources(1, 1) == std::vector<std::size_t>{0});
        CHECK_THROWS_AS(kv_sources(3, 0), UsageError);
        CHECK_THROWS_AS(kv_sources(3, 4), UsageError);
    }

    TEST_CASE("kv_sharing.a_reusing_layer_attends_with_the_producers_keys_and_values") {
        const Cube x = input(2, 7, 3, 1);
        const auto layers = stack_of(5, 3, 6, 3, 123);
        const KvSharingForward f = kv_sharing_forward(x, layers, 2);
        REQUIRE(f.caches.size() == 2);
        for (std::size_t l = 2; l < 5; ++l) {
            CHECK(f.layers[l].kh == f.layers[1].kh);
            CHECK(f.layers[l].vh == f.layers[1].vh);
            CHECK(f.layers[l].kh == f.caches[1].keys());
        }
        CHECK(f.caches[0].length() == 7);
        CHECK(same_bits(f.output, f.layers[4].output));
        CHECK(same_bits(f.inputs[3], f.layers[2].output));
    }

    TEST_CASE("kv_sharing.handing_the_keys_over_is_bit_for_bit_the_same") {
        for (std::size_t P = 1; P <= 4; ++P) {
            CAPTURE(P);
            const Cube x = input(2, 9, 5, P);
            const auto layers = stack_of(4, 5, 8, 2, 7 + P);
            const KvSharingForward f = kv_sharing_forward(x, layers, P);
            CHECK(same_bits(kv_handed_forward(x, layers, f.source), f.output));
        }
    }

    TEST_CASE("kv_sharing.every_layer_producing_is_a_plain_stack") {
        const Cube x = input(1, 6, 3, 3);
        const auto layers = stack_of(3, 3, 4, 2, 5);
        ForwardSpec causal;
        causal.causal = true;
        Cube h = x;
        for (const Weights& w : layers) h = attention_forward(h, w.get(), causal).output;
        CHECK(same_bits(kv_sharing_forward(x, layers, 3).output, h));
    }

    TEST_CASE("kv_sharing.a_stack_whose_widths_do_not_chain_is_refused") {
        const auto layers = stack_of(2, 3, 4, 2, 5);
        CHECK_THROWS_AS(kv_sharing_forward(input(1, 4, 5, 1), layers, 1), UsageError);
        CHECK_THROWS_AS(kv_handed_forward(input(1, 4, 3, 1), layers, {1, 0}), UsageError);
    }
}
