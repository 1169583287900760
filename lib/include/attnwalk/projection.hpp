// Trainable query/key/value projections: from a JSON file or drawn like PyTorch does.
//
// Weights are kept in the x·W layout (d_in × d_out), the textbook's nn.Parameter form.
// PyTorch's nn.Linear.weight is the transpose (d_out × d_in); draw_linear transposes.
#pragma once

#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "attnwalk/rng.hpp"
#include "attnwalk/tensor.hpp"
#include "attnwalk/walk.hpp"

namespace attnwalk {

struct Linear {
    Mat w;  // d_in×d_out, x·W layout
    Vec b;  // d_out, or empty for no bias
};

struct QKV {
    Linear query, key, value;
};

// nn.Linear(in, out, bias) initialisation, returned in x·W layout.
Linear draw_linear(Generator& gen, std::size_t in, std::size_t out, bool bias);
// W_query, W_key, W_value in that order, as the textbook's classes draw them.
QKV draw_qkv(Generator& gen, std::size_t d_in, std::size_t d_out, Init init, bool bias);

// x·W + b for every batch element: (B,T,d_in) -> (B,T,d_out)
Cube project(const Cube& x, const Linear& layer);

// Reads {"W_query", "W_key", "W_value", optional "b_query", "b_key", "b_value"} from an
// object at `path` (e.g. "$" or "$.heads[1]"). Throws InputError.
QKV read_qkv(const nlohmann::json& object, const std::string& file, const std::string& path, std::size_t d_in);

// Loads a --weights file holding one set of query/key/value matrices.
QKV load_qkv(const std::string& file, std::size_t d_in);

// The multi-head weights: the fused form (one QKV plus out_proj) or the wrapper (one QKV per head).
struct MultiHeadWeights {
    std::vector<QKV> heads;  // wrapper: one per head; fused: exactly one
    Linear out_proj;         // fused only
};
MultiHeadWeights load_multi_head(const std::string& file, std::size_t d_in, bool wrapper, std::size_t heads);
// The same from JSON text; `name` names it in errors.
MultiHeadWeights parse_multi_head(const std::string& text, const std::string& name, std::size_t d_in, bool wrapper,
                                  std::size_t heads);

}  // namespace attnwalk
