#include "attnwalk/attention_at_scale.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <thread>

#include <immintrin.h>
#include <sys/mman.h>

#include "attnwalk/blas.hpp"

namespace attnwalk {

namespace {

using Clock = std::chrono::steady_clock;
double since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

constexpr std::size_t block_rows = 128;  // R: query rows per block (measured best of 64, 128, 256 at T = 2048)

// The softmax of one row, in three passes: AVX2 where the CPU has it (chosen at run
// time), plain loops otherwise. Both compute the same formulas.

struct RowStats {
    float min, max, sum;
};

// Cephes' expf: range reduction by ln 2, a degree-6 polynomial, within 2 ulp of libm.
// Arguments below −87.3 give about 1e-38 instead of a denormal or 0.
float exp_scalar(float v) {
    v = std::max(v, -87.3f);
    const float fx = std::floor(v * 1.44269504088896341f + 0.5f);
    v = v - fx * 0.693359375f + fx * 2.12194440e-4f;
    float y = 1.9875691500e-4f;
    y = y * v + 1.3981999507e-3f;
    y = y * v + 8.3334519073e-3f;
    y = y * v + 4.1665795894e-2f;
    y = y * v + 1.6666665459e-1f;
    y = y * v + 5.0000001201e-1f;
    y = y * v * v + v + 1.0f;
    const std::int32_t bits = (static_cast<std::int32_t>(fx) + 127) << 23;
    float two_fx;
    std::memcpy(&two_fx, &bits, sizeof two_fx);
    return y * two_fx;
}

// The three passes, scalar. scale: statistics of the raw scores, row /= scale, max of
// the result. exp: row = exp(row − max), returns the sum. normalise: row *= inv,
// returns the weights' statistics (their sum is the row sum).
RowStats scale_scalar(float* row, std::size_t n, float scale, float& max, std::size_t from) {
    RowStats r{INFINITY, -INFINITY, 0.0f};
    for (std::size_t j = from; j < n; ++j) {
        r.min = std::min(r.min, row[j]);
        r.max = std::max(r.max, row[j]);
        r.sum += row[j];
        row[j] = row[j] / scale;
        max = std::max(max, row[j]);
    }
    return r;
}
float exp_scalar_row(float* row, std::size_t n, float max, std::size_t from) {
    float sum = 0.0f;
    for (std::size_t j = from; j < n; ++j) sum += (row[j] = exp_scalar(row[j] - max));
    return sum;
}
RowStats normalise_scalar(float* row, std::size_t n, float inv, std::size_t from) {
    RowStats r{INFINITY, -INFINITY, 0.0f};
    for (std::size_t j = from; j < n; ++j) {
        row[j] *= inv;
        r.min = std::min(r.min, row[j]);
        r.max = std::max(r.max, row[j]);
        r.sum += row[j];
    }
    return r;
}

RowStats merge(RowStats a, RowStats b) { return {std::min(a.min, b.min), std::max(a.max, b.max), a.sum + b.sum}; }

__attribute__((target("avx2"))) float hsum(__m256 v) {
    float l[8];
    _mm256_storeu_ps(l, v);
    return ((l[0] + l[1]) + (l[2] + l[3])) + ((l[4] + l[5]) + (l[6] + l[7]));
}
__attribute__((target("avx2"))) float hmin(__m256 v) {
    float l[8];
    _mm256_storeu_ps(l, v);
    return *std::min_element(l, l + 8);
}
__attribute__((target("avx2"))) float hmax(__m256 v) {
    float l[8];
    _mm256_storeu_ps(l, v);
    return *std::max_element(l, l + 8);
}

__attribute__((target("avx2"))) RowStats scale_avx2(float* row, std::size_t n, float scale, float& max) {
    const std::size_t m = n / 8 * 8;
    if (m == 0) return scale_scalar(row, n, scale, max, 0);
    __m256 lo = _mm256_set1_ps(INFINITY), hi = _mm256_set1_ps(-INFINITY), sum = _mm256_setzero_ps(), top = hi;
    const __m256 s = _mm256_set1_ps(scale);
    for (std::size_t j = 0; j < m; j += 8) {
        const __m256 x = _mm256_loadu_ps(row + j);
        lo = _mm256_min_ps(lo, x);
        hi = _mm256_max_ps(hi, x);
        sum = _mm256_add_ps(sum, x);
        const __m256 y = _mm256_div_ps(x, s);
        _mm256_storeu_ps(row + j, y);
        top = _mm256_max_ps(top, y);
    }
    max = hmax(top);
    return merge({hmin(lo), hmax(hi), hsum(sum)}, scale_scalar(row, n, scale, max, m));
}

__attribute__((target("avx2"))) float exp_avx2(float* row, std::size_t n, float max) {
    const std::size_t m = n / 8 * 8;
    __m256 sum = _mm256_setzero_ps();
    const __m256 mx = _mm256_set1_ps(max), lowest = _mm256_set1_ps(-87.3f), log2e = _mm256_set1_ps(1.44269504088896341f),
                 half = _mm256_set1_ps(0.5f), c1 = _mm256_set1_ps(0.693359375f), c2 = _mm256_set1_ps(-2.12194440e-4f),
                 one = _mm256_set1_ps(1.0f);
    const __m256 p[6] = {_mm256_set1_ps(1.9875691500e-4f), _mm256_set1_ps(1.3981999507e-3f), _mm256_set1_ps(8.3334519073e-3f),
                         _mm256_set1_ps(4.1665795894e-2f), _mm256_set1_ps(1.6666665459e-1f), _mm256_set1_ps(5.0000001201e-1f)};
    for (std::size_t j = 0; j < m; j += 8) {
        __m256 v = _mm256_max_ps(_mm256_sub_ps(_mm256_loadu_ps(row + j), mx), lowest);
        const __m256 fx = _mm256_floor_ps(_mm256_add_ps(_mm256_mul_ps(v, log2e), half));
        v = _mm256_sub_ps(_mm256_sub_ps(v, _mm256_mul_ps(fx, c1)), _mm256_mul_ps(fx, c2));
        __m256 y = p[0];
        for (int i = 1; i < 6; ++i) y = _mm256_add_ps(_mm256_mul_ps(y, v), p[i]);
        y = _mm256_add_ps(_mm256_add_ps(_mm256_mul_ps(_mm256_mul_ps(y, v), v), v), one);
        const __m256i bits = _mm256_slli_epi32(_mm256_add_epi32(_mm256_cvttps_epi32(fx), _mm256_set1_epi32(127)), 23);
        y = _mm256_mul_ps(y, _mm256_castsi256_ps(bits));
        _mm256_storeu_ps(row + j, y);
        sum = _mm256_add_ps(sum, y);
    }
    return hsum(sum) + exp_scalar_row(row, n, max, m);
}

__attribute__((target("avx2"))) RowStats normalise_avx2(float* row, std::size_t n, float inv) {
    const std::size_t m = n / 8 * 8;
    if (m == 0) return normalise_scalar(row, n, inv, 0);
    __m256 lo = _mm256_set1_ps(INFINITY), hi = _mm256_set1_ps(-INFINITY), sum = _mm256_setzero_ps();
    const __m256 k = _mm256_set1_ps(inv);
    for (std::size_t j = 0; j < m; j += 8) {
        const __m256 w = _mm256_mul_ps(_mm256_loadu_ps(row + j), k);
        _mm256_storeu_ps(row + j, w);
        lo = _mm256_min_ps(lo, w);
        hi = _mm256_max_ps(hi, w);
        sum = _mm256_add_ps(sum, w);
    }
    return merge({hmin(lo), hmax(hi), hsum(sum)}, normalise_scalar(row, n, inv, m));
}

const bool has_avx2 = __builtin_cpu_supports("avx2");

// One row of scores -> weights; returns the raw scores' and the weights' statistics.
std::pair<RowStats, RowStats> softmax_row(float* row, std::size_t n, float scale) {
    float max = -INFINITY;
    if (has_avx2) {
        const RowStats raw = scale_avx2(row, n, scale, max);
        const float inv = 1.0f / exp_avx2(row, n, max);
        return {raw, normalise_avx2(row, n, inv)};
    }
    const RowStats raw = scale_scalar(row, n, scale, max, 0);
    const float inv = 1.0f / exp_scalar_row(row, n, max, 0);
    return {raw, normalise_scalar(row, n, inv, 0)};
}

// Running statistics of one thread, merged into a Summary at the end.
struct Stats {
    double min = INFINITY, max = -INFINITY, sum = 0.0;
    std::size_t count = 0;
    double row_min = INFINITY, row_max = -INFINITY;

    void add_row(const float* v, std::size_t n) {
        float lo = v[0], hi = v[0], s = 0.0f;
        for (std::size_t j = 0; j < n; ++j) {
            lo = std::min(lo, v[j]);
            hi = std::max(hi, v[j]);
            s += v[j];
        }
        min = std::min(min, static_cast<double>(lo));
        max = std::max(max, static_cast<double>(hi));
        sum += s;
        count += n;
    }
    void add(const RowStats& r, std::size_t n) {
        min = std::min(min, static_cast<double>(r.min));
        max = std::max(max, static_cast<double>(r.max));
        sum += r.sum;
        count += n;
    }
    void add_row_sum(double s) {
        row_min = std::min(row_min, s);
        row_max = std::max(row_max, s);
    }
    void merge(const Stats& o) {
        min = std::min(min, o.min);
        max = std::max(max, o.max);
        sum += o.sum;
        count += o.count;
        row_min = std::min(row_min, o.row_min);
        row_max = std::max(row_max, o.row_max);
    }
    Summary summary(bool row_sums) const {
        Summary s;
        s.min = min;
        s.max = max;
        s.checksum = sum;
        s.count = count;
        s.mean = count ? sum / static_cast<double>(count) : 0.0;
        s.has_row_sums = row_sums;
        s.row_sum_min = row_min;
        s.row_sum_max = row_max;
        return s;
    }
};

Stats stats_of(const float* v, std::size_t rows, std::size_t cols) {
    Stats s;
    for (std::size_t r = 0; r < rows; ++r) s.add_row(v + r * cols, cols);
    return s;
}

// Large buffers ask for transparent huge pages: on a virtual machine a 4 KiB page fault
// costs microseconds, and a T×d_out buffer at T = 2048 has 1536 of them (measured here:
// a fresh 6 MiB output made a 12 ms product take 28 ms).
void advise_huge_pages(void* p, std::size_t bytes) {
    constexpr std::uintptr_t huge = std::uintptr_t{2} << 20;
    const auto begin = (reinterpret_cast<std::uintptr_t>(p) + huge - 1) & ~(huge - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(huge - 1);
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
}

Cube fresh_cube(std::size_t b, std::size_t t, std::size_t d) {
    Cube c = Cube::from_shape({b, t, d});  // not yet touched
    advise_huge_pages(c.data(), c.size() * sizeof(float));
    return c;
}

// Y = X·W + b over all B·T rows at once, into rows of stride ldy.
void linear_into(const Cube& x, const Linear& layer, float* y, std::size_t ldy) {
    const std::size_t rows = x.shape(0) * x.shape(1), d_in = x.shape(2), d_out = layer.w.shape(1);
    sgemm(false, false, rows, d_out, d_in, 1.0f, x.data(), d_in, layer.w.data(), d_out, 0.0f, y, ldy);
    if (layer.b.size() != 0)
        for (std::size_t r = 0; r < rows; ++r)
            for (std::size_t c = 0; c < d_out; ++c) y[r * ldy + c] += layer.b(c);
}

struct Worker {
    std::vector<float> block;  // R × T scores, then weights
    Stats queries, keys, values, scores, weights, outputs;
    double gemm_scores = 0.0, softmax = 0.0, gemm_values = 0.0;  // thread seconds per phase
};

}  // namespace

void mha_at_scale(Recorder& rec, const Cube& x, const MultiHeadWeights& mw, std::size_t H, bool causal) {
    Trace& trace = rec.trace();
    const std::size_t B = x.shape(0), T = x.shape(1), d_out = mw.heads[0].query.w.shape(1), d_h = d_out / H;
    const std::vector<Axis> tf{Axis::token, Axis::feature};
    const std::vector<Axis> htf{Axis::head, Axis::token, Axis::feature}, htt{Axis::head, Axis::token, Axis::token};
    auto record = [&](const std::string& id, const std::string& title, const std::string& formula, std::vector<std::size_t> shape,
                      std::vector<Axis> axes, const Summary& summary, double seconds) -> Step& {
        Tensor t;
        t.shape = std::move(shape);
        Step& step = rec.add_plain(id, title, formula, std::move(t), std::move(axes));
        if (trace.batched) {
            step.tensor.shape.insert(step.tensor.shape.begin(), B);
            step.axes.insert(step.axes.begin(), Axis::batch);
        }
        step.summary = summary;
        step.summarised = true;
        step.seconds = seconds;
        return step;
    };
    const auto hw = std::max(1u, std::thread::hardware_concurrency());

    // ---- projections: three products over all B·T rows ------------------------------------
    // Q, K and V side by side in one buffer, rows of stride 3·d_out: row t is [q_t k_t v_t].
    auto t0 = Clock::now();
    const std::size_t ld = 3 * d_out;
    const Cube qkv = [&] {
        Cube c = fresh_cube(B, T, ld);
        linear_into(x, mw.heads[0].query, c.data(), ld);
        return c;
    }();
    const double tq = since(t0);
    t0 = Clock::now();
    linear_into(x, mw.heads[0].key, const_cast<float*>(qkv.data()) + d_out, ld);
    const double tk = since(t0);
    t0 = Clock::now();
    linear_into(x, mw.heads[0].value, const_cast<float*>(qkv.data()) + 2 * d_out, ld);
    const double tv = since(t0);
    const float* q = qkv.data();
    const float* k = qkv.data() + d_out;
    const float* v = qkv.data() + 2 * d_out;
    // ---- attention, (batch, head) pairs shared out over the cores --------------------------
    const float scale = static_cast<float>(std::sqrt(static_cast<double>(d_h)));
    Cube z = fresh_cube(B, T, d_out);  // the heads' outputs, already concatenated
    const std::size_t threads = std::min<std::size_t>(hw, B * H);
    std::vector<Worker> workers(threads);
    std::atomic<std::size_t> next{0};
    auto work = [&](Worker& w) {
        w.block.resize(block_rows * T);
        for (std::size_t task; (task = next++) < B * H;) {
            const std::size_t b = task / H, h = task % H;
            const float* qh = q + b * T * ld + h * d_h;  // rows of stride ld = 3·d_out
            const float* kh = k + b * T * ld + h * d_h;
            const float* vh = v + b * T * ld + h * d_h;
            float* zh = z.data() + b * T * d_out + h * d_h;
            for (std::size_t t = 0; t < T; ++t) {  // this head's columns of Q, K, V (the union over heads is all)
                w.queries.add_row(qh + t * ld, d_h);
                w.keys.add_row(kh + t * ld, d_h);
                w.values.add_row(vh + t * ld, d_h);
            }
            for (std::size_t r0 = 0; r0 < T; r0 += block_rows) {
                const std::size_t rows = std::min(block_rows, T - r0);
                const std::size_t cols = causal ? r0 + rows : T;  // keys any row of the block can see
                float* s = w.block.data();
                auto t = Clock::now();
                sgemm(false, true, rows, cols, d_h, 1.0f, qh + r0 * ld, ld, kh, ld, 0.0f, s, cols);
                w.gemm_scores += since(t);
                t = Clock::now();
                for (std::size_t i = 0; i < rows; ++i) {
                    float* row = s + i * cols;
                    const std::size_t n = causal ? r0 + i + 1 : T;  // masked: j > i
                    const auto [raw, weights] = softmax_row(row, n, scale);
                    w.scores.add(raw, n);
                    w.weights.add(weights, n);
                    w.weights.add_row_sum(weights.sum);
                    std::fill(row + n, row + cols, 0.0f);
                }
                w.softmax += since(t);
                t = Clock::now();
                sgemm(false, false, rows, d_h, cols, 1.0f, s, cols, vh, ld, 0.0f, zh + r0 * d_out, d_out);
                for (std::size_t i = 0; i < rows; ++i) w.outputs.add_row(zh + (r0 + i) * d_out, d_h);
                w.gemm_values += since(t);
            }
        }
    };
    t0 = Clock::now();
    std::vector<std::thread> pool;  // each core runs its own (batch, head) pairs and products
    for (std::size_t i = 1; i < threads; ++i) pool.emplace_back([&, i] { run_as_worker([&] { work(workers[i]); }); });
    run_as_worker([&] { work(workers[0]); });
    for (auto& th : pool) th.join();
    const double attention = since(t0);

    Worker all;
    for (const Worker& w : workers) {
        all.queries.merge(w.queries);
        all.keys.merge(w.keys);
        all.values.merge(w.values);
        all.scores.merge(w.scores);
        all.weights.merge(w.weights);
        all.outputs.merge(w.outputs);
        all.gemm_scores += w.gemm_scores;
        all.softmax += w.softmax;
        all.gemm_values += w.gemm_values;
    }
    const Summary sq = all.queries.summary(false), sk = all.keys.summary(false), sv = all.values.summary(false);
    record("queries", "Queries for all heads at once", "Q = X·W_query", {T, d_out}, tf, sq, tq);
    record("keys", "Keys for all heads at once", "K = X·W_key", {T, d_out}, tf, sk, tk);
    record("values", "Values for all heads at once", "V = X·W_value", {T, d_out}, tf, sv, tv);
    const std::string split = "(a view: the same numbers as above)";
    record("queries_split", "Queries split into heads " + split, "Q.view(B, T, H, d_h).transpose(1, 2)", {H, T, d_h}, htf, sq, 0.0);
    record("keys_split", "Keys split into heads " + split, "K.view(B, T, H, d_h).transpose(1, 2)", {H, T, d_h}, htf, sk, 0.0);
    record("values_split", "Values split into heads " + split, "V.view(B, T, H, d_h).transpose(1, 2)", {H, T, d_h}, htf, sv, 0.0);


    // The phases run interleaved on every core: split the wall time by their thread time.
    const double busy = std::max(all.gemm_scores + all.softmax + all.gemm_values, 1e-12);
    const std::size_t masked = causal ? B * H * T * (T - 1) / 2 : 0;
    Summary scores = all.scores.summary(false);
    if (causal) scores.scope = "j ≤ i only: the masked scores above the diagonal are never computed";
    Step& s = record("scores", "Scores of every head", "ω_h = Q_h·K_hᵀ", {H, T, T}, htt, scores, attention * all.gemm_scores / busy);
    (void)s;
    if (causal) {
        Summary m;
        m.min = 0.0;
        m.max = 1.0;
        m.count = T * T;
        m.checksum = static_cast<double>(T) * static_cast<double>(T + 1) / 2.0;
        m.mean = m.checksum / static_cast<double>(m.count);
        Step& mask = record("mask", "The causal mask, shared by every head", "M = tril(ones(T, T))", {T, T}, {Axis::token, Axis::token}, m, 0.0);
        if (trace.batched) {  // the mask has no batch axis
            mask.tensor.shape.erase(mask.tensor.shape.begin());
            mask.axes.erase(mask.axes.begin());
        }
    }
    Summary weights = all.weights.summary(true);
    weights.count += masked;  // the masked weights are exact zeros
    if (masked) weights.min = std::min(weights.min, 0.0);
    weights.mean = weights.checksum / static_cast<double>(weights.count);
    record("weights", std::string(causal ? "Causal attention" : "Attention") + " weights of every head",
           std::string("A_h = softmax(") + (causal ? "masked " : "") + "ω_h / √" + std::to_string(d_h) + ")", {H, T, T}, htt,
           weights, attention * all.softmax / busy);
    const Summary outputs = all.outputs.summary(false);
    record("head_outputs", "Each head's context vectors", "Z_h = A_h·V_h", {H, T, d_h}, htf, outputs, attention * all.gemm_values / busy);
    record("context", "Heads concatenated along the features (written in place by each head)",
           "Z = Z.transpose(1, 2).view(B, T, d_out)", {T, d_out}, tf, outputs, 0.0);

    // ---- the output projection ---------------------------------------------------------------
    t0 = Clock::now();
    std::vector<float> y;  // (B,T,d_out): the one tensor a summary keeps
    y.reserve(B * T * d_out);
    advise_huge_pages(y.data(), B * T * d_out * sizeof(float));
    y.resize(B * T * d_out);
    linear_into(z, mw.out_proj, y.data(), d_out);
    const double ty = since(t0);
    Step& out = record("output", "Output projection of the concatenated heads", "Y = Z·W_o + b_o", {T, d_out}, tf,
                       stats_of(y.data(), B * T, d_out).summary(false), ty);
    out.tensor.data = std::move(y);
}

}  // namespace attnwalk
