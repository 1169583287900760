#include "test_util.hpp"

#include <cmath>
#include <cstdint>
#include <cstring>
#include <limits>

#include "attnwalk/ops/moe.hpp"
#include "attnwalk/ops/rng.hpp"

#include "ops/kernels.hpp"

using namespace attnwalk;

namespace {

Mat random_mat(Generator& g, std::size_t r, std::size_t c, double lo, double hi) {
    Mat m = Mat::from_shape({r, c});
    const std::vector<float> v = g.uniform(m.size(), lo, hi);
    std::copy(v.begin(), v.end(), m.data());
    return m;
}

Vec random_vec(Generator& g, std::size_t n, double lo, double hi) {
    Vec m = Vec::from_shape({n});
    const std::vector<float> v = g.uniform(n, lo, hi);
    std::copy(v.begin(), v.end(), m.data());
    return m;
}

}  // namespace

TEST_SUITE("ops.moe") {
    TEST_CASE("moe.mxfp4_rows_decode_as_the_reference") {
        // One row of 32: bytes 0x21 (codes 1, 2: 0.5 then 1.0), 0xF7 (7: 6.0, 15: −6.0), the
        // rest 0x98 (8: −0.0, 9: −0.5); scale 129: × 2² = 4.
        std::vector<std::uint8_t> blocks(16, 0x98), scales{129};
        blocks[0] = 0x21;
        blocks[1] = 0xF7;
        Mxfp4Rows m{blocks.data(), scales.data(), 1, 32, nullptr};
        std::vector<float> row(32);
        m.row(0, row.data());
        CHECK(row[0] == 2.0f);
        CHECK(row[1] == 4.0f);
        CHECK(row[2] == 24.0f);
        CHECK(row[3] == -24.0f);
        CHECK(row[4] == 0.0f);
        CHECK(std::signbit(row[4]));
        CHECK(row[5] == -2.0f);
    }

    TEST_CASE("moe.forward_matches_a_plain_loop") {
        // 5 tokens, C = 6, 4 experts of I = 3, top 2; dense experts with biases, and one in
        // MXFP4 (C = 32): against the recipe written out in double.
        Generator g(5);
        for (const bool quantised : {false, true}) {
            CAPTURE(quantised);
            const std::size_t T = 5, C = quantised ? 32 : 6, E = 4, I = 3, k = 2;
            MoeWeights w;
            w.top_k = k;
            w.router = owned_linear(random_mat(g, C, E, -1, 1), random_vec(g, E, -0.5, 0.5));
            std::vector<std::vector<std::uint8_t>> bytes;  // kept alive for the MXFP4 experts
            bytes.reserve(2 * E);
            std::vector<Mat> gu(E);
            for (std::size_t e = 0; e < E; ++e) {
                Expert ex;
                if (quantised) {
                    bytes.emplace_back(2 * I * C / 2);
                    for (auto& b : bytes.back()) b = static_cast<std::uint8_t>(g.uniform(1, 0, 256)[0]);
                    bytes.emplace_back(2 * I * C / 32, std::uint8_t{125});
                    ex.gate_up.mxfp4 = Mxfp4Rows{bytes[bytes.size() - 2].data(), bytes.back().data(), 2 * I, C, nullptr};
                } else {
                    ex.gate_up.dense = owned_linear(random_mat(g, C, 2 * I, -3, 3));
                }
                ex.down.dense = owned_linear(random_mat(g, I, C, -1, 1));
                ex.gate_up_bias = random_vec(g, 2 * I, -1, 1);
                ex.down_bias = random_vec(g, C, -1, 1);
                gu[e] = ex.gate_up.matrix();
                w.experts.push_back(std::move(ex));
            }
            Cube x = Cube::from_shape({1, T, C});
            const std::vector<float> xs = g.uniform(x.size(), -2, 2);
            std::copy(xs.begin(), xs.end(), x.data());
            const MoeOutput out = moe_forward(x, w);
            const Mat router = w.router.matrix();
            for (std::size_t t = 0; t < T; ++t) {
                std::vector<double> r(E);
                for (std::size_t e = 0; e < E; ++e) {
                    r[e] = w.router.b(e);
                    for (std::size_t c = 0; c < C; ++c) r[e] += static_cast<double>(x(0, t, c)) * router(c, e);
                }
                std::vector<std::size_t> order{0, 1, 2, 3};
                std::sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return r[a] > r[b]; });
                const double z = std::exp(r[order[0]] - r[order[0]]) + std::exp(r[order[1]] - r[order[0]]);
                for (std::size_t c = 0; c < C; ++c) {
                    double want = 0.0;
                    for (std::size_t s = 0; s < k; ++s) {
                        const std::size_t e = order[s];
                        const Expert& ex = w.experts[e];
                        const Mat down = ex.down.matrix();
                        double y = ex.down_bias(c);
                        for (std::size_t j = 0; j < I; ++j) {
                            double gate = ex.gate_up_bias(2 * j), up = ex.gate_up_bias(2 * j + 1);
                            for (std::size_t p = 0; p < C; ++p) {
                                gate += static_cast<double>(x(0, t, p)) * gu[e](p, 2 * j);
                                up += static_cast<double>(x(0, t, p)) * gu[e](p, 2 * j + 1);
                            }
                            gate = std::min(gate, 7.0);
                            up = std::clamp(up, -7.0, 7.0);
                            y += (up + 1.0) * gate / (1.0 + std::exp(-1.702 * gate)) * down(j, c);
                        }
                        want += std::exp(r[e] - r[order[0]]) / z * y;
                    }
                    CHECK(out.output(0, t, c) == doctest::Approx(want).epsilon(2e-5).scale(1.0));
                }
                CHECK(out.chosen[t * k] == order[0]);
                CHECK(out.chosen[t * k + 1] == order[1]);
            }
        }
    }

    TEST_CASE("ops.moe.mxfp4_rows_on_the_vector_kernel_are_the_tables_bits") {
        // every byte at every scale: 16 groups of 16 bytes (0 … 255) for each of the 256 scales,
        // −0, subnormals and ±inf (scale 255: 6·2^128) among them
        const std::size_t groups = 256 * 16;
        std::vector<std::uint8_t> blocks(groups * 16), scales(groups);
        for (std::size_t g = 0; g < groups; ++g) {
            scales[g] = static_cast<std::uint8_t>(g / 16);
            for (std::size_t i = 0; i < 16; ++i) blocks[g * 16 + i] = static_cast<std::uint8_t>((g % 16) * 16 + i);
        }
        std::vector<float> loop(groups * 32, 1.0f), vec(groups * 32, 2.0f);
        fast::mxfp4_row_loop(blocks.data(), scales.data(), groups, loop.data());
        const auto at = [](std::size_t scale, std::size_t byte) { return 32 * (scale * 16 + byte / 16) + 2 * (byte % 16); };
        CHECK(loop[at(127, 0x7F)] == -6.0f);  // scale 127 (× 1), byte 0x7F: low nibble 15 (−6), then high 7 (6)
        CHECK(loop[at(127, 0x7F) + 1] == 6.0f);
        CHECK(loop[at(129, 0x98)] == 0.0f);  // code 8: −0
        CHECK(std::signbit(loop[at(129, 0x98)]));
        CHECK(loop[at(255, 0x7F) + 1] == std::numeric_limits<float>::infinity());  // 6·2^128
        CHECK(loop[at(0, 0x01)] == std::ldexp(0.5f, -127));  // a subnormal
#if defined(ATTNWALK_HAVE_AVX2)
        if (!fast::has_avx2_fma()) return;
        fast::mxfp4_row_avx2(blocks.data(), scales.data(), groups, vec.data());
        std::size_t differ = 0;
        for (std::size_t i = 0; i < loop.size(); ++i) {
            std::uint32_t a, b;
            std::memcpy(&a, &loop[i], 4);
            std::memcpy(&b, &vec[i], 4);
            differ += a != b;
        }
        CHECK(differ == 0);
#endif
    }

    TEST_CASE("ops.moe.mxfp4_dots_on_the_vector_kernel_are_the_loops_bits") {
        // values of every magnitude, so that the order of the additions shows in the bits
        Generator g(11);
        const std::size_t k = 96;
        const std::vector<float> row = g.uniform(k, -6.0, 6.0), row1 = g.uniform(k, -6.0, 6.0);
        std::vector<float> x = g.uniform(5 * k, -1.0, 1.0);
        for (std::size_t i = 0; i < x.size(); i += 7) x[i] *= 1e6f;
        for (std::size_t n : {std::size_t{1}, std::size_t{2}, std::size_t{3}, std::size_t{5}}) {
            CAPTURE(n);
            std::vector<float> loop(n * 3, -1.0f), vec(n * 3, -1.0f), one(n * 3, -1.0f);
            fast::mxfp4_dots_loop(row.data(), k, x.data(), n, loop.data(), 3);
            fast::mxfp4_dots_loop(row1.data(), k, x.data(), n, loop.data() + 1, 3);
            double want = 0.0;  // the loop is a dot product
            for (std::size_t c = 0; c < k; ++c) want += static_cast<double>(x[c]) * row[c];
            CHECK(loop[0] == doctest::Approx(want).epsilon(1e-4));
#if defined(ATTNWALK_HAVE_AVX2)
            if (!fast::has_avx2_fma()) continue;
            fast::mxfp4_dots_avx2(row.data(), row1.data(), k, x.data(), n, vec.data(), 3);  // two rows
            fast::mxfp4_dots_avx2(row.data(), row.data(), k, x.data(), n, one.data(), 3);   // one row
            for (std::size_t i = 0; i < loop.size(); ++i) {
                CAPTURE(i);
                std::uint32_t a, b, c;
                std::memcpy(&a, &loop[i], 4);
                std::memcpy(&b, &vec[i], 4);
                std::memcpy(&c, &one[i], 4);
                CHECK(a == b);  // the same bits (unwritten entries stay -1 in both)
                if (i % 3 == 0) CHECK(a == c);
                else CHECK(one[i] == -1.0f);  // one row writes its own column alone
            }
#endif
        }
    }
}
