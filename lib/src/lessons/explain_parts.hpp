// What the explanation engine's files share (lib/src/lessons/explain*.cpp): the rows and
// slices it reads, the written-out projections and rotations, a cell's names. Internal.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attnwalk/lessons/explain.hpp"

namespace attnwalk::explain_parts {

// Batch element 0, head h, row i of a (B,H,R,·) tensor.
std::vector<float> row_of(const Hyper& t, std::size_t h, std::size_t i);
// Columns [c0, c0 + n) of row i of a (B,T,·) tensor.
std::vector<float> slice_of(const Cube& t, std::size_t i, std::size_t c0, std::size_t n);
Tensor vector_tensor(std::vector<float> values);
std::string quoted(const std::string& token);
// A number for a note, as the lessons write numbers.
std::string num(double v);
// A number after an operator: a negative one in parentheses ("− (-0.1095)").
std::string operand(double v);
// √(mean(x²)) of n floats, in double: for a note.
double rms_of(const float* x, std::size_t n);
// A long sum shown by its first two terms and its last.
void elide(Expansion& e);
// a·b written out term by term (a long one elided), its result the forward's.
Expansion dot_of(const std::string& label, const std::vector<float>& a, const std::vector<float>& b, float result);
// v = x·W (+ b) into the n columns of W from col0 on, row by row of W (a long sum: its first
// two rows and its last); `result` is the forward's.
Expansion projection_expansion(const std::string& label, const std::vector<float>& x, const Linear& lin, std::size_t col0, std::size_t n,
                               std::vector<float> result);
// A cell's names: its tokens counted from 1 (I, J), the tokens themselves, where it is.
struct CellNames {
    std::string I, J, qi, kj, where;
};
CellNames names_of(const Trace& trace, const CellRef& cell, const LayerSource* L, std::size_t heads, const std::string& head_word = "head");
// The rows entering a model's layer, through its norm (explain_input_query, explain_input_key).
void explain_inputs(Recorder& rec, const CellRef& cell, const ExplainView& v, const CellNames& n);
// RoPE written out pair by pair: each rotated pair (i, its partner) as one sum of two
// vectors, x_i·[cos, sin] + x_partner·[−sin, cos] = [x′_i, x′_partner], so that both members
// are side by side; `plain` and `rotated` over the rotated features in the rotation's order,
// `t` the row of the tables. Many pairs: the first four and the last two (`left_out` says so).
// `weights_pairs`: the rotation's halves came de-interleaved from pairs (2i, 2i + 1) of the
// weights' order (latent attention's rope_interleave), which the labels name.
std::vector<Expansion> rotation_pairs(const std::string& v, const std::vector<float>& plain, const std::vector<float>& rotated, const Rope& rope,
                                      std::size_t t, std::string* left_out, bool weights_pairs = false);
// Where RoPE's frequencies θ come from: base^(−2i/d), and any rescaling (Llama 3's, linear, YaRN's).
std::string frequency_words(const Rope& rope, const std::optional<RopeParams>& params);

// Latent attention (explain_latent.cpp): the cell's latents, query, keys and score, down
// to explain_score; returns ω_IJ.
float explain_latent_score(Recorder& rec, const CellRef& cell, const ExplainView& v, const CellNames& n);
// Gated DeltaNet (explain_delta.cpp): the effective attention's cell, as the delta rule builds it.
void explain_delta_cell(Recorder& rec, const CellRef& cell, const ExplainView& v);

}  // namespace attnwalk::explain_parts
