// The shape rules of an attention layer, and what a computation costs, in one light
// header (no xtensor): io/weights.hpp, the forward and app/ all read them from here.
#pragma once

#include <cstddef>
#include <optional>
#include <string>

namespace attnwalk {

// How the heads share the projections.
//   fused:   one W_query/W_key/W_value of d_in×d_out, split into H heads of d_out/H
//            columns (the textbook's MultiHeadAttention); with out_proj.
//   stacked: one W_query/W_key/W_value of d_in×d_out per head, their outputs
//            concatenated (MultiHeadAttentionWrapper); never an out_proj.
enum class HeadLayout { fused, stacked };

// The one rule for splitting a width into heads: H ≥ 1 divides the width (d_h = width/H),
// and G key/value heads (0 = H) divide H. What is wrong, in the math's words, or nothing.
// Without a width (not known yet: a weights file gives it), only H and G are checked.
std::optional<std::string> head_shape_problem(std::optional<std::size_t> width, std::size_t heads, std::size_t kv_heads = 0);
// The same, thrown as UsageError.
void check_head_shape(std::size_t width, std::size_t heads, std::size_t kv_heads = 0);

// What a computation will cost, from the shapes alone (counted in double: no overflow),
// so that a command can refuse it before allocating or computing anything.
struct Cost {
    double bytes = 0.0;  // the tensors kept
    double work = 0.0;   // multiply-adds, each exponential counted as 16
};

// How many heads×rows×T tensors forward_cost counts as held at once (scores, masks,
// weights, their copies in a walk's trace); a walk that keeps more says how many.
constexpr double forward_square_tensors = 16.0;

}  // namespace attnwalk
