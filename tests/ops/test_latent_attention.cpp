#include "test_util.hpp"

#include <cmath>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/latent_attention.hpp"
#include "attnwalk/ops/rng.hpp"

using namespace attnwalk;

namespace {

Linear random_linear(Generator& g, std::size_t in, std::size_t out) {
    const std::vector<float> v = g.uniform(in * out, -0.5, 0.5);
    Mat w = Mat::from_shape({in, out});
    std::copy(v.begin(), v.end(), w.data());
    return owned_linear(std::move(w));
}

LatentWeights random_latent(Generator& g, std::size_t d, std::size_t H, std::size_t r, std::size_t rq, std::size_t nope,
                            std::size_t rope, std::size_t value) {
    LatentWeights w;
    w.heads = H;
    w.nope = nope;
    w.rope = rope;
    w.value = value;
    if (rq) {
        w.q_a_proj = random_linear(g, d, rq);
        w.q_a_norm = Vec::from_shape({rq});
        w.q_a_norm.fill(1.5f);
        w.q_b_proj = random_linear(g, rq, H * (nope + rope));
    } else {
        w.q_proj = random_linear(g, d, H * (nope + rope));
    }
    w.kv_a_proj = random_linear(g, d, r + rope);
    w.kv_a_norm = Vec::from_shape({r});
    w.kv_a_norm.fill(0.75f);
    w.kv_b_proj = random_linear(g, r, H * (nope + value));
    w.o_proj = random_linear(g, H * value, d);
    return w;
}

Cube random_input(Generator& g, std::size_t B, std::size_t T, std::size_t d) {
    const std::vector<float> v = g.uniform(B * T * d, -1.0, 1.0);
    Cube x = Cube::from_shape({B, T, d});
    std::copy(v.begin(), v.end(), x.data());
    return x;
}

float worst(const Cube& a, const Cube& b) {
    float m = 0.0f;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a.data()[i] - b.data()[i]));
    return m;
}

}  // namespace

TEST_SUITE("latent_attention") {
    TEST_CASE("latent_attention.the_absorbed_form_equals_the_direct_one") {
        Generator g(3);
        for (std::size_t rq : {0u, 5u})
            for (std::size_t rope : {0u, 4u}) {
                CAPTURE(rq);
                CAPTURE(rope);
                const LatentWeights w = random_latent(g, 12, 3, 6, rq, 4, rope, 5);
                const Cube x = random_input(g, 2, 33, 12);
                LatentSpec spec;
                const LatentForward f = latent_attention_forward(x, w, spec);
                const LatentAbsorbed a = latent_attention_absorbed(f, w, spec);
                CHECK(f.output.shape(2) == 12);
                CHECK(worst(a.output, f.output) < 1e-5f);
                // the weights are a causal softmax: rows sum to 1, nothing above the diagonal
                for (std::size_t i = 0; i < 33; ++i) {
                    float sum = 0.0f;
                    for (std::size_t j = 0; j < 33; ++j) sum += f.weights(1, 2, i, j);
                    CHECK(sum == doctest::Approx(1.0).epsilon(1e-5));
                    if (i + 1 < 33) CHECK(f.weights(1, 2, i, i + 1) == 0.0f);
                }
            }
    }

    TEST_CASE("latent_attention.the_rotary_key_is_shared_and_relative") {
        // Shifting every position leaves the scores unchanged (up to rounding): position
        // enters only through the rotary parts, as a difference.
        Generator g(5);
        const LatentWeights w = random_latent(g, 8, 2, 4, 0, 2, 4, 2);
        const Cube x = random_input(g, 1, 9, 8);
        LatentSpec a, b;
        b.position0 = 17;
        const LatentForward fa = latent_attention_forward(x, w, a), fb = latent_attention_forward(x, w, b);
        for (std::size_t i = 0; i < fa.scores.size(); ++i) CHECK(fa.scores.data()[i] == doctest::Approx(fb.scores.data()[i]).epsilon(1e-4));
        CHECK(fa.k_rope.shape(2) == 4);
    }

    TEST_CASE("latent_attention.sizes_that_do_not_fit_are_refused") {
        Generator g(7);
        LatentWeights w = random_latent(g, 8, 2, 4, 0, 2, 4, 2);
        w.rope = 3;  // odd rotary part
        CHECK_THROWS_AS(w.check(), UsageError);
        w = random_latent(g, 8, 2, 4, 0, 2, 4, 2);
        w.kv_a_norm = Vec::from_shape({3});
        CHECK_THROWS_AS(w.check(), UsageError);
        w = random_latent(g, 8, 2, 4, 0, 2, 4, 2);
        CHECK_THROWS_AS(latent_attention_forward(random_input(g, 1, 3, 7), w, {}), UsageError);
    }
}
