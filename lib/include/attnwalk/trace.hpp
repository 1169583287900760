// The trace: what every walk returns and every renderer reads.
//
// A trace is an ordered list of named steps. Each step holds one tensor (row-major
// floats with a shape), the formula that produced it, and optional detail: written-out
// sums (`expansion`), row sums, a note. Renderers only read a trace; nothing here
// computes. This header is light on purpose (no xtensor): app/ includes it.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <variant>
#include <vector>

#include "attnwalk/mask_rule.hpp"
#include "attnwalk/stats.hpp"

namespace attnwalk {

// What an axis of a step's tensor indexes; renderers label rows and columns with it.
enum class Axis { batch, head, token, feature, layer, rank };  // rank: a place in a ranking, from 1
const char* axis_name(Axis axis);

struct Tensor {
    std::vector<std::size_t> shape;  // empty shape = scalar
    std::vector<float> data;         // row-major, product(shape) values
    // A tensor of whole numbers (token ids, counts): the exact values, which renderers
    // print as integers; `data` holds them as float32 for figures and summaries.
    std::vector<unsigned long long> integers;
    // A table whose first n columns are whole numbers (a layer, a head) beside measured
    // ones: those columns print as integers; `data` holds them.
    std::size_t integer_columns = 0;
    // The whole numbers are places counted from 0, as PyTorch indexes them and the JSON keeps
    // them (a cache's kept positions): people read them counted from 1 (shown_integer_at).
    bool positions = false;
    // What each whole number stands for, one per element (a token id's text): the text view
    // shows it in place of the number; empty when the numbers speak for themselves.
    std::vector<std::string> words;
    std::size_t size() const;
    bool all_finite() const;  // no inf, no NaN
    bool is_integer() const { return !integers.empty(); }
    // Whether element i (row-major) is a whole number, and its value when it is.
    bool is_integer_at(std::size_t i) const {
        return is_integer() || (integer_columns && !shape.empty() && i % shape.back() < integer_columns);
    }
    unsigned long long integer_at(std::size_t i) const {
        return is_integer() ? integers[i] : static_cast<unsigned long long>(data[i]);
    }
    // Element i as a person reads it: a place counts from 1.
    unsigned long long shown_integer_at(std::size_t i) const { return integer_at(i) + (positions ? 1 : 0); }
};
// Whole numbers as a tensor of this shape (empty: a scalar).
Tensor integer_tensor(std::vector<unsigned long long> values, std::vector<std::size_t> shape);

// One written-out sum: result = Σ coef_i · value_i. A dot product has scalar values
// (each value holds one number); a weighted sum of vectors has vector values.
struct Term {
    float coef;
    std::vector<float> value;
    std::string value_name = {};  // optional: what the value is, e.g. "1/Σ"
};
struct Expansion {
    std::string label;  // e.g. "journey·Your"
    std::vector<Term> terms;
    std::vector<float> result;
    // A long sum shown in part (a model's 2048 terms): `omitted` terms are left out after
    // the first `omitted_after` of `terms`; renderers write "…" there.
    std::size_t omitted = 0, omitted_after = 0;
};

// A summary: what a step's tensor looked like, without the tensor (big inputs).
struct Summary : Stats {
    Summary() = default;
    Summary(const Stats& stats) : Stats(stats) {}  // NOLINT: the statistics, as computed
    std::string scope;  // what was summarised, when not every entry (e.g. the causal triangle)
};

// Which cells of a token×token step are masked, whatever their value: key j after query
// i (causal), j ≤ i − W (a sliding window of W), and a key a query did not keep (`kept`:
// DeepSeek Sparse Attention's top-k, queries × keys, row-major, 1 = kept; empty: none).
// Renderers draw them as masked.
struct CellMask {
    bool causal = true;
    std::size_t window = 0;  // 0: no window
    std::vector<unsigned char> kept;
    std::size_t keys = 0;    // the columns of `kept`
    CellMask() = default;
    CellMask(bool is_causal, std::size_t width = 0) : causal(is_causal), window(width) {}  // NOLINT: CellMask{true, W}
    bool masks(std::size_t query, std::size_t key) const {
        if (masked_out(query, key, causal, window)) return true;
        return !kept.empty() && (key >= keys || query * keys + key >= kept.size() || !kept[query * keys + key]);
    }
};

enum class StepKind {
    result,     // an intermediate or final tensor of the walk
    parameter,  // a weight matrix or bias: the text view shows it only when asked
};

struct Step {
    std::string id;       // stable, documented in docs/json.md
    std::string title;    // one line for people
    std::string formula;  // the math, e.g. "ω = X·Xᵀ"
    Tensor tensor;
    std::vector<Axis> axes;             // one per tensor dimension
    std::size_t first_row = 0;          // a token row axis (second to last) starts at this token
    std::size_t first_key = 0;          // a token column axis (last) starts at this token
    std::size_t first_layer = 0;        // a layer axis starts at this layer (DeepSeek-V3's experts: after its dense layers)
    std::vector<std::string> labels;    // optional: names of the last axis's entries (columns)
    // Optional: the last two axes' names where the usual ones would mislead. A token × token step
    // with names of its own is no attention's (a head's circuit tables: rows of query tokens and
    // columns of key tokens through the embeddings; source and output tokens): renderers name
    // its axes so, and no cell of it is an attention's to write out (cell_of). Empty: a token ×
    // token step is an attention's, its axes query and key.
    std::string row_axis, col_axis;
    std::string note;                   // optional explanation
    std::string legend;                 // optional: what its values mean where a number alone does not say (a mask's
                                        // 1 and 0); the explorer writes it beside the step's value
    std::vector<Expansion> expansion;   // optional written-out sums
    Tensor row_sum;                     // optional: the sum over the last axis
    std::string group;                  // steps sharing a group may be shown side by side
    StepKind kind = StepKind::result;
    bool may_be_non_finite = false;     // inf/NaN here is the lesson (−∞ masking, naive softmax overflow)
    double seconds = 0.0;               // wall time spent computing and recording this step
    // The matrix products' work counted while the step ran (ops/work.hpp), and in a timed
    // trace of enough work, the least time this machine could take for it (0: none).
    double flop = 0.0, bytes = 0.0, limit_seconds = 0.0;
    std::optional<CellMask> mask;       // a token×token step after the mask
    std::optional<std::size_t> query;   // a step of one query's row (kvcache's stepN.*): that query's position
    bool heads_grid = false;            // every layer's and head's attention weights (layer × head × query × key,
                                        // the model view): drawn as a grid of heads, and the drawings open on it
    bool opens = false;                 // its lesson declares the drawings open on it (catalogue.hpp's `opening`:
                                        // the final attention weights); they open on the last such step
    bool nn_linear = false;             // a parameter PyTorch holds as nn.Linear.weight, [out, in]: torch's print
                                        // shows it so (the transpose of its x·W layout)
    // The model view's grid ranked by one head statistic: its panels (layer·H + head) highest first and
    // each one's number (the heads_sorted step's column `ranked_by`); empty in layer, head order.
    std::string ranked_by;
    std::vector<std::size_t> ranked_panels;
    std::vector<float> ranked_values;
    bool summarised = false;            // a summary: `summary` holds the statistics; tensor.data is empty
                                        // except for the final step
    Summary summary;
};

// A position, head or layer the options named, as PyTorch indexes it (from 0). Its param's
// name ends in "_index"; the text view counts from 1, as the book's math does.
struct Index {
    std::vector<unsigned long long> at;  // one index, or a cell's row and column
    bool names_tokens = false;           // positions in Trace::tokens: the text view names them
    std::string tensor;                  // what PyTorch indexes with it ("inputs", "weights"), or empty
};

using ParamValue = std::variant<bool, unsigned long long, double, std::string, Index>;  // every count and seed is unsigned

class Explainer;  // lessons/explainer.hpp: writes out any cell of the trace's attention

struct Trace {
    std::string command;
    std::vector<std::string> tokens;
    bool batched = false;
    std::vector<std::pair<std::string, ParamValue>> params;  // in the order they were set
    std::vector<Step> steps;
    bool timed = false;  // timed or summarised: step times are part of the output
    std::string backend;  // how large matrix products ran (for a timed trace)
    // Timed (Recording::timing), when the steps' products counted at least limit_least_flop: the machine's
    // rates measured after the walk (ops/work.hpp's measure_machine), which set each step's
    // limit_seconds; 0 otherwise.
    double sgemm_flop_per_second = 0.0, copy_bytes_per_second = 0.0;
    // A model's layers, one each, as renderers mark them: "sliding window, W = 4",
    // "no RoPE", … (all empty where every layer is alike).
    std::vector<std::string> layer_kinds;
    // The walk's attention kept for writing out any cell after the walk (the explorer, the
    // page); null unless the recording asked for it. Copies of the trace share it.
    std::shared_ptr<const Explainer> explainer;

    void set_param(const std::string& name, ParamValue value);
};

// Checks a finished trace: every input was finite, so a step holding inf or NaN
// overflowed, unless the step says that is its point. Throws RuntimeError naming the
// first such step; returns the trace otherwise.
Trace check_finite(Trace trace);

// A summary: replaces every step's data (and row sums) by its Summary. Shapes stay; the
// last step (the command's result) keeps its data as well.
void summarise(Trace& trace);
// The same shared out: share_steps gives each step an owner among `parts` (the largest step
// first, each to the least loaded part); summarise(trace, owner, worker, workers) does the
// steps whose owner % workers is `worker`. Called by every worker at once, they summarise
// the whole trace between them, each step as summarise alone would.
std::vector<std::size_t> share_steps(const Trace& trace, std::size_t parts);
void summarise(Trace& trace, const std::vector<std::size_t>& owner, std::size_t worker, std::size_t workers);

}  // namespace attnwalk
