#include "attnwalk/ops/latent_attention.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <string>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/norms.hpp"
#include "attnwalk/ops/softmax.hpp"

namespace attnwalk {

namespace {

// out (m×n) = a (m×k, rows lda apart) · bᵀ (b: n×k, rows ldb apart).
void product_nt(const float* a, std::size_t lda, const float* b, std::size_t ldb, float* out, std::size_t m, std::size_t n,
                std::size_t k) {
    if (k == 0) return std::fill(out, out + m * n, 0.0f);  // no rotary part (d_rope = 0): a sum of nothing
    sgemm(false, true, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, out, n);
}
// out (m×n) = a (m×k) · b (k×n, rows ldb apart).
void product_nn(const float* a, std::size_t lda, const float* b, std::size_t ldb, float* out, std::size_t m, std::size_t n,
                std::size_t k) {
    sgemm(false, false, m, n, k, 1.0f, a, lda, b, ldb, 0.0f, out, n);
}

// The (b, h) slice of a 4-axis tensor, by arithmetic: a slice may hold nothing (d_rope = 0),
// and an element reference into it would bind to nothing.
template <typename X>
auto slice(X& x, std::size_t b, std::size_t h) {
    return x.data() + (b * x.shape(1) + h) * x.shape(2) * x.shape(3);
}

// Features [first, first+count) of each head's `stride` columns of (B,T,H·stride): (B,H,T,count).
Hyper head_slice(const Cube& x, std::size_t heads, std::size_t stride, std::size_t first, std::size_t count) {
    const std::size_t B = x.shape(0), T = x.shape(1);
    Hyper out = fresh<4>({B, heads, T, count});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t c = 0; c < count; ++c) out(b, h, t, c) = x(b, t, h * stride + first + c);
    return out;
}

// rope_interleave: (x0, x1, x2, x3, …) -> (x0, x2, …, x1, x3, …), as Hugging Face's
// apply_rotary_pos_emb_interleave reorders before the half-split rotation.
Hyper deinterleave(const Hyper& x) {
    Hyper out = fresh<4>(x.shape());
    const std::size_t d = x.shape(3), half = d / 2, rows = x.size() / d;
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t i = 0; i < half; ++i) {
            out.data()[r * d + i] = x.data()[r * d + 2 * i];
            out.data()[r * d + half + i] = x.data()[r * d + 2 * i + 1];
        }
    return out;
}

// Q·Kᵀ for every head: q (B,H,T,n), k (B,H,T,n) or, `shared`, (B,1,T,n): (B,H,T,T).
Hyper head_scores(const Hyper& q, const Hyper& k) {
    const std::size_t B = q.shape(0), H = q.shape(1), T = q.shape(2), S = k.shape(2), n = q.shape(3);
    Hyper out = fresh<4>({B, H, T, S});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h) {
            const std::size_t kh = k.shape(1) == 1 ? 0 : h;
            product_nt(slice(q, b, h), n, slice(k, b, kh), n, slice(out, b, h), T, S, n);
        }
    return out;
}

// softmax(ω·scaling) row by row, −∞ above the diagonal when causal and where `kept` (B,T,S,
// the indexer's choice) is 0; each row's max and sum into `row_max` and `row_sum` (B,H,T) when given.
Hyper attention_weights(const Hyper& scores, float scaling, bool causal, const Cube* kept, Cube* row_max = nullptr, Cube* row_sum = nullptr) {
    Hyper w = scores;
    if (row_max) *row_max = fresh<3>({w.shape(0), w.shape(1), w.shape(2)});
    if (row_sum) *row_sum = fresh<3>({w.shape(0), w.shape(1), w.shape(2)});
    const std::size_t T = w.shape(2), S = w.shape(3), rows = w.size() / S;
    for (std::size_t r = 0; r < rows; ++r) {
        float* row = w.data() + r * S;
        const std::size_t i = r % T, b = r / (T * w.shape(1));
        const float* keep = kept ? kept->data() + (b * T + i) * S : nullptr;
        for (std::size_t j = 0; j < S; ++j)
            row[j] = (causal && j > i + (S - T)) || (keep && keep[j] == 0.0f) ? -std::numeric_limits<float>::infinity() : row[j] * scaling;
        const RowSoftmax m = softmax_row(row, S);
        if (row_max) row_max->data()[r] = m.max;
        if (row_sum) row_sum->data()[r] = m.sum;
    }
    return w;
}

// A (B,H,T,S) · values (B,H,S,n) (or one (B,T,n) for every head, `latent`): (B,H,T,n).
Hyper weighted_sum(const Hyper& a, const float* values, std::size_t head_stride, std::size_t batch_stride, std::size_t n) {
    const std::size_t B = a.shape(0), H = a.shape(1), T = a.shape(2), S = a.shape(3);
    Hyper out = fresh<4>({B, H, T, n});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            product_nn(slice(a, b, h), S, values + b * batch_stride + h * head_stride, n, slice(out, b, h), T, n, S);
    return out;
}

Hyper add(const Hyper& a, const Hyper& b) {
    Hyper out = a;
    for (std::size_t i = 0; i < out.size(); ++i) out.data()[i] += b.data()[i];
    return out;
}

std::string n(std::size_t v) { return std::to_string(v); }

}  // namespace

void LatentWeights::check() const {
    const std::size_t d = d_in(), r = rank(), H = heads, qk = qk_head();
    if (heads == 0 || qk == 0 || value == 0) throw UsageError("latent attention needs at least one head, d_nope + d_rope ≥ 1 and d_v ≥ 1");
    if (rope % 2) throw UsageError("the rotary part of each head needs an even d_rope, not " + n(rope));
    if (kv_a_proj.out() != r + rope)
        throw UsageError("kv_a_proj makes " + n(kv_a_proj.out()) + " numbers per token; r + d_rope = " + n(r + rope));
    if (kv_a_norm.size() != r) throw UsageError("kv_a_layernorm has " + n(kv_a_norm.size()) + " weights; r = " + n(r));
    if (kv_b_proj.out() != H * (nope + value))
        throw UsageError("kv_b_proj makes " + n(kv_b_proj.out()) + " numbers; H·(d_nope + d_v) = " + n(H * (nope + value)));
    const Linear* q = q_proj ? &*q_proj : q_b_proj ? &*q_b_proj : nullptr;
    if (!q || (q_b_proj && !q_a_proj)) throw UsageError("latent attention needs q_proj, or q_a_proj and q_b_proj");
    if (q->out() != H * qk) throw UsageError("the query projection makes " + n(q->out()) + " numbers; H·(d_nope + d_rope) = " + n(H * qk));
    if ((q_proj ? q_proj->in() : q_a_proj->in()) != d) throw UsageError("the query and kv_a_proj read different widths");
    if (q_a_proj && (q_b_proj->in() != q_a_proj->out() || q_a_norm.size() != q_a_proj->out()))
        throw UsageError("q_a_proj, q_a_layernorm and q_b_proj disagree on the query's rank");
    if (indexer) {
        indexer->check();
        if (!q_a_proj || indexer->wq_b.in() != q_a_proj->out())
            throw UsageError("the indexer's wq_b reads the query latent: it needs q_a_proj, and the same rank (" + n(indexer->wq_b.in()) + ")");
        if (indexer->wk.in() != d) throw UsageError("the indexer's wk reads " + n(indexer->wk.in()) + " features; the layer reads " + n(d));
        if (indexer->rope != rope) throw UsageError("the indexer turns " + n(indexer->rope) + " features; the layer's rotary part has " + n(rope));
    }
    if (o_proj.in() != H * value) throw UsageError("o_proj reads " + n(o_proj.in()) + " numbers; H·d_v = " + n(H * value));
}

LatentForward latent_attention_forward(const Cube& x, const LatentWeights& w, const LatentSpec& spec) {
    w.check();
    if (x.shape(2) != w.d_in())
        throw UsageError("the weights take d_in = " + n(w.d_in()) + " features, the input has " + n(x.shape(2)));
    const std::size_t B = x.shape(0), T = x.shape(1), H = w.heads, r = w.rank(), qk = w.qk_head();
    LatentForward f;
    f.scaling = spec.scaling.value_or(1.0f / std::sqrt(static_cast<float>(qk)));
    if (w.q_a_proj) {
        f.q_a = project(x, *w.q_a_proj);
        f.q_a_normed = rms_norm(f.q_a, w.q_a_norm, w.eps);
        f.q = project(f.q_a_normed, *w.q_b_proj);
    } else {
        f.q = project(x, *w.q_proj);
    }
    f.kv_a = project(x, w.kv_a_proj);
    Cube c = fresh<3>({B, T, r});
    f.k_rope_plain = fresh<3>({B, T, w.rope});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t) {
            for (std::size_t i = 0; i < r; ++i) c(b, t, i) = f.kv_a(b, t, i);
            for (std::size_t i = 0; i < w.rope; ++i) f.k_rope_plain(b, t, i) = f.kv_a(b, t, r + i);
        }
    const Cube latent_new = rms_norm(c, w.kv_a_norm, w.eps);
    f.q_nope = head_slice(f.q, H, qk, 0, w.nope);
    f.q_rope_plain = head_slice(f.q, H, qk, w.nope, w.rope);
    Hyper k_rope_new = head_slice(f.k_rope_plain, 1, w.rope, 0, w.rope);  // (B,1,T,d_rope)
    Hyper q_rope = f.q_rope_plain;
    if (w.rope) {
        if (spec.interleave) {
            q_rope = deinterleave(q_rope);
            k_rope_new = deinterleave(k_rope_new);
        }
        RopeParams params = spec.rope;
        params.rotary_dim = 0;
        f.tables = rope_tables(w.rope, T, spec.position0, params);
        q_rope = apply_rope(q_rope, *f.tables);
        k_rope_new = apply_rope(k_rope_new, *f.tables);
    }
    f.q_rope = q_rope;
    // the cache's tokens first, then the new ones: S = cached + T
    const std::size_t P = spec.past_latent ? spec.past_latent->shape(1) : 0, S = P + T;
    if (P && (spec.past_latent->shape(0) != B || spec.past_latent->shape(2) != r || !spec.past_k_rope ||
              spec.past_k_rope->shape(0) != B || spec.past_k_rope->shape(1) != P || spec.past_k_rope->shape(2) != w.rope))
        throw UsageError("the latent cache holds other sizes than this layer makes (r = " + n(r) + ", d_rope = " + n(w.rope) + ")");
    f.latent = fresh<3>({B, S, r});
    f.k_rope = fresh<3>({B, S, w.rope});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t s = 0; s < S; ++s) {
            for (std::size_t i = 0; i < r; ++i) f.latent(b, s, i) = s < P ? (*spec.past_latent)(b, s, i) : latent_new(b, s - P, i);
            for (std::size_t i = 0; i < w.rope; ++i)
                f.k_rope(b, s, i) = s < P ? (*spec.past_k_rope)(b, s, i) : k_rope_new.data()[(b * T + (s - P)) * w.rope + i];
        }
    const Cube kv = project(f.latent, w.kv_b_proj);
    f.k_nope = head_slice(kv, H, w.nope + w.value, 0, w.nope);
    f.v = head_slice(kv, H, w.nope + w.value, w.nope, w.value);
    const Hyper k_rope = head_slice(f.k_rope, 1, w.rope, 0, w.rope);  // (B,1,S,d_rope)

    f.scores_nope = head_scores(f.q_nope, f.k_nope);
    f.scores_rope = head_scores(f.q_rope, k_rope);
    f.scores = add(f.scores_nope, f.scores_rope);
    if (w.indexer) {  // DeepseekV32Indexer: the keys each query keeps, the others masked
        if (spec.past_index_keys ? spec.past_index_keys->shape(1) != P : P != 0)
            throw UsageError("the indexer's cache holds other tokens than the latent cache (" + n(spec.past_index_keys ? spec.past_index_keys->shape(1) : 0) +
                             " and " + n(P) + ")");
        RopeParams params = spec.rope;
        f.index = latent_indexer(x, f.q_a_normed, *w.indexer, params, spec.position0, spec.past_index_keys);
        f.top = top_k_keys(f.index->scores, w.indexer->topk);
    }
    f.weights = attention_weights(f.scores, f.scaling, spec.causal, f.top ? &f.top->kept : nullptr, &f.row_max, &f.row_sum);
    f.head_outputs = weighted_sum(f.weights, f.v.data(), S * w.value, H * S * w.value, w.value);
    f.context = merge_heads(f.head_outputs);
    f.output = project(f.context, w.o_proj);
    return f;
}

LatentAbsorbed latent_attention_absorbed(const LatentForward& f, const LatentWeights& w, const LatentSpec& spec) {
    const std::size_t B = f.latent.shape(0), T = f.q_nope.shape(2), S = f.latent.shape(1), H = w.heads, r = w.rank(), stride = w.nope + w.value;
    const Mat kvb = w.kv_b_proj.matrix();  // r × H·(d_nope + d_v), x·W layout
    LatentAbsorbed a;
    // q̃_h = q_nope,h · W_UK,hᵀ: W_UK,h is kvb's columns h·stride … h·stride + d_nope − 1 (r × d_nope)
    a.q_latent = fresh<4>({B, H, T, r});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            product_nt(slice(f.q_nope, b, h), w.nope, kvb.data() + h * stride, kvb.shape(1), slice(a.q_latent, b, h), T, r, w.nope);
    const Hyper latent = head_slice(f.latent, 1, r, 0, r);  // (B,1,T,r): one for every head
    a.scores_nope = head_scores(a.q_latent, latent);
    a.scores = add(a.scores_nope, f.scores_rope);
    a.weights = attention_weights(a.scores, f.scaling, spec.causal, f.top ? &f.top->kept : nullptr);
    a.latent_context = weighted_sum(a.weights, f.latent.data(), 0, S * r, r);
    // Z_h = (A_h·c_KV) · W_UV,h: kvb's columns h·stride + d_nope … (r × d_v)
    a.head_outputs = fresh<4>({B, H, T, w.value});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            product_nn(slice(a.latent_context, b, h), r, kvb.data() + h * stride + w.nope, kvb.shape(1), slice(a.head_outputs, b, h), T,
                       w.value, r);
    a.output = project(merge_heads(a.head_outputs), w.o_proj);
    return a;
}

}  // namespace attnwalk
