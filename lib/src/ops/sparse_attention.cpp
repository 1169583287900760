// DeepSeek Sparse Attention's selection: the lightning indexer and the top-k keys.
#include "attnwalk/ops/sparse_attention.hpp"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <utility>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/attention.hpp"
#include "attnwalk/ops/norms.hpp"
#include "attnwalk/ops/softmax.hpp"

namespace attnwalk {

void IndexerWeights::check() const {
    if (heads == 0 || head_dim() == 0) throw UsageError("the lightning indexer needs at least one index head of at least one feature");
    if (query.in() != key.in() || gates.in() != key.in())
        throw UsageError("the indexer's three projections must read the same width: " + std::to_string(query.in()) + ", " +
                         std::to_string(key.in()) + ", " + std::to_string(gates.in()));
    if (query.out() != heads * head_dim() || gates.out() != heads)
        throw UsageError("the indexer's projections do not fit " + std::to_string(heads) + " index heads of " + std::to_string(head_dim()) +
                         ": W_q_index gives " + std::to_string(query.out()) + ", W_weights " + std::to_string(gates.out()));
}

IndexerForward lightning_indexer(const Cube& x, const IndexerWeights& w, bool causal) {
    w.check();
    if (x.shape(2) != w.key.in())
        throw UsageError("the indexer reads " + std::to_string(w.key.in()) + " features per token, the input has " + std::to_string(x.shape(2)));
    const std::size_t B = x.shape(0), T = x.shape(1), H = w.heads, d = w.head_dim();
    IndexerForward f;
    f.scale = static_cast<float>(std::pow(static_cast<double>(d), -0.5));  // index_head_dim ** -0.5
    f.q = project(x, w.query);  // (B,T,H·d)
    f.k = project(x, w.key);    // (B,T,d)
    f.gates = softmax(project(x, w.gates));  // (B,T,H): W_weights(x).softmax(dim=-1), normalised across the heads
    f.qh = split_heads(f.q, H);  // (B,H_I,T,d_I): the view(b, T, H_I, d_I) read head by head
    f.dots = Hyper::from_shape({B, H, T, T});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t s = 0; s < T; ++s) f.dots(b, h, t, s) = std::max(index_dot(f, b, h, t, s) * f.scale, 0.0f);  // ReLU
    f.scores = Cube::from_shape({B, T, T});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t s = 0; s < T; ++s)
                f.scores(b, t, s) = causal && s > t ? -std::numeric_limits<float>::infinity() : index_score(f, b, t, s);
    return f;
}

void LatentIndexerWeights::check() const {
    const std::size_t d = head_dim();
    if (heads == 0 || d == 0) throw UsageError("the indexer needs at least one index head of at least one feature");
    if (wq_b.out() != heads * d || weights_proj.out() != heads)
        throw UsageError("the indexer's projections do not fit " + std::to_string(heads) + " index heads of " + std::to_string(d) + ": wq_b gives " +
                         std::to_string(wq_b.out()) + ", weights_proj " + std::to_string(weights_proj.out()));
    if (weights_proj.in() != wk.in()) throw UsageError("the indexer's wk and weights_proj read different widths");
    if (k_norm.size() != d || k_norm_bias.size() != d) throw UsageError("the indexer's k_norm has " + std::to_string(k_norm.size()) + " weights; d_I = " + std::to_string(d));
    if (rope > d || rope % 2) throw UsageError("the indexer turns the first " + std::to_string(rope) + " features of " + std::to_string(d) + ": expected an even number, at most d_I");
    if (topk == 0) throw UsageError("index_topk must be at least 1: a query would keep no key");
}

IndexerForward latent_indexer(const Cube& x, const Cube& q_latent, const LatentIndexerWeights& w, const RopeParams& rope, std::size_t position0,
                              const Cube* past_keys) {
    w.check();
    const std::size_t B = x.shape(0), T = x.shape(1), H = w.heads, d = w.head_dim();
    if (x.shape(2) != w.wk.in() || q_latent.shape(0) != B || q_latent.shape(1) != T || q_latent.shape(2) != w.wq_b.in())
        throw UsageError("the indexer reads " + std::to_string(w.wk.in()) + " features and a query latent of " + std::to_string(w.wq_b.in()) + " per token");
    const std::size_t P = past_keys ? past_keys->shape(1) : 0, S = P + T;
    if (P && (past_keys->shape(0) != B || past_keys->shape(2) != d))
        throw UsageError("the indexer's cache holds keys of " + std::to_string(past_keys->shape(2)) + " features; d_I = " + std::to_string(d));
    IndexerForward f;
    f.scale = static_cast<float>(std::pow(static_cast<double>(d), -0.5));       // index_head_dim ** -0.5
    f.gate_scale = static_cast<float>(std::pow(static_cast<double>(H), -0.5));  // index_n_heads ** -0.5
    f.q = project(q_latent, w.wq_b);  // (B,T,H·d): wq_b(q_resid)
    f.qh = split_heads(f.q, H);       // (B,H,T,d)
    f.k_normed = layer_norm(project(x, w.wk), w.k_norm, w.k_norm_bias, w.eps);  // k_norm(wk(x))
    Hyper k_new = Hyper::from_shape({B, 1, T, d});
    std::copy(f.k_normed.begin(), f.k_normed.end(), k_new.begin());
    if (w.rope) {  // apply_rotary_pos_emb, half-split, on the first d_rope features; the rest pass
        RopeParams params = rope;
        params.rotary_dim = 0;
        params.interleaved = false;
        const Rope tables = rope_tables(w.rope, T, position0, params);
        f.qh = apply_rope(f.qh, tables);
        k_new = apply_rope(k_new, tables);
    }
    f.k = Cube::from_shape({B, S, d});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t s = 0; s < S; ++s)
            for (std::size_t c = 0; c < d; ++c) f.k(b, s, c) = s < P ? (*past_keys)(b, s, c) : k_new(b, 0, s - P, c);
    f.gates = project(x, w.weights_proj);  // weights_proj(x) · index_n_heads ** -0.5
    f.gates *= f.gate_scale;
    f.dots = Hyper::from_shape({B, H, T, S});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t s = 0; s < S; ++s) f.dots(b, h, t, s) = std::max(index_dot(f, b, h, t, s) * f.scale, 0.0f);  // ReLU(q·k·scale)
    f.scores = Cube::from_shape({B, T, S});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t s = 0; s < S; ++s)
                f.scores(b, t, s) = s > P + t ? -std::numeric_limits<float>::infinity() : index_score(f, b, t, s);
    return f;
}

float index_dot(const IndexerForward& f, std::size_t b, std::size_t h, std::size_t t, std::size_t s) {
    float dot = 0.0f;
    for (std::size_t c = 0; c < f.qh.shape(3); ++c) dot += f.qh(b, h, t, c) * f.k(b, s, c);
    return dot;
}

std::vector<float> index_terms(const IndexerForward& f, std::size_t b, std::size_t t, std::size_t s) {
    std::vector<float> terms(f.gates.shape(2));
    for (std::size_t h = 0; h < terms.size(); ++h) terms[h] = f.gates(b, t, h) * f.dots(b, h, t, s);
    return terms;
}

float index_score(const IndexerForward& f, std::size_t b, std::size_t t, std::size_t s) {
    float sum = 0.0f;
    for (float term : index_terms(f, b, t, s)) sum += term;
    return sum;
}

TopKeys top_k_keys(const Cube& scores, std::size_t k) {
    if (k == 0) throw UsageError("top-k needs k ≥ 1: with k = 0 a query keeps no key and its softmax has nothing to weigh");
    const std::size_t B = scores.shape(0), T = scores.shape(1), S = scores.shape(2);
    TopKeys top;
    top.k = std::min(k, S);  // the textbook: min(topk, S)
    top.indices.resize(B * T * top.k);
    top.kept = xt::zeros<float>({B, T, S});
    top.kth = Mat::from_shape({B, T});
    // torch.topk on the CPU (ATen's topk_impl_loop): (value as double, index) pairs, the k
    // largest moved to the front by nth_element, or partial_sort when 64·k ≤ S; NaN ranks first.
    using Elem = std::pair<double, std::int64_t>;
    const auto larger = [](const Elem& x, const Elem& y) { return (std::isnan(x.first) && !std::isnan(y.first)) || x.first > y.first; };
    std::vector<Elem> queue(S);
    const auto kk = static_cast<std::ptrdiff_t>(top.k);
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            for (std::size_t s = 0; s < S; ++s) queue[s] = {scores(b, t, s), static_cast<std::int64_t>(s)};
            if (top.k * 64 <= S) {
                std::partial_sort(queue.begin(), queue.begin() + kk, queue.end(), larger);
            } else {
                std::nth_element(queue.begin(), queue.begin() + kk - 1, queue.end(), larger);
                std::sort(queue.begin(), queue.begin() + kk - 1, larger);  // sorted=True
            }
            for (std::size_t i = 0; i < top.k; ++i) {
                const auto s = static_cast<std::size_t>(queue[i].second);
                top.indices[(b * T + t) * top.k + i] = s;
                if (scores(b, t, s) > -std::numeric_limits<float>::infinity()) top.kept(b, t, s) = 1.0f;
            }
            top.kth(b, t) = static_cast<float>(queue[top.k - 1].first);
        }
    return top;
}

Mat sparse_bias(const TopKeys& top, std::size_t b) {
    const std::size_t T = top.kept.shape(1), S = top.kept.shape(2);
    Mat bias = Mat::from_shape({T, S});
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t s = 0; s < S; ++s) bias(t, s) = top.kept(b, t, s) != 0.0f ? 0.0f : -std::numeric_limits<float>::infinity();
    return bias;
}

SparseWork sparse_work_per_query(std::size_t keys, std::size_t index_heads, std::size_t index_dim, std::size_t d_out, std::size_t k) {
    const double n = static_cast<double>(keys), per_pair = 2.0 * static_cast<double>(d_out);
    SparseWork w;
    w.indexer = n * static_cast<double>(index_heads) * (static_cast<double>(index_dim) + 1.0);
    w.full = n * per_pair;
    w.sparse = static_cast<double>(std::min(keys, k)) * per_pair;
    return w;
}

SparseWork sparse_work_per_sequence(std::size_t tokens, std::size_t index_heads, std::size_t index_dim, std::size_t d_out, std::size_t k) {
    // Σ_t t = T(T + 1)/2 keys for the indexer and full attention; Σ_t min(k, t) for the sparse one
    const double T = static_cast<double>(tokens), kk = static_cast<double>(std::min(k, tokens));
    const double pairs = T * (T + 1.0) / 2.0, kept = kk * (kk + 1.0) / 2.0 + (T - kk) * kk;
    const double per_pair = 2.0 * static_cast<double>(d_out);
    SparseWork w;
    w.indexer = pairs * static_cast<double>(index_heads) * (static_cast<double>(index_dim) + 1.0);
    w.full = pairs * per_pair;
    w.sparse = kept * per_pair;
    return w;
}

}  // namespace attnwalk
