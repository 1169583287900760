// One attention forward pass, used by every walk: single-head attention is H = 1 with
// no out_proj; the textbook's MultiHeadAttention and its wrapper are the two head
// layouts. The walks record the intermediates they teach from the Forward it returns;
// one cell written out (explain.hpp) reads the same intermediates.
//
//   X (B,T,d_in) -> Q, K, V = X·W (+ b)                  (B,T,H·d_h), K and V (B,T,G·d_h)
//   split into heads                                    (B,H,T,d_h), K and V (B,G,T,d_h)
//   QK-norm (optional): RMSNorm on each head's Q and K rows, or on the whole projections
//   before the split into heads (OLMo 2 and 3)
//   RoPE (optional): each head's Q and K rotated by position (its first rotary_dim features)
//   ω = Q_h·K_gᵀ, g = h / (H/G), for query rows r0..r0+R  (B,H,R,T)
//   causal: ω_ij = −∞ for j > i (window W: also j ≤ i − W); then ω / scale   what the softmax reads
//   A = softmax(·) row by row (max and sum kept)         (B,H,R,T)
//   learned sinks (optional, gpt-oss): softmax([· , sink_h]) with the sink's column dropped
//   dropout: A ⊙ keep / (1 − p)                          (B,H,R,T)
//   Z_h = A_h·V_h, heads concatenated                    (B,R,H·d_h)
//   output gate (optional): Z ⊙ σ(X·W_gate)              (B,R,H·d_h)
//   Y = Z·W_o + b_o, or Y = Z without out_proj           (B,R,d_out)
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <variant>

#include "attnwalk/mask_rule.hpp"
#include "attnwalk/stats.hpp"
#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/rng.hpp"
#include "attnwalk/ops/rope_params.hpp"
#include "attnwalk/ops/shapes.hpp"
#include "attnwalk/ops/tensor.hpp"
#include "attnwalk/ops/work.hpp"

namespace attnwalk {

// A value the weights were made with (a seed, an init, a file name), for the trace's params.
using Setting = std::variant<bool, unsigned long long, double, std::string>;

struct AttentionWeights {
    Linear query;                     // d_in × H·d_h
    Linear key, value;                // d_in × G·d_h (G = H but with grouped-query attention)
    std::optional<Linear> out_proj;   // H·d_h × H·d_h
    std::optional<Linear> gate;       // gated attention: Z ⊙ σ(X·W_gate) before out_proj (d_in × H·d_h; Qwen3-Next)
    std::optional<Vec> sinks;         // learned sinks: one logit per head joins each row's softmax (H; gpt-oss)
    std::size_t heads = 1;
    std::size_t kv_heads = 0;         // G, the key/value heads; 0 = one per query head
    std::optional<Vec> q_norm, k_norm;  // QK-norm: RMSNorm scales on each head's rows before RoPE (d_h),
    bool qk_norm_whole = false;         // or on the whole projections before the split (H·d_h and G·d_h)
    float qk_norm_eps = 1e-6f;
    bool v_norm = false;              // an RMSNorm without a scale on each head's values (Gemma 4)
    bool shared_kv = false;           // no key or value projection: the keys and values are another layer's (Gemma 4's shared
                                      // layers); project_heads makes the queries alone, the caller hands kh and vh
    bool combined = false;            // drawn as one Linear(d_in, 3·d_out) (MHACombinedQKV)
    HeadLayout layout = HeadLayout::fused;
    // Where they came from, recorded in the trace's params (seed, init, d_out, ... or the file).
    std::vector<std::pair<std::string, Setting>> origin;

    std::size_t d_in() const { return query.in(); }
    std::size_t width() const { return query.out(); }      // H·d_h
    std::size_t head_size() const { return width() / heads; }   // d_h
    std::size_t key_heads() const { return kv_heads ? kv_heads : heads; }  // G
    // The columns of head h (stacked layout: that head's own layer).
    Linear head_columns(const Linear& layer, std::size_t h) const;
};

// (B,T,H·d_h) -> (B,H,T,d_h): the view + transpose(1, 2) of the fused form.
Hyper split_heads(const Cube& x, std::size_t heads);
// (B,H,T,d_h) -> (B,T,H·d_h): transpose(1, 2) + contiguous view, the inverse of split_heads.
Cube merge_heads(const Hyper& x);

// How far the forward goes.
enum class Stage { scores, weights, output };

struct Dropout {
    double p = 0.0;               // 0: no draw (eval mode is p = 0 too)
    Generator* gen = nullptr;     // needed when p > 0
};

struct ForwardSpec {
    bool causal = false;
    std::optional<std::size_t> window;  // sliding window: a query sees itself and the W − 1 keys before it
    std::optional<RopeParams> rope;        // rotary position embeddings on Q and K
    std::size_t position0 = 0;          // the position of token 0 (RoPE; shifting it leaves the scores unchanged)
    // SDPA's conventions: multiply by scale_factor (instead of dividing by scale), then add
    // `bias` (R×T, the same for every batch element and head) before the softmax.
    std::optional<float> scale_factor;
    const Mat* bias = nullptr;
    std::optional<float> scale;         // the scores are divided by this; default √d_h with weights, 1 without
    std::optional<std::size_t> query;   // only this query row (R = 1); every row otherwise (R = T)
    std::vector<std::size_t> zero_heads;  // ablation: these heads' outputs are zeroed before the concatenation
    Stage until = Stage::output;
    Dropout dropout;
    // The masked and the scaled scores kept as tensors (Forward::masked, scaled), which the
    // lessons show; false: each row goes from the scores straight into the weights, the
    // same numbers in two fewer T×T tensors (the decoder's tap reads scores and weights).
    bool keep_masked_scaled = true;
    // The scores and the weights wanted only as their statistics (a summary): where the
    // attention kernels take the heads (fast::use_attention_kernels), with no dropout, no
    // added mask and masked_fill's tensors not kept, each head's T×T are made in a buffer of
    // their own, summed in the heads' order into Forward::scores_stats and weights_stats
    // (the statistics the tensors would give, bit for bit), and dropped. Elsewhere the
    // tensors are made as always; Forward::square_summarised says which.
    bool square_summaries = false;
    // With square_summaries: false when nothing reads even the statistics (a layer the
    // decoder's tap does not keep): the heads' T×T are made in the buffers and dropped, no
    // head waiting for the one before it.
    bool square_statistics = true;
};

// Whether attend honours ForwardSpec::square_summaries on this CPU for heads of size d_h
// and `rows` query rows (the memory estimates ask it before a walk).
bool sums_square_summaries(std::size_t d_h, std::size_t rows);

// YaRN's get_mscale: 0.1·m·ln(scale) + 1 for a scale above 1, else 1 (its default
// attention factor with m = 1; DeepSeek's ratio of two and its softmax scale's factor).
double yarn_mscale(double scale, double m = 1.0);

// RoPE's tables for positions p0 .. p0+T−1 over the d rotated features (even; d_h, or
// rotary_dim of a partial rotary): the half-split form of the Llama reference code and of
// Hugging Face's checkpoints (x_i pairs with x_{i+d/2}), or, interleaved, Cohere's (x_2i with
// x_2i+1).
struct Rope {
    Vec inv_freq;      // (d/2)  base^(−2i/d), rescaled
    Mat angles;        // (T,d)  position · inv_freq, the d/2 angles repeated twice (interleaved: each twice in a row)
    Mat cos, sin;      // (T,d)  × attention_scaling
    float attention_scaling = 1.0f;  // YaRN's attention factor (1 otherwise)
    bool interleaved = false;        // the pairs (2i, 2i + 1) turn by θ_i; else (i, i + d/2)
    std::size_t dims() const { return inv_freq.size() * 2; }
    // The feature that turns with feature c, and the frequency index of c's pair.
    std::size_t partner(std::size_t c) const { return interleaved ? c ^ 1U : (c < dims() / 2 ? c + dims() / 2 : c - dims() / 2); }
    std::size_t pair_of(std::size_t c) const { return interleaved ? c / 2 : c % (dims() / 2); }
};
// `d` is the head size d_h; spec.rotary_dim (when set) the features that turn.
Rope rope_tables(std::size_t d, std::size_t T, std::size_t position0, const RopeParams& spec);
// x·cos + rotate_half(x)·sin over the first rope.dims() features of the last axis of
// (B,H,T,d_h), rotate_half(x) = (−x₂, x₁) (interleaved: (−x₁, x₀, −x₃, x₂, …)); the other
// features pass unchanged.
Hyper apply_rope(const Hyper& x, const Rope& rope);

struct Forward {
    std::size_t heads = 1, kv_heads = 1, d_h = 0, row0 = 0, rows = 0;  // rows = R, starting at query row row0
    std::size_t q_position0 = 0;  // the key index of query row 0 (Tk − Tq: the last queries meet the last keys)
    float scale = 1.0f;
    bool causal = false;
    std::size_t window = 0;       // 0: no window
    Cube q, k, v;                 // (B,T,H·d_h), K and V (B,T,G·d_h)
    Hyper qh, kh, vh;             // (B,H,T,d_h), K and V (B,G,T,d_h); rotated with RoPE
    bool qk_normed = false;       // QK-norm applied: qh and kh (qh_plain, kh_plain with RoPE) are normalised
    Hyper qh_plain, kh_plain;     // before RoPE (RoPE only)
    std::optional<Rope> rope;
    Hyper scores;                 // (B,H,R,T) ω
    Hyper masked;                 // (B,H,R,T) ω with −∞ where masked (causal or window); kept as asked
    Hyper scaled;                 // (B,H,R,T) what the softmax reads; kept as asked
    Hyper weights;                // (B,H,R,T) softmax
    bool square_summarised = false;  // spec.square_summaries taken: scores and weights empty, their statistics here
    Stats scores_stats, weights_stats;  // (B,H,R,T) in order; the weights' with their row sums
    Cube row_max, row_sum;        // (B,H,R) the softmax's max and sum of exponentials per row (the sink's included)
    Vec sinks;                    // (H) the heads' learned sink logits; empty without
    Cube sink_share;              // (B,H,R) with sinks: the weight the sink took, 1 − the row's sum
    bool dropped = false;         // dropout was drawn
    Hyper keep;                   // (B,H,R,T) 1 = kept
    float dropout_scale = 1.0f;   // 1/(1 − p) in float32
    Hyper weights_dropped;        // (B,H,R,T)
    Hyper head_outputs;           // (B,H,R,d_h)
    Cube context;                 // (B,R,H·d_h)
    Cube gate;                    // (B,T,H·d_h) X·W_gate, with an output gate
    Cube gated;                   // (B,R,H·d_h) Z ⊙ σ(gate), what out_proj reads
    Cube output;                  // (B,R,d_out)
    struct {
        double project = 0, scores = 0, mask_scale = 0, softmax = 0, dropout = 0, context = 0, output = 0;
    } seconds;                    // wall time of each phase
    struct {
        Work query, key, value, gate, scores, context, output;
    } work;                       // the products' work of each projection and phase (ops/work.hpp)

    const Hyper& final_weights() const { return dropped ? weights_dropped : weights; }
};

// Throws UsageError when the shapes do not fit (e.g. H·d_h ≠ width, a query row ≥ T).
Forward attention_forward(const Cube& x, const AttentionWeights* weights, const ForwardSpec& spec);
// The forward's two halves. project_heads: Q, K, V, their heads and RoPE (spec.position0
// is the position of x's first token). attend: everything after, for queries f.qh
// against keys f.kh and values f.vh, which may be longer (a KV cache): query row r has
// position f.q_position0 + r among the keys.
Forward project_heads(const Cube& x, const AttentionWeights* weights, const ForwardSpec& spec);
void attend(Forward& f, const AttentionWeights* weights, const ForwardSpec& spec);

// What the forward and the steps a walk records cost for these sizes, `rows` query rows.
Cost forward_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, std::size_t width, std::size_t heads,
                  std::size_t rows);

}  // namespace attnwalk
