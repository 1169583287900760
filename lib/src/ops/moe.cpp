#include "attnwalk/ops/moe.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/activations.hpp"
#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/work.hpp"
#include "kernels.hpp"

namespace attnwalk {

void Mxfp4Rows::row(std::size_t r, float* out) const {
    const std::size_t groups = cols / 32;
#if defined(ATTNWALK_HAVE_AVX2)
    if (fast::has_avx2_fma()) {
        fast::mxfp4_row_avx2(blocks + r * (cols / 2), scales + r * groups, groups, out);
        return;
    }
#endif
    fast::mxfp4_row_loop(blocks + r * (cols / 2), scales + r * groups, groups, out);
}

void ExpertMatrix::apply(const float* x, std::size_t n, float* y, std::size_t ldy) const {
    if (!mxfp4) {
        project_into(x, n, dense, y, ldy);
        return;
    }
    const Mxfp4Rows& m = *mxfp4;
    const double rows = static_cast<double>(m.rows), cols = static_cast<double>(m.cols), tokens = static_cast<double>(n);
    count_work(2.0 * tokens * rows * cols, rows * cols / 2.0 + rows * cols / 32.0 + 4.0 * tokens * (rows + cols));  // 4 bits a weight, a byte of scale per 32
    on_every_core(n * m.rows * m.cols, [&](std::size_t worker, std::size_t workers) {
        const WorkerShare share = worker_share(m.rows, worker, workers);
        std::vector<float> decoded(2 * m.cols);
        float* const row = decoded.data();
        // each output's row dequantised once for every token; 16 partial sums (vector lanes) a
        // dot product, added at the end: the same bits either way (cols is a multiple of 32)
#if defined(ATTNWALK_HAVE_AVX2)
        if (fast::has_avx2_fma()) {
            float* const next = row + m.cols;
            for (std::size_t j = share.begin; j < share.end; j += 2) {  // two rows at a time
                m.row(j, row);
                const bool pair = j + 1 < share.end;
                if (pair) m.row(j + 1, next);
                fast::mxfp4_dots_avx2(row, pair ? next : row, m.cols, x, n, y + j, ldy);
            }
            return;
        }
#endif
        for (std::size_t j = share.begin; j < share.end; ++j) {
            m.row(j, row);
            fast::mxfp4_dots_loop(row, m.cols, x, n, y + j, ldy);
        }
    });
}

Mat ExpertMatrix::matrix() const {
    if (!mxfp4) return dense.matrix();
    const std::size_t n_in = in(), n_out = out();
    Mat m = Mat::from_shape({n_in, n_out});
    std::vector<float> row(n_in);
    for (std::size_t j = 0; j < n_out; ++j) {
        mxfp4->row(j, row.data());
        for (std::size_t c = 0; c < n_in; ++c) m(c, j) = row[c];
    }
    return m;
}

namespace {

// An expert's multiply-adds per token.
double expert_work(const Expert& e, ExpertKind kind) {
    const auto dims = [](double a, double b) { return a * b; };
    if (kind == ExpertKind::swiglu)
        return dims(static_cast<double>(e.gate.in()), static_cast<double>(e.gate.out())) * 2.0 +
               dims(static_cast<double>(e.down.in()), static_cast<double>(e.down.out()));
    return dims(static_cast<double>(e.gate_up.in()), static_cast<double>(e.gate_up.out())) +
           dims(static_cast<double>(e.down.in()), static_cast<double>(e.down.out()));
}

// The order torch.topk gives: the largest first, NaN before everything.
void rank_largest(const float* r, std::vector<std::size_t>& order) {
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {
        return std::isnan(r[a]) ? !std::isnan(r[b]) : !std::isnan(r[b]) && r[a] > r[b];
    });
}

// gpt-oss: the k largest logits, a softmax over them.
void route_softmax(const MoeWeights& w, MoeOutput& out) {
    const std::size_t N = out.logits.shape(0), E = out.logits.shape(1), k = w.top_k;
    std::vector<std::size_t> order(E);
    for (std::size_t t = 0; t < N; ++t) {
        const float* r = &out.logits(t, 0);
        rank_largest(r, order);
        const float top = r[order[0]];
        float sum = 0.0f;
        for (std::size_t i = 0; i < k; ++i) sum += (out.weights(t, i) = std::exp(r[order[i]] - top));
        const float inv = 1.0f / sum;  // as PyTorch's softmax: times the reciprocal of the sum
        for (std::size_t i = 0; i < k; ++i) {
            out.weights(t, i) *= inv;
            out.chosen[t * k + i] = order[i];
        }
    }
}

// DeepSeek-V3: sigmoid scores; the choice (scores + correction bias) limited to the best
// groups; the chosen scores normalised and scaled.
void route_sigmoid_grouped(const MoeWeights& w, MoeOutput& out) {
    const std::size_t N = out.logits.shape(0), E = out.logits.shape(1), k = w.top_k, G = w.groups, per = E / G;
    out.scores = Mat::from_shape({N, E});
    std::vector<float> choice(E), group_score(G);
    std::vector<std::size_t> order(E), group_order(G), in_group(per);
    for (std::size_t t = 0; t < N; ++t) {
        for (std::size_t e = 0; e < E; ++e) {
            out.scores(t, e) = 1.0f / (1.0f + std::exp(-out.logits(t, e)));
            choice[e] = out.scores(t, e) + (w.correction_bias.size() ? w.correction_bias(e) : 0.0f);
        }
        for (std::size_t g = 0; g < G; ++g) {  // a group's score: its two largest choices
            rank_largest(&choice[g * per], in_group);
            group_score[g] = choice[g * per + in_group[0]] + (per > 1 ? choice[g * per + in_group[1]] : 0.0f);
        }
        rank_largest(group_score.data(), group_order);
        std::vector<bool> kept(G, false);
        for (std::size_t i = 0; i < w.top_groups; ++i) kept[group_order[i]] = true;
        for (std::size_t e = 0; e < E; ++e)
            if (!kept[e / per]) choice[e] = 0.0f;  // as masked_fill(…, 0.0)
        rank_largest(choice.data(), order);
        float sum = 0.0f;
        for (std::size_t i = 0; i < k; ++i) {
            out.chosen[t * k + i] = order[i];
            sum += (out.weights(t, i) = out.scores(t, order[i]));
        }
        const float denominator = sum + 1e-20f;
        for (std::size_t i = 0; i < k; ++i) {
            if (w.normalise) out.weights(t, i) /= denominator;
            out.weights(t, i) *= w.routed_scale;
        }
    }
}

// Qwen3-Next: a softmax over every expert, the k largest, over their sum when normalised.
void route_softmax_all(const MoeWeights& w, MoeOutput& out) {
    const std::size_t N = out.logits.shape(0), E = out.logits.shape(1), k = w.top_k;
    out.scores = Mat::from_shape({N, E});
    std::vector<std::size_t> order(E);
    for (std::size_t t = 0; t < N; ++t) {
        float top = -std::numeric_limits<float>::infinity(), sum = 0.0f;
        for (std::size_t e = 0; e < E; ++e) top = std::max(top, out.logits(t, e));
        for (std::size_t e = 0; e < E; ++e) sum += (out.scores(t, e) = std::exp(out.logits(t, e) - top));
        const float inv = 1.0f / sum;
        for (std::size_t e = 0; e < E; ++e) out.scores(t, e) *= inv;
        rank_largest(&out.scores(t, 0), order);
        float chosen = 0.0f;
        for (std::size_t i = 0; i < k; ++i) {
            out.chosen[t * k + i] = order[i];
            chosen += (out.weights(t, i) = out.scores(t, order[i]));
        }
        if (w.normalise)
            for (std::size_t i = 0; i < k; ++i) out.weights(t, i) /= chosen;
    }
}

// A dense gated MLP on n rows of C: down(SiLU(gate(x)) ⊙ up(x)).
Cube swiglu_rows(const float* x, std::size_t n, std::size_t C, const Linear& gate, const Linear& up) {
    Cube in = Cube::from_shape({1, n, C});
    std::copy(x, x + n * C, in.begin());
    return mlp_hidden(in, MlpKind::swiglu, up, &gate);
}

}  // namespace

double moe_work(const MoeWeights& w, std::size_t tokens) {
    if (w.experts.empty()) return 0.0;
    const double per_expert = expert_work(w.experts.front(), w.kind);
    double shared = 0.0;
    if (w.shared)
        shared = static_cast<double>(w.shared->gate.in()) * (static_cast<double>(w.shared->gate.out()) * 3.0 + (w.shared->scale ? 1.0 : 0.0));
    return static_cast<double>(tokens) *
           (static_cast<double>(w.router.in()) * static_cast<double>(w.router.out()) + static_cast<double>(w.top_k) * per_expert + shared);
}

MoeOutput moe_forward(const Cube& x, const MoeWeights& w) {
    const std::size_t B = x.shape(0), T = x.shape(1), C = x.shape(2), N = B * T, E = w.experts.size(), k = w.top_k;
    if (w.router.in() != C || w.router.out() != E)
        throw UsageError("the router takes " + std::to_string(w.router.in()) + " features to " + std::to_string(w.router.out()) +
                         " experts; the layer has " + std::to_string(C) + " features and " + std::to_string(E) + " experts");
    if (k < 1 || k > E) throw UsageError("each token chooses 1 to " + std::to_string(E) + " experts, not " + std::to_string(k));
    if (w.routing == RouterKind::sigmoid_grouped) {
        if (w.groups < 1 || E % w.groups != 0 || w.top_groups < 1 || w.top_groups > w.groups)
            throw UsageError(std::to_string(E) + " experts in " + std::to_string(w.groups) + " groups, " + std::to_string(w.top_groups) +
                             " kept: the groups must divide the experts and at least one be kept");
        if (k > w.top_groups * (E / w.groups))
            throw UsageError("each token chooses " + std::to_string(k) + " experts from the " + std::to_string(w.top_groups * (E / w.groups)) +
                             " in its best groups");
        if (w.correction_bias.size() && w.correction_bias.size() != E)
            throw UsageError("the correction bias has " + std::to_string(w.correction_bias.size()) + " entries for " + std::to_string(E) + " experts");
    }
    MoeOutput out;
    const Cube logits = project(x, w.router);  // (B,T,E)
    out.logits = Mat::from_shape({N, E});
    std::copy(logits.begin(), logits.end(), out.logits.begin());
    out.chosen.resize(N * k);
    out.weights = Mat::from_shape({N, k});
    if (w.routing == RouterKind::sigmoid_grouped) route_sigmoid_grouped(w, out);
    else if (w.routing == RouterKind::softmax_all) route_softmax_all(w, out);
    else route_softmax(w, out);
    std::vector<std::vector<std::size_t>> rows_of(E);  // per expert, the rows that chose it
    for (std::size_t t = 0; t < N; ++t)
        for (std::size_t i = 0; i < k; ++i) rows_of[out.chosen[t * k + i]].push_back(t);
    out.output = Cube::from_shape({B, T, C});
    std::fill(out.output.begin(), out.output.end(), 0.0f);
    const float* xs = x.data();
    for (std::size_t e = 0; e < E; ++e) {  // in the experts' order, as the reference's sum over them
        const std::vector<std::size_t>& rows = rows_of[e];
        if (rows.empty()) continue;
        const Expert& ex = w.experts[e];
        const std::size_t n = rows.size();
        std::vector<float> in(n * C), y(n * C);
        for (std::size_t i = 0; i < n; ++i) std::copy(xs + rows[i] * C, xs + (rows[i] + 1) * C, in.begin() + static_cast<std::ptrdiff_t>(i * C));
        if (w.kind == ExpertKind::swiglu) {
            if (ex.gate.in() != C || ex.up.in() != C || ex.up.out() != ex.gate.out() || ex.down.in() != ex.gate.out() || ex.down.out() != C)
                throw UsageError("expert " + std::to_string(e) + "'s matrices do not fit: C = " + std::to_string(C) + ", gate " +
                                 std::to_string(ex.gate.in()) + "×" + std::to_string(ex.gate.out()) + ", up " + std::to_string(ex.up.in()) + "×" +
                                 std::to_string(ex.up.out()) + ", down " + std::to_string(ex.down.in()) + "×" + std::to_string(ex.down.out()));
            const Cube a = swiglu_rows(in.data(), n, C, ex.gate, ex.up);
            ex.down.apply(a.data(), n, y.data(), C);
        } else {
            const std::size_t two_i = ex.gate_up.out(), I = two_i / 2;
            if (ex.gate_up.in() != C || two_i % 2 != 0 || ex.down.in() != I || ex.down.out() != C)
                throw UsageError("expert " + std::to_string(e) + "'s matrices do not fit: C = " + std::to_string(C) + ", gate_up " +
                                 std::to_string(ex.gate_up.in()) + "×" + std::to_string(two_i) + ", down " + std::to_string(ex.down.in()) + "×" +
                                 std::to_string(ex.down.out()));
            std::vector<float> h(n * two_i), a(n * I);
            ex.gate_up.apply(in.data(), n, h.data(), two_i);
            for (std::size_t i = 0; i < n; ++i)
                for (std::size_t j = 0; j < I; ++j) {
                    float gate = h[i * two_i + 2 * j], up = h[i * two_i + 2 * j + 1];
                    if (ex.gate_up_bias.size()) {
                        gate += ex.gate_up_bias(2 * j);
                        up += ex.gate_up_bias(2 * j + 1);
                    }
                    gate = std::min(gate, w.limit);
                    up = std::clamp(up, -w.limit, w.limit);
                    const float glu = gate * (1.0f / (1.0f + std::exp(-(gate * w.alpha))));
                    a[i * I + j] = (up + 1.0f) * glu;
                }
            ex.down.apply(a.data(), n, y.data(), C);
        }
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t t = rows[i];
            float weight = 0.0f;
            for (std::size_t s = 0; s < k; ++s)
                if (out.chosen[t * k + s] == e) weight = out.weights(t, s);
            float* o = out.output.data() + t * C;
            for (std::size_t c = 0; c < C; ++c) o[c] += (y[i * C + c] + (ex.down_bias.size() ? ex.down_bias(c) : 0.0f)) * weight;
        }
    }
    if (w.shared) {  // every token through the shared expert, added after the routed ones
        out.shared = project(swiglu_rows(xs, N, C, w.shared->gate, w.shared->up), w.shared->down);
        out.shared.reshape({B, T, C});
        if (w.shared->scale) {  // σ(x·w_g), one number per token
            const Cube g = project(x, *w.shared->scale);  // (B,T,1)
            out.shared_scale = Vec::from_shape({N});
            for (std::size_t t = 0; t < N; ++t) {
                const float s = 1.0f / (1.0f + std::exp(-g.data()[t]));
                out.shared_scale(t) = s;
                for (std::size_t c = 0; c < C; ++c) out.shared.data()[t * C + c] *= s;
            }
        }
        out.output += out.shared;
    }
    return out;
}

}  // namespace attnwalk
