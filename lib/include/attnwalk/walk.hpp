// The walks: one function per subcommand, each takes the input and options and returns
// the whole trace. This is the library's face for app/ (light: no xtensor here).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "attnwalk/embeddings.hpp"
#include "attnwalk/trace.hpp"

namespace attnwalk {

enum class Init { rand, randn, linear };
Init parse_init(const std::string& name);  // "rand" | "randn" | "linear"; throws UsageError
const char* init_name(Init init);

// Where the query/key/value projections come from. With neither a file nor a seed
// there are none: Q = K = V = X, as in the textbook's first section.
struct ProjectionOptions {
    std::optional<std::string> weights_file;
    std::optional<std::uint64_t> seed;
    std::optional<Init> init;  // default with a seed: linear
    std::size_t d_out = 2;
    bool qkv_bias = false;

    bool enabled() const { return weights_file || seed; }
};

struct WalkOptions {
    std::optional<std::string> query;  // 0-based index or token text
    std::optional<std::string> explain;  // "I,J": one cell written out (scores, softmax, context, causal)
    std::optional<double> scale;       // divide the scores by this (default 1, or √d_k with projections)
    ProjectionOptions projection;
    std::size_t batch = 1;             // stack the input this many times (textbook: 2)
    std::optional<std::size_t> context_length;  // error if T exceeds it

    // causal, dropout, mha
    bool causal = true;
    double dropout = 0.0;
    std::optional<std::uint64_t> dropout_seed;  // reseed right before the dropout draw
    bool eval = false;
    std::optional<std::size_t> ones;            // dropout on an N×N matrix of ones
    std::size_t heads = 2;
    bool wrapper = false;                       // mha: stacked heads instead of the fused form

    // Refuse work whose tensors would need more memory than this (bytes), before allocating.
    double max_memory = 4.0 * 1024 * 1024 * 1024;
    bool summary = false;  // --summary: statistics per step instead of tensors (big inputs)
    bool timing = false;   // --timing: step times are part of the output
};

// The memory a walk's tensors need, estimated from the shapes alone (bytes).
double estimate_memory(const std::string& command, std::size_t batch, std::size_t tokens, std::size_t d_in,
                       const WalkOptions& options);

Trace walk_scores(const Embeddings& input, const WalkOptions& options);
Trace walk_softmax(const Embeddings& input, const WalkOptions& options);
Trace walk_context(const Embeddings& input, const WalkOptions& options);
Trace walk_causal(const Embeddings& input, const WalkOptions& options);
Trace walk_dropout(const Embeddings& input, const WalkOptions& options);
Trace walk_mha(const Embeddings& input, const WalkOptions& options);

using WalkFn = Trace (*)(const Embeddings&, const WalkOptions&);

// One part of `attnwalk walkthrough`: a walk with the options that reproduce the
// textbook's numbers, and what it teaches.
struct Section {
    std::string id;           // scores, softmax, context, projections, causal, dropout, mha
    std::string title;
    std::string explanation;  // one paragraph
    std::string formula;      // the section's math in one line
    std::string args;         // the subcommand and options that rerun this section alone
    Trace trace;
};

// The whole chapter in order on one input. Only max_memory is read from
// `base`; every section sets its own options.
std::vector<Section> walk_through(const Embeddings& input, const WalkOptions& base);

// The seed the dropout draw uses when neither --seed nor --dropout-seed is given.
constexpr std::uint64_t default_dropout_seed = 123;
// The seed mha uses when neither --seed nor --weights is given (the textbook's).
constexpr std::uint64_t default_mha_seed = 123;

}  // namespace attnwalk
