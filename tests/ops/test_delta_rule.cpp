#include "test_util.hpp"

#include <cmath>

#include "attnwalk/ops/delta_rule.hpp"
#include "attnwalk/ops/rng.hpp"

using namespace attnwalk;

namespace {

Hyper random_hyper(Generator& g, std::array<std::size_t, 4> shape, double lo, double hi) {
    Hyper x = Hyper::from_shape(shape);
    const std::vector<float> v = g.uniform(x.size(), lo, hi);
    std::copy(v.begin(), v.end(), x.data());
    return x;
}

Cube random_cube(Generator& g, std::array<std::size_t, 3> shape, double lo, double hi) {
    Cube x = Cube::from_shape(shape);
    const std::vector<float> v = g.uniform(x.size(), lo, hi);
    std::copy(v.begin(), v.end(), x.data());
    return x;
}

// Slow decays (α in [0.85, 1)) so that every token reaches far: the delta rule's terms matter.
DeltaInputs random_inputs(Generator& g, std::size_t B, std::size_t H, std::size_t T, std::size_t dk, std::size_t dv) {
    DeltaInputs in;
    in.q = l2_normalise(random_hyper(g, {B, H, T, dk}, -1, 1), 1.0f / std::sqrt(static_cast<float>(dk)));
    in.k = l2_normalise(random_hyper(g, {B, H, T, dk}, -1, 1), 1.0f);
    in.v = random_hyper(g, {B, H, T, dv}, -1, 1);
    in.g = random_cube(g, {B, H, T}, -0.16, 0.0);
    in.beta = random_cube(g, {B, H, T}, 0.05, 1.0);
    return in;
}

float worst(const Hyper& a, const Hyper& b) {
    float m = 0.0f;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a.data()[i] - b.data()[i]));
    return m;
}

}  // namespace

TEST_SUITE("delta_rule") {
    TEST_CASE("delta_rule.one_token_by_hand") {
        // d_k = d_v = 1, q = k = 1: S ← αS; p = S; δ = β(v − p); S += δ; o = S.
        DeltaInputs in;
        in.q = Hyper({1, 1, 3, 1}, 1.0f);
        in.k = in.q;
        in.v = Hyper({1, 1, 3, 1}, 0.0f);
        in.v(0, 0, 0, 0) = 2.0f;
        in.v(0, 0, 1, 0) = 2.0f;
        in.v(0, 0, 2, 0) = -1.0f;
        in.g = Cube({1, 1, 3}, std::log(0.5f));
        in.beta = Cube({1, 1, 3}, 0.5f);
        const DeltaRun r = delta_rule_recurrent(in, true);
        CHECK(r.outputs(0, 0, 0, 0) == doctest::Approx(1.0));    // 0 → 0.5·(2 − 0) = 1
        CHECK(r.outputs(0, 0, 1, 0) == doctest::Approx(1.25));   // 1 decays to 0.5, + 0.5·(2 − 0.5) = 1.25
        CHECK(r.steps[1].prediction(0, 0, 0) == doctest::Approx(0.5));
        CHECK(r.outputs(0, 0, 2, 0) == doctest::Approx(-0.1875));  // 0.625, + 0.5·(−1 − 0.625) = −0.1875
    }

    TEST_CASE("delta_rule.the_matrix_and_the_chunks_give_the_recurrent_outputs") {
        Generator g(11);
        const DeltaInputs in = random_inputs(g, 2, 3, 37, 8, 5);
        const DeltaRun r = delta_rule_recurrent(in, false);
        const Hyper A = delta_rule_attention(in);
        Hyper av = Hyper::from_shape(r.outputs.shape());
        for (std::size_t b = 0; b < 2; ++b)
            for (std::size_t h = 0; h < 3; ++h)
                for (std::size_t t = 0; t < 37; ++t) {
                    for (std::size_t j = t + 1; j < 37; ++j) CHECK(A(b, h, t, j) == 0.0f);  // causal
                    for (std::size_t m = 0; m < 5; ++m) {
                        float s = 0.0f;
                        for (std::size_t j = 0; j < 37; ++j) s += A(b, h, t, j) * in.v(b, h, j, m);
                        av(b, h, t, m) = s;
                    }
                }
        CHECK(worst(av, r.outputs) < 2e-5f);
        for (std::size_t chunk : {1u, 4u, 37u, 64u}) {
            CAPTURE(chunk);
            const DeltaRun c = delta_rule_chunked(in, chunk);
            CHECK(worst(c.outputs, r.outputs) < 2e-5f);
            CHECK(worst(c.state, r.state) < 2e-5f);
        }
    }

    TEST_CASE("delta_rule.the_chunks_go_on_from_a_state") {
        // a prompt in two calls, the second from the first's state, as one call: both forms
        Generator g(3);
        const DeltaInputs all = random_inputs(g, 1, 2, 150, 16, 12);
        const DeltaRun whole = delta_rule_recurrent(all, false);
        const auto part = [&](std::size_t from, std::size_t to) {
            DeltaInputs p;
            p.q = Hyper::from_shape({1, 2, to - from, 16});
            p.k = p.q;
            p.v = Hyper::from_shape({1, 2, to - from, 12});
            p.g = Cube::from_shape({1, 2, to - from});
            p.beta = p.g;
            for (std::size_t h = 0; h < 2; ++h)
                for (std::size_t t = from; t < to; ++t) {
                    for (std::size_t c = 0; c < 16; ++c) {
                        p.q(0, h, t - from, c) = all.q(0, h, t, c);
                        p.k(0, h, t - from, c) = all.k(0, h, t, c);
                    }
                    for (std::size_t c = 0; c < 12; ++c) p.v(0, h, t - from, c) = all.v(0, h, t, c);
                    p.g(0, h, t - from) = all.g(0, h, t);
                    p.beta(0, h, t - from) = all.beta(0, h, t);
                }
            return p;
        };
        const DeltaRun first = delta_rule_chunked(part(0, 70), 64);
        DeltaInputs rest = part(70, 150);
        rest.initial = first.state;
        const DeltaRun second = delta_rule_chunked(rest, 64);
        CHECK(worst(second.state, whole.state) < 2e-5f);
        float w = 0.0f;
        for (std::size_t h = 0; h < 2; ++h)
            for (std::size_t t = 70; t < 150; ++t)
                for (std::size_t c = 0; c < 12; ++c) w = std::max(w, std::fabs(second.outputs(0, h, t - 70, c) - whole.outputs(0, h, t, c)));
        CHECK(w < 2e-5f);
    }

    TEST_CASE("delta_rule.one_cell_is_the_matrix_entry_bit_for_bit") {
        // delta_rule_cell's terms, added in float32, are the matrix's entry: what a cell written out shows
        Generator g(5);
        const DeltaInputs in = random_inputs(g, 2, 2, 19, 8, 3);
        const Hyper A = delta_rule_attention(in);
        for (std::size_t b = 0; b < 2; ++b)
            for (std::size_t h = 0; h < 2; ++h)
                for (std::size_t t = 0; t < 19; ++t)
                    for (std::size_t c = 0; c < 19; ++c) {
                        const DeltaCell cell = delta_rule_cell(in, b, h, t, c);
                        CHECK(cell.value == A(b, h, t, c));
                        CHECK(cell.terms.size() == (c <= t ? t - c + 1 : 0));
                        if (c <= t) CHECK(cell.written.front() == doctest::Approx(in.beta(b, h, c)));  // U_cc = β_c
                    }
    }

    TEST_CASE("delta_rule.a_key_written_twice_is_overwritten") {
        // β = 1, no decay, the same key twice: the second write replaces the first value.
        DeltaInputs in;
        in.k = Hyper({1, 1, 2, 2}, 0.0f);
        in.k(0, 0, 0, 0) = in.k(0, 0, 1, 0) = 1.0f;
        in.q = in.k;
        in.v = Hyper({1, 1, 2, 1}, 3.0f);
        in.v(0, 0, 1, 0) = 7.0f;
        in.g = Cube({1, 1, 2}, 0.0f);
        in.beta = Cube({1, 1, 2}, 1.0f);
        const DeltaRun r = delta_rule_recurrent(in, false);
        CHECK(r.outputs(0, 0, 1, 0) == doctest::Approx(7.0));  // plain linear attention would read 10
    }
}
