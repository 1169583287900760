#include "attnwalk/ops/delta_rule.hpp"

#include <algorithm>
#include <atomic>
#include <cmath>
#include <vector>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/rows.hpp"
#include "kernels.hpp"

namespace attnwalk {

namespace {

struct Sizes {
    std::size_t B, H, T, dk, dv;
};

Sizes sizes_of(const DeltaInputs& in) {
    const Sizes s{in.q.shape(0), in.q.shape(1), in.q.shape(2), in.q.shape(3), in.v.shape(3)};
    if (in.k.shape() != in.q.shape() || in.v.shape(0) != s.B || in.v.shape(1) != s.H || in.v.shape(2) != s.T ||
        in.g.shape(0) != s.B || in.g.shape(1) != s.H || in.g.shape(2) != s.T || in.beta.shape() != in.g.shape())
        throw UsageError("the delta rule's queries, keys, values, decays and write strengths disagree in shape");
    return s;
}

float dot(const float* a, const float* b, std::size_t n) {
    float s = 0.0f;
    for (std::size_t i = 0; i < n; ++i) s += a[i] * b[i];
    return s;
}

}  // namespace

Hyper l2_normalise(const Hyper& x, float scale, float eps) {
    Hyper y = fresh<4>(x.shape());
    const std::size_t n = x.shape(3), rows = n ? x.size() / n : 0;
    std::vector<float> squares(n);
    for (std::size_t r = 0; r < rows; ++r) {
        const float* in = x.data() + r * n;
        for (std::size_t c = 0; c < n; ++c) squares[c] = in[c] * in[c];
        const float inv = 1.0f / std::sqrt(sum_of(squares.data(), n) + eps);  // torch.rsqrt of the sum
        for (std::size_t c = 0; c < n; ++c) y.data()[r * n + c] = in[c] * inv * scale;
    }
    return y;
}

DeltaRun delta_rule_recurrent(const DeltaInputs& in, bool keep_steps) {
    const Sizes s = sizes_of(in);
    DeltaRun out;
    out.outputs = fresh<4>({s.B, s.H, s.T, s.dv});
    out.state = Hyper::from_shape({s.B, s.H, s.dk, s.dv});
    if (in.initial.size() == out.state.size()) std::copy(in.initial.begin(), in.initial.end(), out.state.begin());
    else out.state.fill(0.0f);
    std::vector<float> column(s.dk);
    for (std::size_t t = 0; t < s.T; ++t) {
        DeltaStep step;
        if (keep_steps) {
            step.decayed = Hyper::from_shape({s.B, s.H, s.dk, s.dv});
            step.prediction = Cube::from_shape({s.B, s.H, s.dv});
            step.error = Cube::from_shape({s.B, s.H, s.dv});
            step.output = Cube::from_shape({s.B, s.H, s.dv});
        }
        for (std::size_t b = 0; b < s.B; ++b)
            for (std::size_t h = 0; h < s.H; ++h) {
                float* S = &out.state(b, h, 0, 0);
                const float* q = &in.q(b, h, t, 0);
                const float* k = &in.k(b, h, t, 0);
                const float* v = &in.v(b, h, t, 0);
                const float alpha = std::exp(in.g(b, h, t)), beta = in.beta(b, h, t);
                for (std::size_t i = 0; i < s.dk * s.dv; ++i) S[i] *= alpha;
                if (keep_steps) std::copy(S, S + s.dk * s.dv, &step.decayed(b, h, 0, 0));
                for (std::size_t m = 0; m < s.dv; ++m) {  // column m of S against k: (S * k.unsqueeze(-1)).sum(-2)
                    for (std::size_t i = 0; i < s.dk; ++i) column[i] = S[i * s.dv + m] * k[i];
                    const float p = sum_of(column.data(), s.dk);
                    const float delta = (v[m] - p) * beta;
                    if (keep_steps) {
                        step.prediction(b, h, m) = p;
                        step.error(b, h, m) = delta;
                    }
                    for (std::size_t i = 0; i < s.dk; ++i) S[i * s.dv + m] += k[i] * delta;
                }
                for (std::size_t m = 0; m < s.dv; ++m) {
                    for (std::size_t i = 0; i < s.dk; ++i) column[i] = S[i * s.dv + m] * q[i];
                    out.outputs(b, h, t, m) = sum_of(column.data(), s.dk);
                    if (keep_steps) step.output(b, h, m) = out.outputs(b, h, t, m);
                }
            }
        if (keep_steps) {
            step.state = out.state;
            out.steps.push_back(std::move(step));
        }
    }
    return out;
}

namespace {

// One head's written errors U (T×T, lower-triangular, in double) and the running sums of its
// log decays (cum, T + 1): row j of U = β_j·(e_j − Σ_m<j γ_jm (k_j·k_m) U_m), γ_tj = exp(cum_t+1 − cum_j+1).
// Each entry U_jc takes its terms in the order of m, whatever the blocking: rows are made `rows_at_once`
// at a time, so that each finished row m is read once for all of them (memory, not arithmetic, bounds
// this at thousands of tokens).
constexpr std::size_t rows_at_once = 16;

double decay_between(const std::vector<double>& cum, std::size_t t, std::size_t j) { return std::exp(cum[t + 1] - cum[j + 1]); }

void written_errors(const DeltaInputs& in, const Sizes& s, std::size_t b, std::size_t h, std::vector<double>& cum, std::vector<double>& U) {
    const std::size_t T = s.T;
    cum.assign(T + 1, 0.0);
    for (std::size_t t = 0; t < T; ++t) cum[t + 1] = cum[t] + in.g(b, h, t);
    U.assign(T * T, 0.0);
    const float* k = T ? &in.k(b, h, 0, 0) : nullptr;
    const auto factor = [&](std::size_t j, std::size_t m) {  // β_j·l_jm, l_jm = γ_jm (k_j·k_m)
        const double l = decay_between(cum, j, m) * dot(k + j * s.dk, k + m * s.dk, s.dk);
        return static_cast<double>(in.beta(b, h, j)) * l;
    };
    const auto take = [&](std::size_t j, std::size_t m) {  // U_j −= β_j·l_jm·U_m over U_m's entries c ≤ m
        fast::subtract_scaled(U.data() + j * T, U.data() + m * T, factor(j, m), m + 1);
    };
    for (std::size_t j0 = 0; j0 < T; j0 += rows_at_once) {
        const std::size_t j1 = std::min(T, j0 + rows_at_once);
        for (std::size_t j = j0; j < j1; ++j) U[j * T + j] = in.beta(b, h, j);
        for (std::size_t m = 0; m < j0; ++m)  // the rows finished before this block, each read once
            for (std::size_t j = j0; j < j1; ++j) take(j, m);
        for (std::size_t j = j0; j < j1; ++j)  // then the block's own, in order
            for (std::size_t m = j0; m < j; ++m) take(j, m);
    }
}

}  // namespace

Hyper delta_rule_attention(const DeltaInputs& in) {
    const Sizes s = sizes_of(in);
    const std::size_t T = s.T;
    Hyper A = Hyper::from_shape({s.B, s.H, T, T});
    A.fill(0.0f);
    // A = P·U, P_tj = γ_tj (q_t·k_j) for j ≤ t. Entry A_tc adds its terms in the order of j; rows of
    // t are taken rows_at_once at a time so that each row of U is read once for all of them. The
    // heads are shared by the cores.
    std::atomic<std::size_t> next{0};
    on_every_core(s.B * s.H * T * T * T / 3 + 1, [&](std::size_t, std::size_t) {
        std::vector<double> cum, U;
        for (std::size_t task; (task = next++) < s.B * s.H;) {
            const std::size_t b = task / s.H, h = task % s.H;
            written_errors(in, s, b, h, cum, U);
            for (std::size_t t0 = 0; t0 < T; t0 += rows_at_once) {
                const std::size_t t1 = std::min(T, t0 + rows_at_once);
                for (std::size_t j = 0; j < t1; ++j) {
                    for (std::size_t t = std::max(t0, j); t < t1; ++t) {
                        const double p = decay_between(cum, t, j) * dot(&in.q(b, h, t, 0), &in.k(b, h, j, 0), s.dk);
                        fast::add_rounded_products(&A(b, h, t, 0), U.data() + j * T, p, j + 1);
                    }
                }
            }
        }
    });
    return A;
}

DeltaCell delta_rule_cell(const DeltaInputs& in, std::size_t b, std::size_t h, std::size_t t, std::size_t c) {
    const Sizes s = sizes_of(in);
    if (b >= s.B || h >= s.H || t >= s.T || c >= s.T) throw UsageError("the cell is outside the delta rule's matrix");
    DeltaCell cell;
    if (c > t) return cell;  // causal: key c comes after query t
    std::vector<double> cum, U;
    written_errors(in, s, b, h, cum, U);
    for (std::size_t j = c; j <= t; ++j) {  // the order delta_rule_attention adds them in
        const float qk = dot(&in.q(b, h, t, 0), &in.k(b, h, j, 0), s.dk);
        const double gamma = decay_between(cum, t, j), p = gamma * qk;
        const float term = static_cast<float>(p * U[j * s.T + c]);
        cell.decay.push_back(gamma);
        cell.qk.push_back(qk);
        cell.read.push_back(p);
        cell.written.push_back(U[j * s.T + c]);
        cell.terms.push_back(term);
        cell.value += term;
    }
    return cell;
}

DeltaRun delta_rule_chunked(const DeltaInputs& in, std::size_t C) {  // C: the chunk, capped at T below
    const Sizes s = sizes_of(in);
    if (C == 0) throw UsageError("a chunk holds at least one token");
    C = std::min(C, std::max<std::size_t>(s.T, 1));  // a chunk past the end is padding only: the same outputs
    const std::size_t n = (s.T + C - 1) / C, dk = s.dk, dv = s.dv;  // padded with zeros to whole chunks
    DeltaRun out;
    out.outputs = fresh<4>({s.B, s.H, s.T, dv});
    out.state = Hyper::from_shape({s.B, s.H, dk, dv});
    const bool initial = in.initial.size() == out.state.size();
    // One head at a time, the heads shared by the cores; each chunk's products through sgemm (the
    // matrices of torch_chunk_gated_delta_rule, which multiplies them with matmul).
    struct Buffers {
        std::vector<float> g;                  // C: the chunk's running sum of log decays
        std::vector<float> decay, attn, qk;    // C × C
        std::vector<float> qc, kc, kbeta, kcum;  // C × d_k (qc, kc zero past the end)
        std::vector<float> vbeta, value, vnew, part;  // C × d_v (part: C × max(d_k, d_v), a product's result or a row)
        std::vector<float> W;                  // d_k × d_v: the chunk's write to the state
    };
    std::atomic<std::size_t> next{0};
    on_every_core(s.B * s.H * s.T * dk * dv, [&](std::size_t, std::size_t) {
        Buffers u;
        u.g.resize(C);
        for (auto* v : {&u.decay, &u.attn, &u.qk}) v->resize(C * C);
        for (auto* v : {&u.qc, &u.kc, &u.kbeta, &u.kcum}) v->resize(C * dk);
        for (auto* v : {&u.vbeta, &u.value, &u.vnew, &u.part}) v->resize(C * std::max(dk, dv));
        u.W.resize(dk * dv);
        for (std::size_t task; (task = next++) < s.B * s.H;) {
            const std::size_t b = task / s.H, h = task % s.H;
            float* S = &out.state(b, h, 0, 0);
            if (initial) std::copy_n(&in.initial(b, h, 0, 0), dk * dv, S);
            else std::fill_n(S, dk * dv, 0.0f);
            for (std::size_t ch = 0; ch < n; ++ch) {
                const std::size_t t0 = ch * C, real = std::min(C, s.T - t0);
                // this chunk's queries and keys, zero past the end; k_beta, v_beta
                std::fill(u.qc.begin(), u.qc.end(), 0.0f);
                std::fill(u.kc.begin(), u.kc.end(), 0.0f);
                std::copy_n(&in.q(b, h, t0, 0), real * dk, u.qc.data());
                std::copy_n(&in.k(b, h, t0, 0), real * dk, u.kc.data());
                for (std::size_t i = 0; i < C; ++i) {
                    const float beta = i < real ? in.beta(b, h, t0 + i) : 0.0f;
                    for (std::size_t c = 0; c < dk; ++c) u.kbeta[i * dk + c] = u.kc[i * dk + c] * beta;
                    for (std::size_t c = 0; c < dv; ++c) u.vbeta[i * dv + c] = (i < real ? in.v(b, h, t0 + i, c) : 0.0f) * beta;
                }
                // g.cumsum within the chunk; decay_mask = exp(g_i − g_j) on and below the diagonal
                float run = 0.0f;
                for (std::size_t i = 0; i < C; ++i) u.g[i] = run += (i < real ? in.g(b, h, t0 + i) : 0.0f);
                for (std::size_t i = 0; i < C; ++i)
                    for (std::size_t j = 0; j < C; ++j) u.decay[i * C + j] = j <= i ? std::exp(u.g[i] - u.g[j]) : 0.0f;
                // attn = −(k_beta·kᵀ ⊙ decay) strictly below the diagonal, then the forward substitution
                sgemm(false, true, C, C, dk, 1.0f, u.kbeta.data(), dk, u.kc.data(), dk, 0.0f, u.attn.data(), C);
                for (std::size_t i = 0; i < C; ++i)
                    for (std::size_t j = 0; j < C; ++j) u.attn[i * C + j] = j < i ? -(u.attn[i * C + j] * u.decay[i * C + j]) : 0.0f;
                for (std::size_t i = 1; i < C; ++i) {
                    float* row = u.part.data();  // attn[i, :i] before this row's update
                    std::copy_n(&u.attn[i * C], i, row);
                    for (std::size_t j = 0; j < i; ++j) {
                        float extra = 0.0f;
                        for (std::size_t m = 0; m < i; ++m) extra += row[m] * u.attn[m * C + j];
                        u.attn[i * C + j] = row[j] + extra;
                    }
                }
                for (std::size_t i = 0; i < C; ++i) u.attn[i * C + i] += 1.0f;
                // value = attn·v_beta; k_cumdecay = attn·(k_beta ⊙ exp(g))
                sgemm(false, false, C, dv, C, 1.0f, u.attn.data(), C, u.vbeta.data(), dv, 0.0f, u.value.data(), dv);
                for (std::size_t i = 0; i < C; ++i)
                    for (std::size_t c = 0; c < dk; ++c) u.kbeta[i * dk + c] *= std::exp(u.g[i]);
                sgemm(false, false, C, dk, C, 1.0f, u.attn.data(), C, u.kbeta.data(), dk, 0.0f, u.kcum.data(), dk);
                // within the chunk: q·kᵀ ⊙ decay (diagonal included); v_new = value − k_cumdecay·S
                sgemm(false, true, C, C, dk, 1.0f, u.qc.data(), dk, u.kc.data(), dk, 0.0f, u.qk.data(), C);
                for (std::size_t i = 0; i < C; ++i)  // masked above the diagonal, as masked_fill_ does
                    for (std::size_t j = 0; j < C; ++j) u.qk[i * C + j] = j <= i ? u.qk[i * C + j] * u.decay[i * C + j] : 0.0f;
                sgemm(false, false, C, dv, dk, 1.0f, u.kcum.data(), dk, S, dv, 0.0f, u.part.data(), dv);
                for (std::size_t i = 0; i < C * dv; ++i) u.vnew[i] = u.value[i] - u.part[i];
                // the output: (q ⊙ exp(g))·S from the chunks before, plus q·kᵀ ⊙ decay · v_new from this one
                for (std::size_t i = 0; i < C; ++i)
                    for (std::size_t c = 0; c < dk; ++c) u.qc[i * dk + c] *= std::exp(u.g[i]);
                sgemm(false, false, C, dv, dk, 1.0f, u.qc.data(), dk, S, dv, 0.0f, u.part.data(), dv);
                sgemm(false, false, C, dv, C, 1.0f, u.qk.data(), C, u.vnew.data(), dv, 0.0f, u.value.data(), dv);
                for (std::size_t i = 0; i < real; ++i)
                    for (std::size_t m = 0; m < dv; ++m) out.outputs(b, h, t0 + i, m) = u.part[i * dv + m] + u.value[i * dv + m];
                // S ← S·exp(g_last) + (k ⊙ exp(g_last − g))ᵀ·v_new
                const float last = u.g[C - 1];
                for (std::size_t i = 0; i < C; ++i)
                    for (std::size_t c = 0; c < dk; ++c) u.kc[i * dk + c] *= std::exp(last - u.g[i]);
                sgemm(true, false, dk, dv, C, 1.0f, u.kc.data(), dk, u.vnew.data(), dv, 0.0f, u.W.data(), dv);
                const float keep = std::exp(last);
                for (std::size_t i = 0; i < dk * dv; ++i) S[i] = S[i] * keep + u.W[i];
            }
        }
    });
    return out;
}

}  // namespace attnwalk
