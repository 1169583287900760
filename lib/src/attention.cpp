#include "attnwalk/attention.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>

#include <xtensor/xview.hpp>

#include "attnwalk/blas.hpp"
#include "attnwalk/dropout.hpp"
#include "attnwalk/errors.hpp"
#include "attnwalk/mask.hpp"
#include "attnwalk/scores.hpp"
#include "attnwalk/softmax.hpp"

namespace attnwalk {

Cube project(const Cube& x, const Linear& layer) {
    Cube out = matmul_each(x, layer.w);  // (B,T,d_out)
    if (layer.b.size() != 0) out += xt::view(layer.b, xt::newaxis(), xt::newaxis(), xt::all());
    return out;
}

Linear AttentionWeights::head_columns(const Linear& layer, std::size_t h) const {
    const std::size_t d_h = head_size();
    Linear out;
    out.w = xt::view(layer.w, xt::all(), xt::range(h * d_h, (h + 1) * d_h));
    if (layer.b.size() != 0) out.b = xt::view(layer.b, xt::range(h * d_h, (h + 1) * d_h));
    return out;
}

Hyper split_heads(const Cube& x, std::size_t heads) {
    const std::size_t B = x.shape(0), T = x.shape(1), d_h = x.shape(2) / heads;
    Hyper out({B, heads, T, d_h});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < heads; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t c = 0; c < d_h; ++c) out(b, h, t, c) = x(b, t, h * d_h + c);
    return out;
}

Cube merge_heads(const Hyper& x) {
    const std::size_t B = x.shape(0), H = x.shape(1), T = x.shape(2), d_h = x.shape(3);
    Cube out({B, T, H * d_h});
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
    c.bytes = 4.0 * (16.0 * B * H * R * T + 16.0 * B * T * d + 4.0 * d * d);
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

void charge_forward_time(Trace& trace, const Forward& f) {
    const auto& t = f.seconds;
    const struct {
        const char* id;
        double seconds;
    } charges[] = {{"queries", t.project / 3}, {"keys", t.project / 3},       {"values", t.project / 3},
                   {"scores", t.scores},       {"scores_masked", t.mask_scale}, {"weights", t.softmax},
                   {"weights_dropped", t.dropout}, {"head_outputs", t.context},  {"output", t.output}};
    const bool heads = std::any_of(trace.steps.begin(), trace.steps.end(), [](const Step& s) { return s.id == "head_outputs"; });
    for (Step& step : trace.steps) {
        for (const auto& c : charges)
            if (step.id == c.id) step.seconds += c.seconds;
        if (step.id == "scores_scaled" && f.causal == false) step.seconds += t.mask_scale;
        if (step.id == "context") step.seconds += heads ? 0.0 : t.context + t.output;  // one head: context is the output
    }
}

Forward attention_forward(const Cube& x, const AttentionWeights* w, const ForwardSpec& spec) {
    const std::size_t B = x.shape(0), T = x.shape(1);
    Forward f;
    f.causal = spec.causal;
    auto clock = Clock::now();

    // ---- Q, K, V (B,T,H·d_h) and their heads (B,H,T,d_h) -------------------------------
    if (w) {
        if (w->d_in() != x.shape(2))
            throw UsageError("the weights take d_in = " + std::to_string(w->d_in()) + " features, the input has " +
                             std::to_string(x.shape(2)));
        if (w->heads < 1 || w->width() % w->heads != 0)
            throw UsageError("d_out " + std::to_string(w->width()) + " is not divisible by " + std::to_string(w->heads) +
                             " heads");
        f.q = project(x, w->query);
        f.k = project(x, w->key);
        f.v = project(x, w->value);
        f.heads = w->heads;
    } else {
        f.q = f.k = f.v = x;
    }
    f.d_h = f.q.shape(2) / f.heads;
    f.seconds.project = since(clock);
    f.qh = split_heads(f.q, f.heads);
    f.kh = split_heads(f.k, f.heads);
    f.vh = split_heads(f.v, f.heads);
    const std::size_t H = f.heads, d_h = f.d_h;

    // ---- scores of the query rows, masked and scaled (B,H,R,T) --------------------------
    if (spec.query && *spec.query >= T)
        throw UsageError("query row " + std::to_string(*spec.query) + " is out of range: there are " +
                         std::to_string(T) + " tokens");
    f.row0 = spec.query.value_or(0);
    f.rows = spec.query ? 1 : T;
    const std::size_t R = f.rows;
    f.scale = spec.scale.value_or(w ? static_cast<float>(std::sqrt(static_cast<double>(d_h))) : 1.0f);
    if (!(std::isfinite(f.scale) && f.scale > 0.0f)) throw UsageError("the scale must be a positive finite number");
    f.scores = Hyper::from_shape({B, H, R, T});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            sgemm(false, true, R, T, d_h, 1.0f, &f.qh(b, h, f.row0, 0), d_h, &f.kh(b, h, 0, 0), d_h, 0.0f,
                  &f.scores(b, h, 0, 0), T);
    f.seconds.scores = since(clock);
    if (spec.until == Stage::scores && !spec.causal && f.scale == 1.0f) return f;
    // masked_fill first, then divide by the scale, in the textbook's order
    if (spec.causal) f.masked = mask_future_neg_inf(f.scores, f.row0);
    const Hyper& unscaled = spec.causal ? f.masked : f.scores;
    f.scaled = f.scale == 1.0f ? unscaled : scale_scores(unscaled, f.scale);
    f.seconds.mask_scale = since(clock);
    if (spec.until == Stage::scores) return f;

    // ---- softmax, row by row --------------------------------------------------------------
    f.weights = f.scaled;
    f.row_max = Cube::from_shape({B, H, R});
    f.row_sum = Cube::from_shape({B, H, R});
    for (std::size_t r = 0; r < B * H * R; ++r) {
        const RowSoftmax s = softmax_row(f.weights.data() + r * T, T);
        f.row_max.data()[r] = s.max;
        f.row_sum.data()[r] = s.sum;
    }
    f.seconds.softmax = since(clock);

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
    if (spec.until == Stage::weights) return f;

    // ---- each head's context, concatenated, projected ---------------------------------------
    const Hyper& a = f.final_weights();
    f.head_outputs = Hyper::from_shape({B, H, R, d_h});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            sgemm(false, false, R, d_h, T, 1.0f, &a(b, h, 0, 0), T, &f.vh(b, h, 0, 0), d_h, 0.0f,
                  &f.head_outputs(b, h, 0, 0), d_h);
    f.context = merge_heads(f.head_outputs);
    f.seconds.context = since(clock);
    f.output = w && w->out_proj ? project(f.context, *w->out_proj) : f.context;
    f.seconds.output = since(clock);
    return f;
}

}  // namespace attnwalk
