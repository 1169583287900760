// One attention forward pass, used by every walk: single-head attention is H = 1 with
// no out_proj; the textbook's MultiHeadAttention and its wrapper are the two head
// layouts. The walks record the intermediates they teach from the Forward it returns;
// one cell written out (explain.hpp) reads the same intermediates.
//
//   X (B,T,d_in) -> Q, K, V = X·W (+ b)                  (B,T,H·d_h)   X itself without weights
//   split into heads                                    (B,H,T,d_h)
//   ω = Q_h·K_hᵀ, for query rows r0..r0+R                (B,H,R,T)
//   causal: ω_ij = −∞ for j > i; then ω / scale          (B,H,R,T)   what the softmax reads
//   A = softmax(·) row by row (max and sum kept)         (B,H,R,T)
//   dropout: A ⊙ keep / (1 − p)                          (B,H,R,T)
//   Z_h = A_h·V_h, heads concatenated                    (B,R,H·d_h)
//   Y = Z·W_o + b_o, or Y = Z without out_proj           (B,R,d_out)
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnwalk/rng.hpp"
#include "attnwalk/tensor.hpp"
#include "attnwalk/walk.hpp"
#include "attnwalk/weights.hpp"

namespace attnwalk {

struct Linear {
    Mat w;  // d_in×d_out, x·W layout (nn.Linear.weight is the transpose)
    Vec b;  // d_out, or empty for no bias
};

// x·W + b for every batch element: (B,T,d_in) -> (B,T,d_out)
Cube project(const Cube& x, const Linear& layer);

struct AttentionWeights {
    Linear query, key, value;         // d_in × H·d_h
    std::optional<Linear> out_proj;   // H·d_h × H·d_h
    std::size_t heads = 1;
    HeadLayout layout = HeadLayout::fused;
    // Where they came from, recorded in the trace's params (seed, init, d_out, ... or the file).
    std::vector<std::pair<std::string, ParamValue>> origin;

    std::size_t d_in() const { return query.w.shape(0); }
    std::size_t width() const { return query.w.shape(1); }      // H·d_h
    std::size_t head_size() const { return width() / heads; }   // d_h
    // The columns of head h (stacked layout: that head's own layer).
    Linear head_columns(const Linear& layer, std::size_t h) const;
};

// (B,T,H·d_h) -> (B,H,T,d_h): the view + transpose(1, 2) of the fused form.
Hyper split_heads(const Cube& x, std::size_t heads);
// (B,H,T,d_h) -> (B,T,H·d_h): transpose(1, 2) + contiguous view, the inverse of split_heads.
Cube merge_heads(const Hyper& x);

// What the scores are divided by, as the walks write it.
struct Scale {
    float value = 1.0f;
    std::string symbol;  // in formulas: "√d_k", or the number given
    std::string words;   // in titles: "√d_k = √2", or the number given
};

// How far the forward goes.
enum class Stage { scores, weights, output };

struct Dropout {
    double p = 0.0;               // 0: no draw (eval mode is p = 0 too)
    Generator* gen = nullptr;     // needed when p > 0
};

struct ForwardSpec {
    bool causal = false;
    std::optional<float> scale;         // the scores are divided by this; default √d_h with weights, 1 without
    std::optional<std::size_t> query;   // only this query row (R = 1); every row otherwise (R = T)
    Stage until = Stage::output;
    Dropout dropout;
};

struct Forward {
    std::size_t heads = 1, d_h = 0, row0 = 0, rows = 0;  // rows = R, starting at query row row0
    float scale = 1.0f;
    bool causal = false;
    Cube q, k, v;                 // (B,T,H·d_h)
    Hyper qh, kh, vh;             // (B,H,T,d_h)
    Hyper scores;                 // (B,H,R,T) ω
    Hyper masked;                 // (B,H,R,T) ω with −∞ for j > i (causal only)
    Hyper scaled;                 // (B,H,R,T) what the softmax reads
    Hyper weights;                // (B,H,R,T) softmax
    Cube row_max, row_sum;        // (B,H,R) the softmax's max and sum of exponentials per row
    bool dropped = false;         // dropout was drawn
    Hyper keep;                   // (B,H,R,T) 1 = kept
    float dropout_scale = 1.0f;   // 1/(1 − p) in float32
    Hyper weights_dropped;        // (B,H,R,T)
    Hyper head_outputs;           // (B,H,R,d_h)
    Cube context;                 // (B,R,H·d_h)
    Cube output;                  // (B,R,d_out)
    struct {
        double project = 0, scores = 0, mask_scale = 0, softmax = 0, dropout = 0, context = 0, output = 0;
    } seconds;                    // wall time of each phase

    const Hyper& final_weights() const { return dropped ? weights_dropped : weights; }
};

// Throws UsageError when the shapes do not fit (e.g. H·d_h ≠ width, a query row ≥ T).
Forward attention_forward(const Cube& x, const AttentionWeights* weights, const ForwardSpec& spec);

// Adds each phase's time to the step of `trace` that shows its result (queries, keys,
// values, scores, ..., output), for a timed trace: the walks record after the forward.
void charge_forward_time(Trace& trace, const Forward& f);

// What the forward and the steps a walk records cost for these sizes, `rows` query rows.
Cost forward_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, std::size_t width, std::size_t heads,
                  std::size_t rows);

}  // namespace attnwalk
