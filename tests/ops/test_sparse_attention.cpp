// DeepSeek Sparse Attention's selection (ops/sparse_attention): the top k as torch.topk
// picks them, ties included (the indices below are Debian's torch 1.13's), and the indexer.
#include <cmath>
#include <limits>
#include <vector>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/sparse_attention.hpp"
#include "test_util.hpp"

using namespace attnwalk;

namespace {

// Row `values` through top_k_keys: the indices picked, in its order.
std::vector<std::size_t> picked(const std::vector<float>& values, std::size_t k) {
    Cube row = Cube::from_shape({1, 1, values.size()});
    std::copy(values.begin(), values.end(), row.begin());
    const TopKeys top = top_k_keys(row, k);
    return top.indices;
}

}  // namespace

TEST_SUITE("sparse_attention") {
    TEST_CASE("sparse_attention.ties_go_as_torch_topk_breaks_them") {
        const float inf = std::numeric_limits<float>::infinity();
        using V = std::vector<std::size_t>;
        CHECK(picked({0, 0, 0, 0, 0, 0}, 3) == V{3, 5, 4});
        CHECK(picked({0, 0, 0, 0, 0.0109f, 0.0006f}, 3) == V{4, 5, 3});
        CHECK(picked({1, 2, 2, 2, 1, 0}, 2) == V{1, 3});
        CHECK(picked({-0.0f, 0.0f, 0.0f, 0.0f, -1.0f, -0.0f}, 3) == V{3, 5, 0});
        CHECK(picked({0, -inf, -inf, -inf}, 3) == V{0, 2, 3});
        CHECK(picked(std::vector<float>(20, 0.0f), 5) == V{12, 14, 13, 15, 11});
        CHECK(picked(std::vector<float>(128, 0.0f), 2) == V{0, 1});  // 64·k ≤ n: partial_sort
        std::vector<float> ones(130, 0.0f);
        ones[5] = ones[77] = ones[100] = 1.0f;
        CHECK(picked(ones, 2) == V{77, 5});
    }

    TEST_CASE("sparse_attention.keeps_only_visible_keys_and_caps_k_at_the_row") {
        const float inf = std::numeric_limits<float>::infinity();
        Cube s = {{{0.5f, -inf, -inf}, {0.1f, 0.2f, -inf}, {0.3f, 0.1f, 0.2f}}};
        const TopKeys top = top_k_keys(s, 5);
        CHECK(top.k == 3);
        for (std::size_t t = 0; t < 3; ++t)
            for (std::size_t j = 0; j < 3; ++j) CHECK(top.kept(0, t, j) == (j <= t ? 1.0f : 0.0f));
        const TopKeys two = top_k_keys(s, 2);
        CHECK(two.kept(0, 2, 1) == 0.0f);  // 0.1 is the lowest of row 3
        CHECK(two.kth(0, 2) == 0.2f);
        CHECK(std::isinf(two.kth(0, 0)));
        CHECK_THROWS_AS(top_k_keys(s, 0), UsageError);
        const Mat bias = sparse_bias(two, 0);
        CHECK(bias(2, 0) == 0.0f);
        CHECK(std::isinf(bias(2, 1)));
    }

    TEST_CASE("sparse_attention.an_index_score_is_its_heads_terms_added") {
        IndexerWeights w;
        w.heads = 2;
        w.query = owned_linear(Mat{{1.0f, -1.0f, 0.5f, 2.0f}, {0.0f, 1.0f, -1.0f, 0.25f}});  // d_in 2 → 2 heads of 2
        w.key = owned_linear(Mat{{1.0f, 0.5f}, {-0.5f, 1.0f}});
        w.gates = owned_linear(Mat{{1.0f, -2.0f}, {0.5f, 1.0f}});
        const Cube x = {{{1.0f, 0.0f}, {0.0f, 1.0f}, {1.0f, 1.0f}}};
        const IndexerForward f = lightning_indexer(x, w);
        CHECK(f.scale == static_cast<float>(1.0 / std::sqrt(2.0)));
        for (std::size_t t = 0; t < 3; ++t)
            for (std::size_t s = 0; s < 3; ++s) {
                if (s > t) {
                    CHECK(std::isinf(f.scores(0, t, s)));
                    continue;
                }
                CHECK(f.scores(0, t, s) == index_score(f, 0, t, s));
                double want = 0.0;
                for (std::size_t h = 0; h < 2; ++h) {
                    double dot = 0.0;
                    for (std::size_t c = 0; c < 2; ++c) dot += static_cast<double>(f.q(0, t, h * 2 + c)) * f.k(0, s, c);
                    want += static_cast<double>(f.gates(0, t, h)) * std::max(0.0, dot * f.scale);
                }
                CHECK(f.scores(0, t, s) == doctest::Approx(want).epsilon(1e-6));
            }
        // the textbook's gates: a softmax across the index heads of x·W_weights (x_1·W_weights = (1, −2))
        CHECK(f.gates(0, 0, 0) == doctest::Approx(1.0 / (1.0 + std::exp(-3.0))).epsilon(1e-6));
        CHECK(f.gates(0, 0, 1) == doctest::Approx(std::exp(-3.0) / (1.0 + std::exp(-3.0))).epsilon(1e-6));
        for (std::size_t t = 0; t < 3; ++t) CHECK(f.gates(0, t, 0) + f.gates(0, t, 1) == doctest::Approx(1.0).epsilon(1e-6));
    }

    TEST_CASE("sparse_attention.work_counts_the_indexer_and_the_kept_keys") {
        const SparseWork q = sparse_work_per_query(6, 2, 2, 4, 3);
        CHECK(q.indexer == 6 * 2 * 3);
        CHECK(q.full == 6 * 8);
        CHECK(q.sparse == 3 * 8);
        const SparseWork s = sparse_work_per_sequence(6, 2, 2, 4, 3);
        CHECK(s.full == 21 * 8);
        CHECK(s.sparse == (1 + 2 + 3 + 3 + 3 + 3) * 8);
        CHECK(sparse_work_per_sequence(4, 1, 1, 2, 9).sparse == sparse_work_per_sequence(4, 1, 1, 2, 9).full);
    }
}
