#include "attnwalk/ops/attention.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <limits>
#include <mutex>
#include <stdexcept>
#include <thread>
#include <vector>

#include <xtensor/xview.hpp>

#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/dropout.hpp"
#include "attnwalk/errors.hpp"
#include "attnwalk/ops/norms.hpp"
#include "attnwalk/ops/mask.hpp"
#include "attnwalk/ops/scores.hpp"
#include "attnwalk/ops/softmax.hpp"
#include "kernels.hpp"

namespace attnwalk {

Linear AttentionWeights::head_columns(const Linear& layer, std::size_t h) const {
    const std::size_t d_h = head_size();
    Linear out;
    out.w = xt::view(layer.matrix(), xt::all(), xt::range(h * d_h, (h + 1) * d_h));
    if (layer.b.size() != 0) out.b = xt::view(layer.b, xt::range(h * d_h, (h + 1) * d_h));
    return out;
}

Hyper split_heads(const Cube& x, std::size_t heads) {
    const std::size_t B = x.shape(0), T = x.shape(1), d_h = x.shape(2) / heads;
    Hyper out = fresh<4>({B, heads, T, d_h});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t c = 0; c < d_h; ++c) out(b, h, t, c) = x(b, t, h * d_h + c);
    return out;
}

Cube merge_heads(const Hyper& x) {
    const std::size_t B = x.shape(0), H = x.shape(1), T = x.shape(2), d_h = x.shape(3);
    Cube out = fresh<3>({B, T, H * d_h});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t c = 0; c < d_h; ++c) out(b, t, h * d_h + c) = x(b, h, t, c);
    return out;
}

Cost forward_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, std::size_t width, std::size_t heads,
                  std::size_t rows) {
    const double B = static_cast<double>(batch), T = static_cast<double>(tokens), H = static_cast<double>(heads),
                 R = static_cast<double>(rows), d = std::max(static_cast<double>(d_in), static_cast<double>(width)),
                 w = static_cast<double>(width), din = static_cast<double>(d_in);
    Cost c;
    // About 16 tensors of the largest shapes are kept (scores, weights, masks, ...).
    c.bytes = 4.0 * (forward_square_tensors * B * H * R * T + 16.0 * B * T * d + 4.0 * d * d);
    // Q, K, V; scores and context per head (together R·T·width per batch); the exps; out_proj.
    c.work = B * (3.0 * T * din * w + 2.0 * R * T * w + 16.0 * H * R * T + R * w * w);
    return c;
}

namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point& t) {
    const auto now = Clock::now();
    const double s = std::chrono::duration<double>(now - t).count();
    t = now;
    return s;
}
}  // namespace


namespace {

// YaRN's inverse frequencies and attention factor, as Hugging Face's _compute_yarn_parameters
// computes them: the ramp's ends in double, everything of a dimension in float32.
void yarn_frequencies(Rope& r, std::size_t d, double base, const RopeScaling& sc) {
    const double pi = 3.14159265358979323846;
    const auto correction_dim = [&](double rotations) {  // the dimension that turns `rotations` times over the original context
        return (static_cast<double>(d) * std::log(sc.original_context / (rotations * 2.0 * pi))) / (2.0 * std::log(base));
    };
    double low = correction_dim(sc.beta_fast), high = correction_dim(sc.beta_slow);
    if (sc.truncate) {
        low = std::floor(low);
        high = std::ceil(high);
    }
    low = std::max(low, 0.0);
    high = std::min(high, static_cast<double>(d - 1));
    if (low == high) high += 0.001;  // no singularity
    const float factor = static_cast<float>(sc.factor), span = static_cast<float>(high - low), start = static_cast<float>(low);
    for (std::size_t i = 0; i < d / 2; ++i) {
        const float power = static_cast<float>(std::pow(base, static_cast<double>(static_cast<float>(2 * i) / static_cast<float>(d))));
        const float extrapolation = 1.0f / power, interpolation = 1.0f / (factor * power);
        const float ramp = std::clamp((static_cast<float>(i) - start) / span, 0.0f, 1.0f);
        const float keep = 1.0f - ramp;  // the share of the unscaled frequency
        r.inv_freq(i) = interpolation * (1.0f - keep) + extrapolation * keep;
    }
    r.attention_scaling = static_cast<float>(sc.attention_factor.value_or(yarn_mscale(sc.factor)));
}

}  // namespace

bool sums_square_summaries(std::size_t d_h, std::size_t rows) { return fast::use_attention_kernels(d_h, rows); }

double yarn_mscale(double scale, double m) { return scale <= 1.0 ? 1.0 : 0.1 * m * std::log(scale) + 1.0; }

Rope rope_tables(std::size_t head_dim, std::size_t T, std::size_t position0, const RopeParams& spec) {
    const double base = spec.base;
    const RopeScaling& sc = spec.scaling;
    const std::size_t d = spec.rotary_dim ? spec.rotary_dim : head_dim;
    if (d > head_dim)
        throw UsageError("RoPE turns " + std::to_string(d) + " features of a head of only " + std::to_string(head_dim));
    if (d % 2 != 0 || d == 0)
        throw UsageError("RoPE rotates pairs of features: the " + std::string(spec.rotary_dim ? "rotary dimension" : "head size d_k") + " = " +
                         std::to_string(d) + " must be even");
    if (!(std::isfinite(base) && base > 1.0)) throw UsageError("the RoPE base must be a finite number above 1");
    if (sc.kind != RopeScaling::Kind::none && !(std::isfinite(sc.factor) && sc.factor > 0.0))
        throw UsageError("the RoPE scaling factor must be a positive number");
    if (sc.kind == RopeScaling::Kind::llama3 &&
        !(sc.high_freq_factor > sc.low_freq_factor && sc.low_freq_factor > 0.0 && std::isfinite(sc.high_freq_factor) &&
          sc.original_context > 0.0 && std::isfinite(sc.original_context)))
        throw UsageError("llama3 RoPE scaling needs 0 < low_freq_factor < high_freq_factor and a positive original context");
    if (sc.kind == RopeScaling::Kind::yarn &&
        !(sc.original_context > 0.0 && std::isfinite(sc.original_context) && sc.beta_fast > 0.0 && sc.beta_slow > 0.0 &&
          std::isfinite(sc.beta_fast) && std::isfinite(sc.beta_slow) &&
          (!sc.attention_factor || (*sc.attention_factor > 0.0 && std::isfinite(*sc.attention_factor)))))
        throw UsageError("yarn RoPE scaling needs a positive original context, beta_fast and beta_slow, and a positive attention factor");
    // position · θ is computed in float32, as the reference code does: a position above 2^24
    // is no longer exact, and the angles (and the shift check) would drift
    constexpr std::size_t exact = std::size_t{1} << 24;
    if (T > 0 && (position0 > exact || T - 1 > exact - position0))
        throw UsageError("RoPE position " + std::to_string(position0 > exact ? position0 : position0 + (T - 1)) +  // never a wrapped sum
                         " is beyond 16,777,216 (2^24), the last position float32 "
                         "holds exactly: give a smaller shift or fewer tokens");
    Rope r;
    const std::size_t half = d / 2;
    r.inv_freq = Vec::from_shape({half});
    for (std::size_t i = 0; i < half; ++i) {  // 1 / base ** (arange(0, d, 2).float() / d), in float32
        const float exponent = static_cast<float>(2 * i) / static_cast<float>(d);
        const float power = static_cast<float>(std::pow(base, static_cast<double>(exponent)));
        r.inv_freq(i) = 1.0f / power;
    }
    if (sc.kind == RopeScaling::Kind::linear)
        for (float& f : r.inv_freq) f /= static_cast<float>(sc.factor);
    if (sc.kind == RopeScaling::Kind::llama3) {  // float32, term by term as the reference code
        const float factor = static_cast<float>(sc.factor), low = static_cast<float>(sc.low_freq_factor);
        const float high = static_cast<float>(sc.high_freq_factor), old = static_cast<float>(sc.original_context);
        const float low_wavelen = static_cast<float>(sc.original_context / sc.low_freq_factor);
        const float high_wavelen = static_cast<float>(sc.original_context / sc.high_freq_factor);
        const float two_pi = static_cast<float>(2.0 * 3.14159265358979323846);
        for (float& f : r.inv_freq) {
            const float wavelen = two_pi / f;
            if (wavelen > low_wavelen) f = f / factor;               // low frequencies: slowed down
            else if (wavelen >= high_wavelen) {                      // in between: blended
                const float smooth = (old / wavelen - low) / (high - low);
                f = (1.0f - smooth) * (f / factor) + smooth * f;
            }                                                        // high frequencies: kept
        }
    }
    if (sc.kind == RopeScaling::Kind::yarn) yarn_frequencies(r, d, base, sc);
    if (spec.proportion > 0.0) {  // proportional (Gemma 4): ⌊proportion·d/2⌋ pairs turn, the others' frequency is 0
        const auto turning = static_cast<std::size_t>(std::floor(spec.proportion * static_cast<double>(d) / 2.0));
        for (std::size_t i = turning; i < half; ++i) r.inv_freq(i) = 0.0f;
    }
    r.angles = Mat::from_shape({T, d});
    r.cos = Mat::from_shape({T, d});
    r.sin = Mat::from_shape({T, d});
    const float scaling = r.attention_scaling;
    r.interleaved = spec.interleaved;
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t c = 0; c < d; ++c) {
            const float a = static_cast<float>(position0 + t) * r.inv_freq(r.pair_of(c));
            r.angles(t, c) = a;
            r.cos(t, c) = static_cast<float>(std::cos(static_cast<double>(a)));
            r.sin(t, c) = static_cast<float>(std::sin(static_cast<double>(a)));
            if (scaling != 1.0f) {
                r.cos(t, c) *= scaling;
                r.sin(t, c) *= scaling;
            }
        }
    return r;
}

Hyper apply_rope(const Hyper& x, const Rope& rope) {
    const std::size_t B = x.shape(0), H = x.shape(1), T = x.shape(2), D = x.shape(3), d = rope.dims(), half = d / 2;
    Hyper out = fresh<4>(x.shape());
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t) {
                for (std::size_t c = 0; c < d; ++c) {
                    const bool first = rope.interleaved ? c % 2 == 0 : c < half;  // the pair's first feature turns by −its partner
                    const float rotated = first ? -x(b, h, t, rope.partner(c)) : x(b, h, t, rope.partner(c));
                    out(b, h, t, c) = x(b, h, t, c) * rope.cos(t, c) + rotated * rope.sin(t, c);
                }
                for (std::size_t c = d; c < D; ++c) out(b, h, t, c) = x(b, h, t, c);  // partial rotary: the rest passes
            }
    return out;
}


Forward project_heads(const Cube& x, const AttentionWeights* w, const ForwardSpec& spec) {
    Forward f;
    f.causal = spec.causal;
    auto clock = Clock::now();
    Work mark = work_so_far();
    if (w) {
        if (w->d_in() != x.shape(2))
            throw UsageError("the weights take d_in = " + std::to_string(w->d_in()) + " features, the input has " +
                             std::to_string(x.shape(2)));
        check_head_shape(w->width(), w->heads, w->kv_heads);
        const std::size_t G = w->key_heads();
        if (!w->shared_kv && (w->key.out() != G * w->head_size() || w->value.out() != G * w->head_size()))
            throw UsageError("the keys and values need G·d_k = " + std::to_string(G * w->head_size()) + " columns, W_key has " +
                             std::to_string(w->key.out()));
        f.q = project(x, w->query);
        f.work.query = work_since(mark);
        if (!w->shared_kv) {  // a layer that shares another's keys and values projects none
            f.k = project(x, w->key);
            f.work.key = work_since(mark);
            f.v = project(x, w->value);
            f.work.value = work_since(mark);
        }
        if (w->gate) {
            f.gate = project(x, *w->gate);
            f.work.gate = work_since(mark);
        }
        f.heads = w->heads;
        f.kv_heads = G;
    } else {
        f.q = f.k = f.v = x;
    }
    f.d_h = f.q.shape(2) / f.heads;
    f.seconds.project = since(clock);
    const bool whole = w && w->qk_norm_whole && (w->q_norm || w->k_norm);
    Cube q_normed, k_normed;  // QK-norm over the whole projections (OLMo): Q and K normalised, then split
    if (whole) {
        if (!w->q_norm || !w->k_norm || w->q_norm->size() != f.q.shape(2) || w->k_norm->size() != f.k.shape(2))
            throw UsageError("QK-norm over the whole projections needs scales of H·d_k = " + std::to_string(f.q.shape(2)) +
                             " (queries) and G·d_k = " + std::to_string(f.k.shape(2)) + " (keys)");
        q_normed = f.q;
        k_normed = f.k;
        rms_norm_rows(q_normed.data(), q_normed.size() / q_normed.shape(2), q_normed.shape(2), *w->q_norm, w->qk_norm_eps);
        rms_norm_rows(k_normed.data(), k_normed.size() / k_normed.shape(2), k_normed.shape(2), *w->k_norm, w->qk_norm_eps);
        f.qk_normed = true;
    }
    const bool own_kv = !w || !w->shared_kv;  // else the caller hands kh and vh, another layer's
    f.qh = split_heads(whole ? q_normed : f.q, f.heads);
    if (own_kv) {
        f.kh = split_heads(whole ? k_normed : f.k, f.kv_heads);
        f.vh = split_heads(f.v, f.kv_heads);
    }
    if (w && !whole && (w->q_norm || w->k_norm)) {  // QK-norm: each head's rows, before RoPE
        if (!w->q_norm || (own_kv && !w->k_norm) || w->q_norm->size() != f.d_h || (own_kv && w->k_norm->size() != f.d_h))
            throw UsageError("QK-norm needs a scale of d_k = " + std::to_string(f.d_h) + " for both the queries and the keys");
        rms_norm_rows(f.qh.data(), f.qh.size() / f.d_h, f.d_h, *w->q_norm, w->qk_norm_eps);
        if (own_kv) rms_norm_rows(f.kh.data(), f.kh.size() / f.d_h, f.d_h, *w->k_norm, w->qk_norm_eps);
        f.qk_normed = true;
    }
    if (w && w->v_norm && own_kv) {  // Gemma 4: each head's values through an RMSNorm without a scale
        Vec ones = Vec::from_shape({f.d_h});
        ones.fill(1.0f);
        rms_norm_rows(f.vh.data(), f.vh.size() / f.d_h, f.d_h, ones, w->qk_norm_eps);
    }
    if (spec.rope) {
        f.rope = rope_tables(f.d_h, x.shape(1), spec.position0, *spec.rope);
        f.qh_plain = std::move(f.qh);
        f.qh = apply_rope(f.qh_plain, *f.rope);
        if (own_kv) {
            f.kh_plain = std::move(f.kh);
            f.kh = apply_rope(f.kh_plain, *f.rope);
        }
        f.seconds.project += since(clock);
    }
    return f;
}

namespace {

// One row of scores into what the softmax reads, in the textbook's order (SDPA: × scale_factor,
// + attn_bias): masked_fill with −∞ into `masked` (which may be `out`) where row r, at key
// position `position`, may not see, then × spec.scale_factor or ÷ scale (PyTorch's
// `scores / d_k**0.5`), then + row r of spec.bias.
void mask_and_scale_row(const float* in, float* masked, float* out, std::size_t T, std::size_t r, std::size_t position, bool masking,
                        std::size_t window, float scale, const ForwardSpec& spec) {
    if (masking) {
        const float neg_inf = -std::numeric_limits<float>::infinity();
        for (std::size_t j = 0; j < T; ++j) masked[j] = masked_out(position, j, spec.causal, window) ? neg_inf : in[j];
        in = masked;
    }
    if (spec.scale_factor) {
        const float factor = *spec.scale_factor;
        for (std::size_t j = 0; j < T; ++j) out[j] = in[j] * factor;
    } else if (scale == 1.0f) {
        if (in != out) std::copy(in, in + T, out);
    } else {
        for (std::size_t j = 0; j < T; ++j) out[j] = in[j] / scale;
    }
    if (spec.bias)
        for (std::size_t j = 0; j < T; ++j) out[j] += (*spec.bias)(r, j);
}

// The learned sinks of gpt-oss, one logit per head, and with the softmax their share of each row.
void take_sinks(Forward& f, const AttentionWeights* w, bool softmax) {
    if (!w || !w->sinks) return;
    const std::size_t B = f.qh.shape(0), H = f.heads, R = f.rows;
    if (w->sinks->size() != H)
        throw UsageError("the learned sinks need one logit per head: " + std::to_string(H) + " heads, " + std::to_string(w->sinks->size()) +
                         " sinks");
    f.sinks = *w->sinks;
    if (softmax) f.sink_share = Cube::from_shape({B, H, R});
}

// ForwardSpec::square_summaries taken: each core a (batch, head) pair at a time, its scores
// and weights in buffers of the core's own, then its products with the values; the pair's
// scores and weights are added to the statistics in the pairs' order (a pair waits for the
// one before it), and the buffers reused. Every number is the tensors' path's: the same
// kernels on the same rows, masked_fill then the division then the softmax row by row, and
// Stats::add_all gives the same sums however the values are handed (stats.hpp). Without
// spec.square_statistics the pairs are not summed and do not wait.
void attend_head_by_head(Forward& f, const AttentionWeights* w, const ForwardSpec& spec) {
    const std::size_t B = f.qh.shape(0), H = f.heads, group = H / f.kv_heads, d_h = f.d_h, R = f.rows, T = f.kh.shape(2);
    f.scores_stats = Stats{};
    f.weights_stats = Stats{};
    f.dropped = false;
    take_sinks(f, w, true);
    f.row_max = Cube::from_shape({B, H, R});
    f.row_sum = Cube::from_shape({B, H, R});
    f.head_outputs = fresh<4>({B, H, R, d_h});
    const float* sinks = f.sinks.size() ? f.sinks.data() : nullptr;
    const float scale = f.scale;
    const std::size_t first = f.q_position0 + f.row0, window = f.window;
    const bool causal = spec.causal, masking = causal || window > 0;
    constexpr std::size_t block = 128;  // the values' rows at a time, as the tensors' path takes them
    std::atomic<std::size_t> next{0}, summed{0};
    std::atomic<bool> failed{false};
    double busy[3] = {0, 0, 0};  // thread seconds: scores, softmax and statistics, values
    Work scores_work, values_work;  // the two products' work, as their calls count it
    std::mutex busy_lock;
    on_every_core(B * H * R * T * d_h, [&](std::size_t, std::size_t) {
        std::vector<float> keys, s, p;  // made at this core's first pair: never more buffers than pairs
        double mine[3] = {0, 0, 0};
        Work my_scores, my_values;
        try {
            for (std::size_t task; !failed.load() && (task = next++) < B * H;) {
                if (s.empty()) {
                    s.resize(R * T);
                    p.resize(R * T);
                }
                const std::size_t b = task / H, h = task % H;
                auto t = Clock::now();
                const float* k = &f.kh(b, h / group, 0, 0);
                fast::pack_keys(k, d_h, T, d_h, keys);
                my_scores += fast::head_scores(true, R, T, d_h, &f.qh(b, h, f.row0, 0), d_h, k, d_h, keys.data(), s.data(), T);
                mine[0] += since(t);
                for (std::size_t r = 0; r < R; ++r) {
                    const std::size_t row = task * R + r;
                    float* out = p.data() + r * T;
                    mask_and_scale_row(s.data() + r * T, out, out, T, r, first + r, masking, window, scale, spec);
                    const RowSoftmax rs = sinks ? softmax_row_sink(out, T, sinks[h], f.sink_share.data() + row) : softmax_row(out, T);
                    f.row_max.data()[row] = rs.max;
                    f.row_sum.data()[row] = rs.sum;
                }
                mine[1] += since(t);
                for (std::size_t r0 = 0; r0 < R; r0 += block) {  // causal: past a block's last row the weights are exact zeros
                    const std::size_t n = std::min(block, R - r0), cols = causal ? std::min(T, first + r0 + n) : T;
                    my_values += fast::head_values(true, n, cols, d_h, p.data() + r0 * T, T, &f.vh(b, h / group, 0, 0), d_h,
                                                   &f.head_outputs(b, h, r0, 0), d_h);
                }
                mine[2] += since(t);
                if (!spec.square_statistics) continue;
                while (summed.load() != task)  // the wait is no phase's work
                    if (failed.load()) return;
                    else std::this_thread::yield();
                (void)since(t);
                f.scores_stats.add_all(s.data(), R * T);
                f.weights_stats.add_all(p.data(), R * T);
                for (std::size_t r = 0; r < R; ++r) f.weights_stats.add_row_sum(sum_of(p.data() + r * T, T));
                summed.store(task + 1);
                mine[1] += since(t);  // the statistics, with the softmax
            }
        } catch (...) {
            failed = true;  // the pairs after this one stop waiting; the pool rethrows
            throw;
        }
        const std::lock_guard<std::mutex> hold(busy_lock);
        for (int i = 0; i < 3; ++i) busy[i] += mine[i];
        scores_work += my_scores;
        values_work += my_values;
    });
    f.work.scores = scores_work;
    f.work.context = values_work;
    const double all = std::max(busy[0] + busy[1] + busy[2], 1e-12);
    f.seconds.scores = busy[0] / all;
    f.seconds.softmax = busy[1] / all;
    f.seconds.context = busy[2] / all;
}

}  // namespace

void attend(Forward& f, const AttentionWeights* w, const ForwardSpec& spec) {
    auto clock = Clock::now();
    Work mark = work_so_far();
    const std::size_t B = f.qh.shape(0), H = f.heads, G = f.kv_heads, group = H / G, d_h = f.d_h;
    const std::size_t Tq = f.qh.shape(2), T = f.kh.shape(2);
    f.causal = spec.causal;
    f.window = spec.window.value_or(0);
    if (spec.window && *spec.window < 1) throw UsageError("the window must be at least 1 token");
    f.q_position0 = T - Tq;

    // ---- scores of the query rows, masked and scaled (B,H,R,T) --------------------------
    if (spec.query && *spec.query >= Tq)
        throw UsageError("query row " + std::to_string(*spec.query) + " is out of range: there are " +
                         std::to_string(Tq) + " tokens");
    f.row0 = spec.query.value_or(0);
    f.rows = spec.query ? 1 : Tq;
    const std::size_t R = f.rows;
    f.scale = spec.scale.value_or(w ? static_cast<float>(std::sqrt(static_cast<double>(d_h))) : 1.0f);
    if (!(std::isfinite(f.scale) && f.scale > 0.0f)) throw UsageError("the scale must be a positive finite number");
    const bool kernels = fast::use_attention_kernels(d_h, R);  // as sums_square_summaries tells the estimate
    f.square_summarised = spec.square_summaries && kernels && spec.until == Stage::output && !(spec.dropout.p > 0.0) && !spec.bias &&
                          !spec.scale_factor && !spec.keep_masked_scaled;
    if (f.square_summarised) {
        attend_head_by_head(f, w, spec);  // the phases' shares of the thread time, then of the wall time
        const double wall = since(clock);
        (void)work_since(mark);  // the products' work, shared out by attend_head_by_head as they counted it
        f.seconds.scores *= wall;
        f.seconds.softmax *= wall;
        f.seconds.context *= wall;
    } else {
        f.scores = fresh<4>({B, H, R, T});
        if (kernels) {  // the heads shared out over the cores, each head's keys packed once
            std::atomic<std::size_t> next{0};
            on_every_core(B * H * R * T * d_h, [&](std::size_t, std::size_t) {
                std::vector<float> keys;
                for (std::size_t task; (task = next++) < B * H;) {
                    const std::size_t b = task / H, h = task % H;
                    const float* k = &f.kh(b, h / group, 0, 0);
                    fast::pack_keys(k, d_h, T, d_h, keys);
                    fast::head_scores(true, R, T, d_h, &f.qh(b, h, f.row0, 0), d_h, k, d_h, keys.data(), &f.scores(b, h, 0, 0), T);
                }
            });
        } else {  // head by head, each product split over the cores
            for (std::size_t b = 0; b < B; ++b)
                for (std::size_t h = 0; h < H; ++h)
                    fast::head_scores(false, R, T, d_h, &f.qh(b, h, f.row0, 0), d_h, &f.kh(b, h / group, 0, 0), d_h, nullptr,
                                      &f.scores(b, h, 0, 0), T);
        }
        f.seconds.scores = since(clock);
        f.work.scores = work_since(mark);
        const bool masking = spec.causal || f.window > 0;
        if (spec.until == Stage::scores && !masking && f.scale == 1.0f && !spec.scale_factor && !spec.bias) return;
        if (spec.bias && (spec.bias->shape(0) != R || spec.bias->shape(1) != T))
            throw UsageError("the mask must be " + std::to_string(R) + "×" + std::to_string(T) + " (queries × keys), it is " +
                             std::to_string(spec.bias->shape(0)) + "×" + std::to_string(spec.bias->shape(1)));
        if (spec.scale_factor) f.scale = 1.0f / *spec.scale_factor;

        // ---- row by row, on every core: masked_fill first, then the scale, in the textbook's
        // order (SDPA: × scale_factor, + attn_bias), then the softmax ---------------------------
        const bool softmax = spec.until != Stage::scores;
        const bool keep = spec.keep_masked_scaled || !softmax;  // else each row is masked and scaled in the weights
        if (masking && keep) f.masked = fresh<4>(f.scores.shape());
        if (keep) f.scaled = fresh<4>(f.scores.shape());
        if (softmax) {
            f.weights = fresh<4>(f.scores.shape());
            f.row_max = Cube::from_shape({B, H, R});
            f.row_sum = Cube::from_shape({B, H, R});
        }
        take_sinks(f, w, softmax);
        const float* sinks = f.sinks.size() ? f.sinks.data() : nullptr;
        const std::size_t first = f.q_position0 + f.row0, window = f.window, rows = B * H * R;
        double seconds_mask_scale = 0.0;  // the first worker's share, as the phases' times
        on_every_core(rows * T, [&](std::size_t worker, std::size_t workers) {
            auto clock_here = Clock::now();
            const WorkerShare share = worker_share(rows, worker, workers);
            for (std::size_t row = share.begin; row < share.end; ++row) {
                const std::size_t r = row % R, k0 = row * T;
                const float* in = f.scores.data() + k0;
                float* out = (keep ? f.scaled.data() : f.weights.data()) + k0;
                mask_and_scale_row(in, masking && keep ? f.masked.data() + k0 : out, out, T, r, first + r, masking, window, f.scale, spec);
            }
            if (worker == 0) seconds_mask_scale = since(clock_here);
            if (!softmax) return;
            for (std::size_t row = share.begin; row < share.end; ++row) {
                float* weights = f.weights.data() + row * T;
                if (keep) std::copy(f.scaled.data() + row * T, f.scaled.data() + (row + 1) * T, weights);
                const RowSoftmax s = sinks ? softmax_row_sink(weights, T, sinks[row / R % H], f.sink_share.data() + row)
                                           : softmax_row(weights, T);
                f.row_max.data()[row] = s.max;
                f.row_sum.data()[row] = s.sum;
            }
        });
        f.seconds.mask_scale = seconds_mask_scale;
        f.seconds.softmax = since(clock) - seconds_mask_scale;
        if (!softmax) return;

        // ---- dropout on the weights, in forward order ------------------------------------------
        if (spec.dropout.p > 0.0) {
            if (!spec.dropout.gen) throw UsageError("dropout needs a random generator");
            f.dropped = true;
            if (w && w->layout == HeadLayout::stacked && H > 1) {  // each head module draws its own (B,R,T) mask
                f.keep = Hyper::from_shape(f.weights.shape());
                f.weights_dropped = Hyper::from_shape(f.weights.shape());
                for (std::size_t h = 0; h < H; ++h) {
                    const Cube head = xt::view(f.weights, xt::all(), h);
                    const auto d = dropout(head, spec.dropout.p, *spec.dropout.gen);
                    xt::view(f.keep, xt::all(), h) = d.keep;
                    xt::view(f.weights_dropped, xt::all(), h) = d.output;
                    f.dropout_scale = d.scale;
                }
            } else {  // one draw over the whole (B,H,R,T) tensor
                auto d = dropout(f.weights, spec.dropout.p, *spec.dropout.gen);
                f.keep = std::move(d.keep);
                f.weights_dropped = std::move(d.output);
                f.dropout_scale = d.scale;
            }
        }
        f.seconds.dropout = since(clock);
        if (spec.until == Stage::weights) return;

        // ---- each head's context, concatenated, projected ---------------------------------------
        const Hyper& a = f.final_weights();
        f.head_outputs = fresh<4>({B, H, R, d_h});
        if (kernels) {
            // Causal (and no added mask): a block of rows sees keys up to its last row only, the
            // weights past them are exact zeros, so their products are skipped.
            constexpr std::size_t block = 128;
            const bool triangle = spec.causal && !spec.bias;
            std::atomic<std::size_t> next{0};
            const std::size_t blocks = (R + block - 1) / block;
            on_every_core(B * H * R * T * d_h, [&](std::size_t, std::size_t) {
                for (std::size_t task; (task = next++) < B * H * blocks;) {
                    const std::size_t bh = task / blocks, b = bh / H, h = bh % H, r0 = task % blocks * block, n = std::min(block, R - r0);
                    const std::size_t cols = triangle ? std::min(T, first + r0 + n) : T;
                    fast::head_values(true, n, cols, d_h, &a(b, h, r0, 0), T, &f.vh(b, h / group, 0, 0), d_h, &f.head_outputs(b, h, r0, 0),
                                      d_h);
                }
            });
        } else {
            for (std::size_t b = 0; b < B; ++b)
                for (std::size_t h = 0; h < H; ++h)
                    fast::head_values(false, R, T, d_h, &a(b, h, 0, 0), T, &f.vh(b, h / group, 0, 0), d_h, &f.head_outputs(b, h, 0, 0), d_h);
        }
    }  // the tensors' path
    for (std::size_t h : spec.zero_heads)  // ablation: the head's output is replaced by zeros
        if (h < H) xt::view(f.head_outputs, xt::all(), h, xt::all(), xt::all()) = 0.0f;
    f.context = merge_heads(f.head_outputs);
    f.seconds.context = (f.square_summarised ? f.seconds.context : 0.0) + since(clock);  // the summed path's values, and the merge
    f.work.context += work_since(mark);
    if (w && w->gate) {  // the rows of the gate that match the context's: R query rows from row0 (the last ones of a cache)
        if (f.gate.shape(2) != f.context.shape(2)) throw UsageError("the output gate needs H·d_k = " + std::to_string(f.context.shape(2)) + " columns");
        f.gated = f.context;
        const std::size_t n = f.context.shape(1), g0 = f.gate.shape(1) == n ? 0 : f.q_position0 + f.row0;  // n query rows
        if (g0 + n > f.gate.shape(1)) throw std::logic_error("the output gate has no row for a query");
        for (std::size_t b = 0; b < f.gated.shape(0); ++b)
            for (std::size_t r = 0; r < n; ++r)
                for (std::size_t c = 0; c < f.gated.shape(2); ++c) f.gated(b, r, c) *= 1.0f / (1.0f + std::exp(-f.gate(b, g0 + r, c)));
    }
    const Cube& z = w && w->gate ? f.gated : f.context;
    f.output = w && w->out_proj ? project(z, *w->out_proj) : z;
    f.seconds.output = since(clock);
    f.work.output = work_since(mark);
}

Forward attention_forward(const Cube& x, const AttentionWeights* w, const ForwardSpec& spec) {
    Forward f = project_heads(x, w, spec);
    attend(f, w, spec);
    return f;
}

}  // namespace attnwalk
