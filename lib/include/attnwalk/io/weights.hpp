// The trainable projections of an attention layer, as one value: drawn from a seeded
// generator the way PyTorch builds the textbook's classes, or read from a JSON file.
// This header is light (no xtensor): app/ holds weights as an opaque handle; the
// matrices themselves are in attention.hpp.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnwalk/ops/rng.hpp"
#include "attnwalk/ops/shapes.hpp"

namespace attnwalk {

struct AttentionWeights;  // attention.hpp
// Null: no projections, Q = K = V = X (the chapter's first sections).
using Weights = std::shared_ptr<const AttentionWeights>;

// How seeded matrices are drawn: torch.rand, torch.randn, or nn.Linear's initialisation.
enum class Init { rand, randn, linear };
const char* init_name(Init init);
std::optional<Init> init_from_name(const std::string& name);  // "rand" | "randn" | "linear"


struct WeightsShape {
    std::size_t d_in = 0;
    std::size_t d_out = 0;  // per head for `stacked`, in all for `fused` (drawn weights; a file says its own)
    std::size_t heads = 1;
    HeadLayout layout = HeadLayout::fused;
    bool out_proj = false;  // fused only: Linear(d_out, d_out) with bias after the heads
    std::size_t kv_heads = 0;  // fused only: G key/value heads of d_out/H columns (GQA); 0 = H
    bool combined = false;     // fused only: one Linear(d_in, 3·d_out) drawn for Q|K|V (MHACombinedQKV)
    bool gate = false;         // fused only: an output gate W_gate (d_in×d_out), drawn right after W_query
                               // (the textbook's GatedMultiHeadAttention); read as "W_gate" (+ "b_gate")
    std::vector<float> sinks = {};  // learned sinks (gpt-oss), given, never drawn: one logit per head, or one for every head
};

struct Linear;  // ops/linear.hpp
// nn.Linear(in, out, bias)'s initialisation from `gen`, in x·W layout (in×out).
Linear draw_linear(Generator& gen, std::size_t in, std::size_t out, bool bias);

// Draws in PyTorch's construction order (query, key, value, head by head for `stacked`,
// then out_proj; `combined`: the one qkv layer's weight, then its bias, then out_proj). `bias` gives the query/key/value layers a bias (Init::linear only).
// Records the seed, init, d_out and bias as the weights' origin.
Weights draw_weights(Generator& gen, const WeightsShape& shape, Init init, bool bias);

// Reads a weights file ("-" = stdin): {"W_query", "W_key", "W_value", "b_*"?} and, with
// out_proj, {"out_proj": {"weight", "bias"}}; for `stacked`, {"heads": [...]} with
// shape.heads entries. shape.d_out is taken from the file. Throws InputError.
Weights load_weights(const std::string& file, const WeightsShape& shape);
// The same from JSON text; `name` names it in errors.
Weights parse_weights(const std::string& text, const std::string& name, const WeightsShape& shape);

// The width of the concatenated heads' output (d_out, or H·d_out for `stacked`).
std::size_t output_width(const AttentionWeights& weights);

}  // namespace attnwalk
