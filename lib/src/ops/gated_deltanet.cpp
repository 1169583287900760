#include "attnwalk/ops/gated_deltanet.hpp"

#include <cmath>
#include <string>
#include <utility>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/delta_rule.hpp"

namespace attnwalk {

namespace {
float sigmoid(float x) { return 1.0f / (1.0f + std::exp(-x)); }
float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }  // torch's, threshold 20
std::string n(std::size_t v) { return std::to_string(v); }
constexpr std::size_t prompt_chunk = 64;  // chunk_size of modeling_qwen3_next.py's chunked rule (a shorter prompt: one chunk)
}  // namespace

void GatedDeltaNetWeights::check() const {
    if (k_heads == 0 || v_heads % k_heads != 0 || d_k == 0 || d_v == 0)
        throw UsageError("Gated DeltaNet needs key heads that divide the value heads (" + n(v_heads) + " / " + n(k_heads) + ") and d_k, d_v ≥ 1");
    const std::size_t C = out_proj.out();
    if (in_qkv) {
        if (!in_z || !in_b || !in_a) throw UsageError("in_proj_qkv comes with in_proj_z, in_proj_b and in_proj_a");
        if (in_qkv->in() != C || in_qkv->out() != conv_dim())
            throw UsageError("in_proj_qkv makes " + n(in_qkv->out()) + " numbers; 2·H_k·d_k + H_v·d_v = " + n(conv_dim()));
        if (in_z->out() != value_dim() || in_b->out() != v_heads || in_a->out() != v_heads)
            throw UsageError("in_proj_z, in_proj_b and in_proj_a make H_v·d_v = " + n(value_dim()) + ", H_v and H_v numbers");
    } else {
        if (in_qkvz.in() != C || in_qkvz.out() != 2 * key_dim() + 2 * value_dim())
            throw UsageError("in_proj_qkvz makes " + n(in_qkvz.out()) + " numbers; 2·H_k·d_k + 2·H_v·d_v = " + n(2 * key_dim() + 2 * value_dim()));
        if (in_ba.in() != C || in_ba.out() != 2 * v_heads) throw UsageError("in_proj_ba makes " + n(in_ba.out()) + " numbers; 2·H_v = " + n(2 * v_heads));
    }
    if (conv.dimension() != 2 || conv.shape(0) != conv_dim() || conv.shape(1) < 1)
        throw UsageError("conv1d has " + n(conv.shape(0)) + " channels; 2·H_k·d_k + H_v·d_v = " + n(conv_dim()));
    if (a_log.size() != v_heads || dt_bias.size() != v_heads) throw UsageError("A_log and dt_bias need one number per value head (" + n(v_heads) + ")");
    if (norm.size() != d_v) throw UsageError("the gated norm needs d_v = " + n(d_v) + " weights, not " + n(norm.size()));
    if (out_proj.in() != value_dim() || out_proj.out() != C) throw UsageError("out_proj takes H_v·d_v = " + n(value_dim()) + " numbers to C = " + n(C));
}

GatedDeltaNetGates gated_deltanet_gates(const Cube& b, const Cube& a, const Vec& a_log, const Vec& dt_bias) {
    const std::size_t H = a_log.size();
    if (b.shape() != a.shape() || b.shape(2) != H || dt_bias.size() != H)
        throw UsageError("the gates need b and a of one shape, (B,T,H_v), and A_log and dt_bias of H_v = " + n(H) + " numbers");
    GatedDeltaNetGates out{Cube::from_shape(b.shape()), Cube::from_shape(a.shape()), Cube::from_shape(a.shape())};
    for (std::size_t i = 0; i < b.size(); ++i) {
        const std::size_t h = i % H;
        out.beta.data()[i] = sigmoid(b.data()[i]);
        out.g.data()[i] = -std::exp(a_log(h)) * softplus(a.data()[i] + dt_bias(h));
        out.decay.data()[i] = std::exp(out.g.data()[i]);
    }
    return out;
}

DeltaInputs delta_rule_inputs(const GatedDeltaNetForward& f, const GatedDeltaNetWeights& w) {
    const std::size_t B = f.q.shape(0), T = f.q.shape(1), Hv = w.v_heads, dk = w.d_k, dv = w.d_v, r = Hv / w.k_heads;
    const Cube& g = f.g;
    // heads: q and k repeated to the value heads (value head h reads key head h / r)
    DeltaInputs in;
    Hyper q = Hyper::from_shape({B, Hv, T, dk}), k = Hyper::from_shape({B, Hv, T, dk});
    in.v = Hyper::from_shape({B, Hv, T, dv});
    in.g = Cube::from_shape({B, Hv, T});
    in.beta = Cube::from_shape({B, Hv, T});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < Hv; ++h)
            for (std::size_t t = 0; t < T; ++t) {
                for (std::size_t i = 0; i < dk; ++i) {
                    q(b, h, t, i) = f.q(b, t, (h / r) * dk + i);
                    k(b, h, t, i) = f.k(b, t, (h / r) * dk + i);
                }
                for (std::size_t i = 0; i < dv; ++i) in.v(b, h, t, i) = f.v(b, t, h * dv + i);
                in.g(b, h, t) = g(b, t, h);
                in.beta(b, h, t) = f.beta(b, t, h);
            }
    in.q = l2_normalise(q, 1.0f / std::sqrt(static_cast<float>(dk)));
    in.k = l2_normalise(k, 1.0f);
    return in;
}

GatedDeltaNetForward gated_deltanet_forward(const Cube& x, const GatedDeltaNetWeights& w, DeltaNetCache* cache, bool effective) {
    w.check();
    const std::size_t B = x.shape(0), T = x.shape(1), Hk = w.k_heads, Hv = w.v_heads, dk = w.d_k, dv = w.d_v, r = Hv / Hk;
    const std::size_t kd = w.key_dim(), vd = w.value_dim(), cd = w.conv_dim(), K = w.taps();
    if (cache && B != 1) throw UsageError("a Gated DeltaNet cache holds one sequence");
    Cube mixed = Cube::from_shape({B, T, cd});  // [q of every key head | k | v of every value head]
    GatedDeltaNetForward f;
    f.z = Cube::from_shape({B, T, vd});
    Cube bs = Cube::from_shape({B, T, Hv}), as = Cube::from_shape({B, T, Hv});  // the gates' projections, b and a
    if (w.in_qkv) {  // Qwen3.5: the projections in order
        mixed = project(x, *w.in_qkv);
        f.z = project(x, *w.in_z);
        bs = project(x, *w.in_b);
        as = project(x, *w.in_a);
    }
    // Qwen3-Next: Hugging Face's fix_query_key_value_ordering, per key head [q | k | v (r heads) | z (r heads)]
    // and [b (r heads) | a (r heads)]
    const Cube qkvz = w.in_qkv ? Cube() : project(x, w.in_qkvz), ba = w.in_qkv ? Cube() : project(x, w.in_ba);
    const std::size_t group = 2 * dk + 2 * r * dv;
    for (std::size_t b = 0; b < (w.in_qkv ? 0 : B); ++b)
        for (std::size_t t = 0; t < T; ++t) {
            for (std::size_t h = 0; h < Hk; ++h) {
                const float* src = &qkvz(b, t, h * group);
                for (std::size_t i = 0; i < dk; ++i) {
                    mixed(b, t, h * dk + i) = src[i];
                    mixed(b, t, kd + h * dk + i) = src[dk + i];
                }
                for (std::size_t i = 0; i < r * dv; ++i) {
                    mixed(b, t, 2 * kd + h * r * dv + i) = src[2 * dk + i];
                    f.z(b, t, h * r * dv + i) = src[2 * dk + r * dv + i];
                }
                for (std::size_t i = 0; i < r; ++i) {
                    bs(b, t, h * r + i) = ba(b, t, h * 2 * r + i);
                    as(b, t, h * r + i) = ba(b, t, h * 2 * r + r + i);
                }
            }
        }
    GatedDeltaNetGates gates = gated_deltanet_gates(bs, as, w.a_log, w.dt_bias);
    f.beta = std::move(gates.beta);
    f.decay = std::move(gates.decay);
    f.g = std::move(gates.g);
    // the causal depthwise convolution over [earlier inputs | these], then SiLU
    const std::size_t P = K - 1;
    Mat past = Mat::from_shape({P, cd});
    past.fill(0.0f);
    if (cache && cache->inputs.size() == past.size()) past = cache->inputs;
    Cube conv = Cube::from_shape({B, T, cd});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < cd; ++c) {
                float sum = 0.0f;
                for (std::size_t j = 0; j < K; ++j) {  // tap j reads the input K − 1 − j tokens back
                    const std::ptrdiff_t at = static_cast<std::ptrdiff_t>(t + j) - static_cast<std::ptrdiff_t>(P);
                    const float in = at >= 0 ? mixed(b, static_cast<std::size_t>(at), c) : past(static_cast<std::size_t>(static_cast<std::ptrdiff_t>(P) + at), c);
                    sum += w.conv(c, j) * in;
                }
                conv(b, t, c) = sum * sigmoid(sum);
            }
    if (cache) {  // the last K − 1 inputs, for the next call
        Mat next = Mat::from_shape({P, cd});
        for (std::size_t i = 0; i < P; ++i) {
            const std::ptrdiff_t at = static_cast<std::ptrdiff_t>(T) - static_cast<std::ptrdiff_t>(P) + static_cast<std::ptrdiff_t>(i);
            for (std::size_t c = 0; c < cd; ++c) next(i, c) = at >= 0 ? mixed(0, static_cast<std::size_t>(at), c) : past(static_cast<std::size_t>(static_cast<std::ptrdiff_t>(P) + at), c);
        }
        cache->inputs = std::move(next);
    }
    f.q = Cube::from_shape({B, T, kd});
    f.k = Cube::from_shape({B, T, kd});
    f.v = Cube::from_shape({B, T, vd});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t c = 0; c < cd; ++c) {
                const float v = conv(b, t, c);
                if (c < kd) f.q(b, t, c) = v;
                else if (c < 2 * kd) f.k(b, t, c - kd) = v;
                else f.v(b, t, c - 2 * kd) = v;
            }
    DeltaInputs in = delta_rule_inputs(f, w);
    if (cache && cache->state.size()) in.initial = cache->state;
    const bool fresh_start = !cache || cache->seen == 0;
    // a prompt in chunks, as Hugging Face's prefill (torch_chunk_gated_delta_rule); a token
    // decoded after it, one step of the recurrence (torch_recurrent_gated_delta_rule)
    DeltaRun rec = fresh_start || T > 1 ? delta_rule_chunked(in, prompt_chunk) : delta_rule_recurrent(in, false);
    f.outputs = std::move(rec.outputs);
    f.state = std::move(rec.state);
    if (effective && fresh_start) f.effective = delta_rule_attention(in);
    if (cache) {
        cache->state = f.state;
        cache->seen += T;
    }
    // the gated RMSNorm per head, then out_proj
    f.normed = Cube::from_shape({B, T, vd});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t h = 0; h < Hv; ++h) {
                float ss = 0.0f;
                for (std::size_t i = 0; i < dv; ++i) ss += f.outputs(b, h, t, i) * f.outputs(b, h, t, i);
                const float inv = 1.0f / std::sqrt(ss / static_cast<float>(dv) + w.eps);
                for (std::size_t i = 0; i < dv; ++i) {
                    const float zi = f.z(b, t, h * dv + i);
                    f.normed(b, t, h * dv + i) = w.norm(i) * (f.outputs(b, h, t, i) * inv) * (zi * sigmoid(zi));
                }
            }
    f.output = project(f.normed, w.out_proj);
    return f;
}

}  // namespace attnwalk
