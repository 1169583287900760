#include "attnwalk/ops/blocked_attention.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <stdexcept>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/softmax.hpp"
#include "kernels.hpp"

namespace attnwalk::fast {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr std::size_t block_rows = 128;  // R: query rows per block (measured best of 64, 128, 256 at T = 2048)

// Running statistics of one thread, merged into the result's Stats at the end.
struct Running {
    double min = INFINITY, max = -INFINITY, sum = 0.0;
    std::size_t count = 0;
    double row_min = INFINITY, row_max = -INFINITY;
    std::size_t non_finite = 0;  // inf and NaN values, left out (the walk stops on them: check_finite)

    // A row's statistics as the kernels give them (min, max and a float32 sum), or, where that
    // sum is not finite, from the values one by one: an inf or NaN always makes the sum inf or
    // NaN (a NaN can slip past min and max, which keep the other operand, never past a sum),
    // but so does a float32 sum of finite values beyond ±3.4e38. `v`: the row's values, or null
    // where they are no longer there (then a sum that is not finite never comes).
    void add_row(const float* v, std::size_t n) { add(row_stats(v, n), n, v); }
    void add(const RowStats& r, std::size_t n, const float* v) {
        if (!std::isfinite(r.sum)) {
            if (!v) throw std::logic_error("blocked attention: a row's sum is not finite and its values are gone");
            return add_one_by_one(v, n);
        }
        min = std::min(min, static_cast<double>(r.min));
        max = std::max(max, static_cast<double>(r.max));
        sum += r.sum;
        count += n;
    }
    void add_one_by_one(const float* v, std::size_t n) {
        for (std::size_t j = 0; j < n; ++j) {
            if (!std::isfinite(v[j])) {
                ++non_finite;
                continue;
            }
            min = std::min(min, static_cast<double>(v[j]));
            max = std::max(max, static_cast<double>(v[j]));
            sum += v[j];
            ++count;
        }
    }
    void add_row_sum(double s) {
        row_min = std::min(row_min, s);
        row_max = std::max(row_max, s);
    }
    void merge(const Running& o) {
        min = std::min(min, o.min);
        max = std::max(max, o.max);
        sum += o.sum;
        count += o.count;
        row_min = std::min(row_min, o.row_min);
        row_max = std::max(row_max, o.row_max);
        non_finite += o.non_finite;
    }
    attnwalk::Stats summary(bool row_sums) const {
        attnwalk::Stats s;
        s.min = min;
        s.max = max;
        s.checksum = sum;
        s.count = count;
        s.non_finite = non_finite;
        s.mean = count ? sum / static_cast<double>(count) : 0.0;
        s.has_row_sums = row_sums;
        s.row_sum_min = row_min;
        s.row_sum_max = row_max;
        return s;
    }
};

// Y = X·W + b over all B·T rows at once, into rows of stride ldy.
void linear_into(const Cube& x, const Linear& layer, float* y, std::size_t ldy) {
    project_into(x.data(), x.shape(0) * x.shape(1), layer, y, ldy);
}

std::size_t round_up(std::size_t n, std::size_t m) { return (n + m - 1) / m * m; }

// Keys [0, n) of a head (rows of stride ld) as panels of 32 keys, and its values [0, n)
// as n contiguous rows of d_h.
void pack_head(const float* k, const float* v, std::size_t ld, std::size_t n, std::size_t d_h, std::vector<float>& keys,
               std::vector<float>& values) {
    pack_keys(k, ld, n, d_h, keys);
    values.resize(n * d_h);
    for (std::size_t j = 0; j < n; ++j) std::copy(v + j * ld, v + j * ld + d_h, values.data() + j * d_h);
}

struct Worker {
    std::vector<float> block;  // R × T scores, then weights
    std::vector<float> packed_keys, packed_values;  // one head's K and V for the AVX-512 products
    std::vector<float> raw;                          // a block's scores again, where a row's sum overflowed
    Work again;                                      // the products made again for them
    Running queries, keys, values, scores, weights, outputs;
    double gemm_scores = 0.0, softmax = 0.0, gemm_values = 0.0;  // thread seconds per phase
};

}  // namespace

double blocked_bytes(std::size_t batch, std::size_t tokens, std::size_t d_in, std::size_t width) {
    const double B = static_cast<double>(batch), T = static_cast<double>(tokens),
                 d = std::max(static_cast<double>(d_in), static_cast<double>(width));
    // (and, per core, a block of rows' scores, the same again where a row's sum overflows (Worker::raw),
    // and a product's packed strip of 32 columns: over d, or over every key for the weights times the values)
    return 4.0 * (10.0 * B * T * d + 8.0 * d * d + (2.0 * static_cast<double>(block_rows) * T + 32.0 * std::max(d, T)) * static_cast<double>(cores()));
}

BlockedResult blocked_attention(const Cube& x, const AttentionWeights& w, bool causal) {
    BlockedResult result;
    const std::size_t B = x.shape(0), T = x.shape(1), d_out = w.width(), H = w.heads, d_h = d_out / H;

    // ---- projections: Q, K and V side by side, row t is [q_t k_t v_t] ----------------------
    const std::size_t ld = 3 * d_out;
    Cube qkv = fresh<3>({B, T, ld});
    const Linear* layers[] = {&w.query, &w.key, &w.value};
    double* times[] = {&result.seconds.query, &result.seconds.key, &result.seconds.value};
    Work* works[] = {&result.work.query, &result.work.key, &result.work.value};
    Work mark = work_so_far();
    for (std::size_t p = 0; p < 3; ++p) {
        const auto t0 = Clock::now();
        (void)work_since(mark);
        linear_into(x, *layers[p], qkv.data() + p * d_out, ld);
        *times[p] = since(t0);
        *works[p] = work_since(mark);
    }
    const float* q = qkv.data();
    const float* k = qkv.data() + d_out;
    const float* v = qkv.data() + 2 * d_out;

    // ---- attention, (batch, head) pairs shared out over the cores ----------------------------
    const float scale = static_cast<float>(std::sqrt(static_cast<double>(d_h)));
    Cube z = fresh<3>({B, T, d_out});  // the heads' outputs, already concatenated
    const std::size_t threads = std::min<std::size_t>(cores(), B * H);
    std::vector<Worker> workers(threads);
    // Q's, K's and V's statistics in one pass over the rows just written, each core a share
    // of the rows, a row a head's columns at a time (the same sums as head by head, where
    // each row of a head's columns was a cache miss: BM_mha/2048 2-6 ms faster).
    on_every_core([&](std::size_t i, std::size_t) {
        if (i >= threads) return;
        Worker& wk = workers[i];
        for (std::size_t row = B * T * i / threads; row < B * T * (i + 1) / threads; ++row)
            for (std::size_t h = 0; h < H; ++h) {
                const float* at = qkv.data() + row * ld + h * d_h;
                wk.queries.add_row(at, d_h);
                wk.keys.add_row(at + d_out, d_h);
                wk.values.add_row(at + 2 * d_out, d_h);
            }
    });
    std::atomic<std::size_t> next{0};
    const bool vector = use_attention_kernels(d_h, T);
    auto work = [&](Worker& wk) {
        wk.block.resize(block_rows * round_up(T, key_panel));
        for (std::size_t task; (task = next++) < B * H;) {
            const std::size_t b = task / H, h = task % H;
            const float* qh = q + b * T * ld + h * d_h;  // rows of stride ld = 3·d_out
            const float* kh = k + b * T * ld + h * d_h;
            const float* vh = v + b * T * ld + h * d_h;
            float* zh = z.data() + b * T * d_out + h * d_h;
            if (vector) {
                auto t = Clock::now();
                pack_head(kh, vh, ld, T, d_h, wk.packed_keys, wk.packed_values);
                wk.gemm_scores += since(t);
            }
            for (std::size_t r0 = 0; r0 < T; r0 += block_rows) {
                const std::size_t rows = std::min(block_rows, T - r0);
                const std::size_t cols = visible_keys(r0 + rows - 1, T, causal, 0).end;  // keys any row of the block can see
                const std::size_t lds = vector ? round_up(cols, key_panel) : cols;
                float* s = wk.block.data();
                auto t = Clock::now();
                head_scores(vector, rows, cols, d_h, qh + r0 * ld, ld, kh, ld, wk.packed_keys.data(), s, lds);
                wk.gemm_scores += since(t);
                t = Clock::now();
                bool made_again = false;
                std::array<std::pair<RowStats, RowStats>, 2> pair;  // rows i and i + 1, made together
                for (std::size_t i = 0; i < rows; ++i) {
                    float* row = s + i * lds;
                    const std::size_t n = visible_keys(r0 + i, T, causal, 0).end;  // masked: j > i
                    if (i % 2 == 0)
                        pair = i + 1 < rows ? softmax_rows(row, n, row + lds, visible_keys(r0 + i + 1, T, causal, 0).end, scale)
                                            : decltype(pair){softmax_row(row, n, scale), {}};
                    const auto [raw, weights] = pair[i % 2];
                    if (std::isfinite(raw.sum)) {
                        wk.scores.add(raw, n, nullptr);
                    } else {  // the scores are weights now: the block's made again (the same call, the same bits), rarely
                        if (!made_again) {
                            wk.raw.resize(rows * lds);
                            wk.again += head_scores(vector, rows, cols, d_h, qh + r0 * ld, ld, kh, ld, wk.packed_keys.data(), wk.raw.data(), lds);
                            made_again = true;
                        }
                        wk.scores.add_one_by_one(wk.raw.data() + i * lds, n);
                    }
                    wk.weights.add(weights, n, row);
                    wk.weights.add_row_sum(weights.sum);
                    std::fill(row + n, row + cols, 0.0f);
                }
                wk.softmax += since(t);
                t = Clock::now();
                if (vector)  // the head's values packed too: rows of d_h
                    head_values(true, rows, cols, d_h, s, lds, wk.packed_values.data(), d_h, zh + r0 * d_out, d_out);
                else
                    head_values(false, rows, cols, d_h, s, lds, vh, ld, zh + r0 * d_out, d_out);
                for (std::size_t i = 0; i < rows; ++i) wk.outputs.add_row(zh + (r0 + i) * d_out, d_h);
                wk.gemm_values += since(t);
            }
        }
    };
    auto t0 = Clock::now();
    (void)work_since(mark);
    on_every_core([&](std::size_t i, std::size_t) {  // each core takes (batch, head) pairs, products included
        if (i < threads) work(workers[i]);
    });
    const double attention = since(t0);
    Work attended = work_since(mark);  // a block's scores and values: the same rows, keys and d_h each
    for (const Worker& wk : workers) attended = attended - wk.again;
    result.work.scores = attended * 0.5;
    result.work.values = attended - result.work.scores;

    Worker all;
    for (const Worker& wk : workers) {
        all.queries.merge(wk.queries);
        all.keys.merge(wk.keys);
        all.values.merge(wk.values);
        all.scores.merge(wk.scores);
        all.weights.merge(wk.weights);
        all.outputs.merge(wk.outputs);
        all.gemm_scores += wk.gemm_scores;
        all.softmax += wk.softmax;
        all.gemm_values += wk.gemm_values;
    }
    result.queries = all.queries.summary(false);
    result.keys = all.keys.summary(false);
    result.values = all.values.summary(false);
    result.scores = all.scores.summary(false);
    if (causal) {
        result.scores.causal_triangle = true;
        Stats& m = result.mask;  // tril(ones(T, T)): T(T+1)/2 ones, the rest zeros
        m.min = 0.0;
        m.max = 1.0;
        m.count = T * T;
        m.checksum = static_cast<double>(T) * static_cast<double>(T + 1) / 2.0;
        m.mean = m.checksum / static_cast<double>(m.count);
    }
    result.weights = all.weights.summary(true);
    const std::size_t masked = causal ? B * H * T * (T - 1) / 2 : 0;
    result.weights.count += masked;  // the masked weights are exact zeros
    if (masked) result.weights.min = std::min(result.weights.min, 0.0);
    result.weights.mean = result.weights.checksum / static_cast<double>(result.weights.count);
    result.head_outputs = all.outputs.summary(false);
    // The phases run interleaved on every core: split the wall time by their thread time.
    const double busy = std::max(all.gemm_scores + all.softmax + all.gemm_values, 1e-12);
    result.seconds.scores = attention * all.gemm_scores / busy;
    result.seconds.softmax = attention * all.softmax / busy;
    result.seconds.values = attention * all.gemm_values / busy;

    // ---- the output projection -----------------------------------------------------------------
    t0 = Clock::now();
    (void)work_since(mark);
    result.output = fresh<3>({B, T, d_out});
    linear_into(z, *w.out_proj, result.output.data(), d_out);
    result.seconds.output = since(t0);
    result.work.output = work_since(mark);
    Running out;
    for (std::size_t r = 0; r < B * T; ++r) out.add_row(result.output.data() + r * d_out, d_out);
    result.output_summary = out.summary(false);
    return result;
}

Cube blocked_heads(const Hyper& qh, const Hyper& kh, const Hyper& vh, float scale, bool causal, std::size_t window,
                   const Vec* sinks) {
    const std::size_t B = qh.shape(0), H = qh.shape(1), T = qh.shape(2), d = qh.shape(3);
    const std::size_t G = kh.shape(1), Tk = kh.shape(2), group = H / G, offset = Tk - T;
    if (sinks && sinks->size() != H)
        throw UsageError("the learned sinks need one logit per head: " + std::to_string(H) + " heads, " + std::to_string(sinks->size()) + " sinks");
    Cube z = fresh<3>({B, T, H * d});  // the heads' outputs, already concatenated
    const std::size_t threads = std::min<std::size_t>(cores(), B * H);
    std::atomic<std::size_t> next{0};
    const bool vector = use_attention_kernels(d, T);
    auto work = [&] {
        std::vector<float> block(block_rows * round_up(Tk, key_panel)), keys;
        for (std::size_t task; (task = next++) < B * H;) {
            const std::size_t b = task / H, h = task % H, g = h / group;
            const float* q = &qh(b, h, 0, 0);
            const float* k = &kh(b, g, 0, 0);
            const float* v = &vh(b, g, 0, 0);
            float* out = z.data() + b * T * H * d + h * d;
            if (vector) pack_keys(k, d, Tk, d, keys);
            for (std::size_t r0 = 0; r0 < T; r0 += block_rows) {
                const std::size_t rows = std::min(block_rows, T - r0);
                // the keys some row of the block sees: [first, last), first on a panel's
                // start for the kernels
                const std::size_t last = visible_keys(offset + r0 + rows - 1, Tk, causal, window).end;  // the block's last row sees the most
                std::size_t first = visible_keys(offset + r0, Tk, causal, window).first;                 // its first row the earliest
                if (vector) first = first / key_panel * key_panel;
                const std::size_t cols = last - first, lds = vector ? round_up(cols, key_panel) : cols;
                float* s = block.data();
                head_scores(vector, rows, cols, d, q + r0 * d, d, k + first * d, d, keys.data() + first * d, s, lds);
                for (std::size_t i = 0; i < rows; i += 2) {  // two rows at a time (softmax_rows), the last alone
                    const std::size_t pair = std::min<std::size_t>(2, rows - i);
                    float* seen_from[2] = {nullptr, nullptr};
                    std::size_t count[2] = {0, 0};
                    for (std::size_t r = 0; r < pair; ++r) {
                        float* row = s + (i + r) * lds;
                        const KeyRange seen = visible_keys(offset + r0 + i + r, Tk, causal, window);  // this query's key position
                        std::fill(row, row + (seen.first - first), 0.0f);       // before the window
                        std::fill(row + (seen.end - first), row + cols, 0.0f);  // the future
                        seen_from[r] = row + (seen.first - first);
                        count[r] = seen.end - seen.first;
                        if (sinks) {  // a learned sink: the division as the plain forward's, then the row with the sink
                            for (std::size_t j = 0; j < count[r]; ++j) seen_from[r][j] /= scale;
                            softmax_row_sink(seen_from[r], count[r], (*sinks)(h), nullptr);
                        }
                    }
                    if (sinks) continue;
                    if (pair == 2)
                        softmax_rows(seen_from[0], count[0], seen_from[1], count[1], scale);
                    else
                        softmax_row(seen_from[0], count[0], scale);
                }
                head_values(vector, rows, cols, d, s, lds, v + first * d, d, out + r0 * H * d, H * d);
            }
        }
    };
    on_every_core([&](std::size_t i, std::size_t) {
        if (i < threads) work();
    });
    return z;
}

}  // namespace attnwalk::fast
