// The one attention forward: heads, query rows, the mask, dropout.
#include "attnwalk/ops/attention.hpp"

#include <cmath>
#include <cstring>
#include <random>
#include <utility>

#include "attnwalk/ops/blocked_attention.hpp"
#include "attnwalk/errors.hpp"
#include "attnwalk/ops/softmax.hpp"
#include "test_util.hpp"

using namespace attnwalk;

namespace {

// A forward whose heads are given: H query heads over G key/value heads of size d.
Forward given_heads(std::size_t H, std::size_t G, std::size_t d, const Hyper& q, const Hyper& k, const Hyper& v) {
    Forward f;
    f.heads = H;
    f.kv_heads = G;
    f.d_h = d;
    f.qh = q;
    f.kh = k;
    f.vh = v;
    return f;
}

// Whether this CPU takes a head of 64 through the AVX-512 attention kernels.
bool fast_kernels_here() {
    Hyper zeros = Hyper::from_shape({1, 1, 32, 64});
    zeros.fill(0.0f);
    Forward f = given_heads(1, 1, 64, zeros, zeros, zeros);
    ForwardSpec spec;
    spec.square_summaries = true;
    spec.keep_masked_scaled = false;
    attend(f, nullptr, spec);
    if (!f.square_summarised) MESSAGE("this CPU has no AVX-512F: the summed path is not taken, only its fallback checked");
    return f.square_summarised;
}

Cube example() {  // (1,3,2)
    return Cube{{{0.3f, -1.2f}, {2.5f, 0.7f}, {-0.4f, 0.9f}}};
}

}  // namespace

TEST_SUITE("attention") {
    TEST_CASE("attention.split_then_merge_is_identity") {
        Cube x({2, 3, 6});
        for (std::size_t i = 0; i < x.size(); ++i) x.data()[i] = static_cast<float>(i);
        const auto split = split_heads(x, 3);
        REQUIRE(split.shape(1) == 3);
        REQUIRE(split.shape(3) == 2);
        CHECK(split(1, 2, 0, 1) == x(1, 0, 5));  // head 2 holds columns 4..5
        CHECK(merge_heads(split) == x);
    }

    TEST_CASE("attention.without_weights_scores_are_x_times_x_transposed") {
        const Cube x = example();
        const Forward f = attention_forward(x, nullptr, {});
        REQUIRE(f.scores.shape(1) == 1);
        CHECK(f.scale == 1.0f);
        CHECK(f.scores(0, 0, 1, 2) == doctest::Approx(2.5f * -0.4f + 0.7f * 0.9f));
        for (std::size_t i = 0; i < 3; ++i) CHECK(f.row_sum(0, 0, i) > 0.0f);
        // context = A·X
        float z = 0.0f;
        for (std::size_t j = 0; j < 3; ++j) z += f.weights(0, 0, 2, j) * x(0, j, 1);
        CHECK(f.context(0, 2, 1) == doctest::Approx(z));
    }

    TEST_CASE("attention.one_query_row_equals_that_row_of_all_rows") {
        const Cube x = example();
        const Forward all = attention_forward(x, nullptr, {});
        ForwardSpec one;
        one.query = 1;
        const Forward f = attention_forward(x, nullptr, one);
        REQUIRE(f.scores.shape(2) == 1);
        for (std::size_t j = 0; j < 3; ++j) {
            CHECK(f.scores(0, 0, 0, j) == all.scores(0, 0, 1, j));
            CHECK(f.weights(0, 0, 0, j) == all.weights(0, 0, 1, j));
        }
        for (std::size_t c = 0; c < 2; ++c) CHECK(f.context(0, 0, c) == all.context(0, 1, c));
        one.query = 3;
        CHECK_THROWS_AS(attention_forward(x, nullptr, one), UsageError);
    }

    TEST_CASE("attention.causal_rows_see_only_the_past") {
        ForwardSpec spec;
        spec.causal = true;
        const Forward f = attention_forward(example(), nullptr, spec);
        CHECK(f.weights(0, 0, 0, 0) == 1.0f);
        CHECK(f.weights(0, 0, 0, 1) == 0.0f);
        CHECK(f.weights(0, 0, 1, 2) == 0.0f);
        CHECK(std::isinf(f.masked(0, 0, 0, 2)));
        spec.query = 1;  // a single row keeps its own position
        const Forward row = attention_forward(example(), nullptr, spec);
        CHECK(row.weights(0, 0, 0, 2) == 0.0f);
        CHECK(row.weights(0, 0, 0, 1) == f.weights(0, 0, 1, 1));
    }

    TEST_CASE("attention.heads_split_the_projections") {
        AttentionWeights w;
        w.heads = 2;
        Mat eye = {{1, 0, 0, 0}, {0, 1, 0, 0}};  // d_in 2 -> 4: [x0 x1 0 0]
        w.query.w = w.key.w = w.value.w = eye;
        const Forward f = attention_forward(example(), &w, {});
        REQUIRE(f.scores.shape(1) == 2);
        CHECK(f.d_h == 2);
        CHECK(f.scale == static_cast<float>(std::sqrt(2.0)));
        CHECK(f.scores(0, 1, 0, 0) == 0.0f);  // head 1 sees the zero columns
        CHECK(f.weights(0, 1, 0, 0) == doctest::Approx(1.0f / 3.0f));
        w.heads = 3;
        CHECK_THROWS_AS(attention_forward(example(), &w, {}), UsageError);
    }

    TEST_CASE("attention.dropout_keeps_and_scales") {
        Generator gen(123);
        ForwardSpec spec;
        spec.dropout = {0.5, &gen};
        const Forward f = attention_forward(example(), nullptr, spec);
        REQUIRE(f.dropped);
        CHECK(f.dropout_scale == 2.0f);
        for (std::size_t n = 0; n < f.weights.size(); ++n)
            CHECK(f.weights_dropped.data()[n] == f.weights.data()[n] * f.keep.data()[n] * 2.0f);
    }

    TEST_CASE("attention.blocked_heads_match_the_plain_loop") {
        // Grouped heads (4 query heads on 2 key/value heads), queries at the end of a longer key
        // sequence, causal or not, with and without a window; head widths of 8 (sgemm's
        // products) and 64 (the AVX-512 kernels where the CPU has them), 201 query rows (two
        // blocks, the second short and odd: its last row's softmax alone). Against a plain
        // loop in double.
        std::mt19937 gen(17);
        std::normal_distribution<float> normal(0.0f, 1.0f);
        const std::size_t B = 1, H = 4, G = 2, T = 201, Tk = 231, offset = Tk - T;
        for (const std::size_t d : {8, 64}) {
            Hyper q = Hyper::from_shape({B, H, T, d}), k = Hyper::from_shape({B, G, Tk, d}), v = Hyper::from_shape({B, G, Tk, d});
            for (float& x : q) x = normal(gen);
            for (float& x : k) x = normal(gen);
            for (float& x : v) x = normal(gen);
            const float scale = std::sqrt(static_cast<float>(d));
            for (const bool causal : {true, false}) {
                for (const std::size_t window : {std::size_t{0}, std::size_t{37}})
                for (const bool with_sinks : {false, true}) {
                    if (window && !causal) continue;
                    CAPTURE(d);
                    CAPTURE(causal);
                    CAPTURE(window);
                    CAPTURE(with_sinks);
                    const Vec sinks = {0.5f, -1.0f, 2.0f, 3.0f};  // gpt-oss: one learned logit per head
                    const Cube z = fast::blocked_heads(q, k, v, scale, causal, window, with_sinks ? &sinks : nullptr);
                    REQUIRE(z.shape(2) == H * d);
                    double worst = 0.0;
                    for (std::size_t h = 0; h < H; ++h)
                        for (std::size_t i = 0; i < T; ++i) {
                            const std::size_t g = h / (H / G), pos = offset + i, hi = causal ? pos + 1 : Tk,
                                              lo = window && pos + 1 > window ? pos + 1 - window : 0;
                            std::vector<double> w(hi - lo);
                            double top = -INFINITY, sum = 0.0;
                            for (std::size_t j = lo; j < hi; ++j) {
                                double dot = 0.0;
                                for (std::size_t p = 0; p < d; ++p) dot += static_cast<double>(q(0, h, i, p)) * k(0, g, j, p);
                                top = std::max(top, w[j - lo] = dot / scale);
                            }
                            if (with_sinks) top = std::max(top, static_cast<double>(sinks(h)));
                            for (double& x : w) sum += (x = std::exp(x - top));
                            if (with_sinks) sum += std::exp(sinks(h) - top);
                            for (std::size_t c = 0; c < d; ++c) {
                                double want = 0.0;
                                for (std::size_t j = lo; j < hi; ++j) want += w[j - lo] / sum * v(0, g, j, c);
                                worst = std::max(worst, std::abs(want - z(0, i, h * d + c)));
                            }
                        }
                    CHECK(worst < 2e-6);
                }
            }
        }
    }

    TEST_CASE("attention.square_summaries_are_the_tensors_statistics") {
        // The T×T steps summed head by head in buffers of their own (a summary) against the
        // same forward with its tensors: the statistics the tensors give and every other
        // number, bit for bit. Two sequences, grouped heads, queries after a cache, causal or
        // not, a window, learned sinks, a scale of 1 or a division; heads of 64 take the
        // AVX-512 kernels where the CPU has them (else, and for heads of 8, the tensors).
        std::mt19937 gen(29);
        std::normal_distribution<float> normal(0.0f, 0.5f);
        const std::size_t B = 2, H = 4, G = 2, T = 150, Tk = 170;
        std::size_t streamed = 0;
        for (const std::size_t d : {8, 64}) {
            Hyper q = Hyper::from_shape({B, H, T, d}), k = Hyper::from_shape({B, G, Tk, d}), v = Hyper::from_shape({B, G, Tk, d});
            for (float& x : q) x = normal(gen);
            for (float& x : k) x = normal(gen);
            for (float& x : v) x = normal(gen);
            for (const bool causal : {true, false})
                for (const std::size_t window : {std::size_t{0}, std::size_t{37}})
                    for (const bool with_sinks : {false, true})
                        for (const float scale : {1.0f, 8.0f}) {
                            if (window && !causal) continue;
                            CAPTURE(d);
                            CAPTURE(causal);
                            CAPTURE(window);
                            CAPTURE(with_sinks);
                            CAPTURE(scale);
                            AttentionWeights w;
                            w.heads = H;
                            w.kv_heads = G;
                            if (with_sinks) w.sinks = Vec{0.5f, -1.0f, 2.0f, 3.0f};
                            ForwardSpec spec;
                            spec.causal = causal;
                            if (window) spec.window = window;
                            spec.scale = scale;
                            spec.keep_masked_scaled = false;
                            const auto run = [&](bool summaries) {
                                Forward f = given_heads(H, G, d, q, k, v);
                                spec.square_summaries = summaries;
                                attend(f, &w, spec);
                                return f;
                            };
                            const Forward tensors = run(false), summed = run(true);
                            CHECK_FALSE(tensors.square_summarised);
                            if (!summed.square_summarised) {
                                CHECK(summed.scores == tensors.scores);
                                continue;
                            }
                            ++streamed;
                            CHECK(summed.scores.size() == 0);
                            CHECK(summed.weights.size() == 0);
                            Stats scores, weights;
                            scores.add_all(tensors.scores.data(), tensors.scores.size());
                            weights.add_all(tensors.weights.data(), tensors.weights.size());
                            for (float s : row_sums(tensors.weights)) weights.add_row_sum(s);
                            for (const auto& [a, b] : {std::pair{&scores, &summed.scores_stats}, std::pair{&weights, &summed.weights_stats}}) {
                                CHECK(std::memcmp(&a->min, &b->min, sizeof(double)) == 0);
                                CHECK(std::memcmp(&a->max, &b->max, sizeof(double)) == 0);
                                CHECK(std::memcmp(&a->checksum, &b->checksum, sizeof(double)) == 0);
                                CHECK(a->count == b->count);
                                CHECK(a->non_finite == b->non_finite);
                                CHECK(a->has_row_sums == b->has_row_sums);
                                CHECK(a->row_sum_min == b->row_sum_min);
                                CHECK(a->row_sum_max == b->row_sum_max);
                            }
                            CHECK(summed.head_outputs == tensors.head_outputs);
                            CHECK(summed.context == tensors.context);
                            CHECK(summed.output == tensors.output);
                            CHECK(summed.row_max == tensors.row_max);
                            CHECK(summed.row_sum == tensors.row_sum);
                            CHECK(summed.sink_share == tensors.sink_share);
                        }
        }
        if (fast_kernels_here()) CHECK(streamed == 12);
    }

    TEST_CASE("attention.a_gated_layer_summed_gives_the_outputs_of_its_tensors") {
        // A layer with an output gate (Qwen3-Next) that nothing reads but its output: the
        // decoder has attend make its T×T steps a head at a time (ForwardSpec::square_summaries),
        // summed or not (square_statistics); the gated context is the same bits as with the
        // tensors kept. The queries alone, or after a cache of 40 keys (a prompt's tokens
        // generated from).
        std::mt19937 gen(31);
        std::normal_distribution<float> normal(0.0f, 0.5f);
        const std::size_t B = 1, H = 4, G = 2, T = 96, d = 64;
        for (const std::size_t cached : {std::size_t{0}, std::size_t{40}}) {
            CAPTURE(cached);
            const std::size_t Tk = T + cached;
            Hyper q = Hyper::from_shape({B, H, T, d}), k = Hyper::from_shape({B, G, Tk, d}), v = Hyper::from_shape({B, G, Tk, d});
            Cube gate = Cube::from_shape({B, T, H * d});
            for (Hyper* t : {&q, &k, &v})
                for (float& x : *t) x = normal(gen);
            for (float& x : gate) x = normal(gen);
            AttentionWeights w;
            w.heads = H;
            w.kv_heads = G;
            w.gate = Linear{};  // present: attend applies f.gate, as project_heads would have made it
            ForwardSpec spec;
            spec.causal = true;
            spec.keep_masked_scaled = false;
            const auto run = [&](bool summaries, bool statistics) {
                Forward f = given_heads(H, G, d, q, k, v);
                f.gate = gate;
                spec.square_summaries = summaries;
                spec.square_statistics = statistics;
                attend(f, &w, spec);
                return f;
            };
            const Forward tensors = run(false, true), summed = run(true, true), dropped = run(true, false);
            CHECK(summed.square_summarised == fast_kernels_here());
            CHECK(tensors.gated.size() == B * T * H * d);
            CHECK(tensors.weights.shape(3) == Tk);
            CHECK(tensors.weights(0, 0, 0, cached) > 0.0f);  // the first query sees the cache and itself, no later key
            CHECK(tensors.weights(0, 0, 0, cached + 1) == 0.0f);
            for (const Forward* f : {&summed, &dropped}) {
                CHECK(f->context == tensors.context);
                CHECK(f->gated == tensors.gated);
                CHECK(f->output == tensors.output);
            }
            if (dropped.square_summarised) {  // nothing summed: the statistics left empty
                CHECK(summed.scores_stats.count == B * H * T * Tk);
                CHECK(dropped.scores_stats.count == 0);
                CHECK(dropped.weights_stats.count == 0);
            }
        }
    }

    TEST_CASE("attention.the_full_forward_at_model_width_matches_a_plain_loop") {
        // One head of 64 (the AVX-512 kernels where the CPU has them): 70 query rows against
        // 90 keys (a cache of 20 before them), causal or not, with a window or not; every
        // score, weight and context value against a loop in double.
        std::mt19937 gen(23);
        std::normal_distribution<float> normal(0.0f, 0.3f);
        const std::size_t T = 70, Tk = 90, d = 64, offset = Tk - T;
        Hyper q = Hyper::from_shape({1, 1, T, d}), k = Hyper::from_shape({1, 1, Tk, d}), v = Hyper::from_shape({1, 1, Tk, d});
        for (float& x : q) x = normal(gen);
        for (float& x : k) x = normal(gen);
        for (float& x : v) x = normal(gen);
        for (const bool causal : {true, false}) {
            for (const std::size_t window : {std::size_t{0}, std::size_t{25}}) {
                CAPTURE(causal);
                CAPTURE(window);
                Forward f = given_heads(1, 1, d, q, k, v);
                ForwardSpec spec;
                spec.causal = causal;
                if (window) spec.window = window;
                attend(f, nullptr, spec);
                double worst_score = 0.0, worst_weight = 0.0, worst_out = 0.0;
                for (std::size_t i = 0; i < T; ++i) {
                    std::vector<double> w(Tk);
                    double top = -INFINITY, sum = 0.0;
                    for (std::size_t j = 0; j < Tk; ++j) {
                        double dot = 0.0;
                        for (std::size_t p = 0; p < d; ++p) dot += static_cast<double>(q(0, 0, i, p)) * k(0, 0, j, p);
                        worst_score = std::max(worst_score, std::abs(dot - f.scores(0, 0, i, j)));
                        w[j] = masked_out(offset + i, j, causal, window) ? -INFINITY : dot;
                        top = std::max(top, w[j]);
                    }
                    for (double& x : w) sum += (x = std::exp(x - top));
                    for (std::size_t j = 0; j < Tk; ++j) worst_weight = std::max(worst_weight, std::abs(w[j] / sum - f.weights(0, 0, i, j)));
                    for (std::size_t c = 0; c < d; ++c) {
                        double want = 0.0;
                        for (std::size_t j = 0; j < Tk; ++j) want += w[j] / sum * v(0, 0, j, c);
                        worst_out = std::max(worst_out, std::abs(want - f.head_outputs(0, 0, i, c)));
                    }
                }
                CHECK(worst_score < 1e-5);
                CHECK(worst_weight < 1e-6);
                CHECK(worst_out < 1e-6);
            }
        }
    }
}
