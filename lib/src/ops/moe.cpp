#include "attnwalk/ops/moe.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/blas.hpp"

namespace attnwalk {

namespace {
constexpr float fp4_values[16] = {0.0f, 0.5f, 1.0f, 1.5f, 2.0f, 3.0f, 4.0f, 6.0f, -0.0f, -0.5f, -1.0f, -1.5f, -2.0f, -3.0f, -4.0f, -6.0f};
}  // namespace

void Mxfp4Rows::row(std::size_t r, float* out) const {
    // every code at every scale, once: FP4[code] · 2^(s − 127) is exact in float32
    static const std::vector<float> table = [] {
        std::vector<float> t(256 * 16);
        for (int s = 0; s < 256; ++s)
            for (int v = 0; v < 16; ++v) t[static_cast<std::size_t>(s * 16 + v)] = std::ldexp(fp4_values[v], s - 127);
        return t;
    }();
    const std::size_t groups = cols / 32;
    const std::uint8_t* b = blocks + r * (cols / 2);
    const std::uint8_t* s = scales + r * groups;
    for (std::size_t g = 0; g < groups; ++g) {
        const float* scaled = &table[s[g] * 16];  // the 16 values at this group's scale
        for (std::size_t i = 0; i < 16; ++i) {
            const std::uint8_t byte = b[g * 16 + i];
            out[g * 32 + 2 * i] = scaled[byte & 0x0F];
            out[g * 32 + 2 * i + 1] = scaled[byte >> 4];
        }
    }
}

void ExpertMatrix::apply(const float* x, std::size_t n, float* y, std::size_t ldy) const {
    if (!mxfp4) {
        project_into(x, n, dense, y, ldy);
        return;
    }
    const Mxfp4Rows& m = *mxfp4;
    on_every_core(n * m.rows * m.cols, [&](std::size_t worker, std::size_t workers) {
        const WorkerShare share = worker_share(m.rows, worker, workers);
        std::vector<float> row(m.cols);
        for (std::size_t j = share.begin; j < share.end; ++j) {  // each output's row, dequantised once for every token
            m.row(j, row.data());
            for (std::size_t t = 0; t < n; ++t) {  // 16 partial sums (vector lanes), added at the end
                const float* xt = x + t * m.cols;
                float lane[16] = {};
                for (std::size_t c = 0; c < m.cols; c += 16)  // cols is a multiple of 32
                    for (std::size_t k = 0; k < 16; ++k) lane[k] += xt[c + k] * row[c + k];
                float sum = 0.0f;
                for (float v : lane) sum += v;
                y[t * ldy + j] = sum;
            }
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

double moe_work(const MoeWeights& w, std::size_t tokens) {
    if (w.experts.empty()) return 0.0;
    const Expert& e = w.experts.front();
    const double per_expert = static_cast<double>(e.gate_up.in()) * static_cast<double>(e.gate_up.out()) +
                              static_cast<double>(e.down.in()) * static_cast<double>(e.down.out());
    return static_cast<double>(tokens) *
           (static_cast<double>(w.router.in()) * static_cast<double>(w.router.out()) + static_cast<double>(w.top_k) * per_expert);
}

MoeOutput moe_forward(const Cube& x, const MoeWeights& w) {
    const std::size_t B = x.shape(0), T = x.shape(1), C = x.shape(2), N = B * T, E = w.experts.size(), k = w.top_k;
    if (w.router.in() != C || w.router.out() != E)
        throw UsageError("the router takes " + std::to_string(w.router.in()) + " features to " + std::to_string(w.router.out()) +
                         " experts; the layer has " + std::to_string(C) + " features and " + std::to_string(E) + " experts");
    if (k < 1 || k > E) throw UsageError("each token chooses 1 to " + std::to_string(E) + " experts, not " + std::to_string(k));
    MoeOutput out;
    const Cube logits = project(x, w.router);  // (B,T,E)
    out.logits = Mat::from_shape({N, E});
    std::copy(logits.begin(), logits.end(), out.logits.begin());
    out.chosen.resize(N * k);
    out.weights = Mat::from_shape({N, k});
    std::vector<std::vector<std::size_t>> rows_of(E);  // per expert, the rows that chose it
    std::vector<std::size_t> order(E);
    for (std::size_t t = 0; t < N; ++t) {
        const float* r = &out.logits(t, 0);
        std::iota(order.begin(), order.end(), 0);
        std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) {  // NaN first, as torch.topk puts it
            return std::isnan(r[a]) ? !std::isnan(r[b]) : !std::isnan(r[b]) && r[a] > r[b];
        });
        const float top = r[order[0]];
        float sum = 0.0f;
        for (std::size_t i = 0; i < k; ++i) sum += (out.weights(t, i) = std::exp(r[order[i]] - top));
        const float inv = 1.0f / sum;  // as PyTorch's softmax: times the reciprocal of the sum
        for (std::size_t i = 0; i < k; ++i) {
            out.weights(t, i) *= inv;
            out.chosen[t * k + i] = order[i];
            rows_of[order[i]].push_back(t);
        }
    }
    out.output = Cube::from_shape({B, T, C});
    std::fill(out.output.begin(), out.output.end(), 0.0f);
    const float* xs = x.data();
    for (std::size_t e = 0; e < E; ++e) {  // in the experts' order, as the reference's sum over them
        const std::vector<std::size_t>& rows = rows_of[e];
        if (rows.empty()) continue;
        const Expert& ex = w.experts[e];
        const std::size_t two_i = ex.gate_up.out(), I = two_i / 2, n = rows.size();
        if (ex.gate_up.in() != C || two_i % 2 != 0 || ex.down.in() != I || ex.down.out() != C)
            throw UsageError("expert " + std::to_string(e) + "'s matrices do not fit: C = " + std::to_string(C) + ", gate_up " +
                             std::to_string(ex.gate_up.in()) + "×" + std::to_string(two_i) + ", down " + std::to_string(ex.down.in()) + "×" +
                             std::to_string(ex.down.out()));
        std::vector<float> in(n * C), h(n * two_i), a(n * I), y(n * C);
        for (std::size_t i = 0; i < n; ++i) std::copy(xs + rows[i] * C, xs + (rows[i] + 1) * C, in.begin() + static_cast<std::ptrdiff_t>(i * C));
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
        for (std::size_t i = 0; i < n; ++i) {
            const std::size_t t = rows[i];
            float weight = 0.0f;
            for (std::size_t s = 0; s < k; ++s)
                if (out.chosen[t * k + s] == e) weight = out.weights(t, s);
            float* o = out.output.data() + t * C;
            for (std::size_t c = 0; c < C; ++c) o[c] += (y[i * C + c] + (ex.down_bias.size() ? ex.down_bias(c) : 0.0f)) * weight;
        }
    }
    return out;
}

}  // namespace attnwalk
