// One linear layer, y = x·W + b, for every weight of every model: matrices the library
// owns (drawn, or read from JSON) and numbers that lie elsewhere (a memory-mapped
// checkpoint: float32, or bfloat16/half converted a block at a time as they are used; a
// GGUF's quantized weights, made as float32 when a product needs them), in either layout,
// never copied whole.
//
//   x (B,T,d_in) · W (d_in,d_out) + b (d_out) -> (B,T,d_out)
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "attnwalk/ops/made_floats.hpp"
#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

struct Linear {
    Mat w;  // d_in×d_out, x·W layout (nn.Linear.weight is the transpose)
    Vec b;  // d_out, or empty for no bias
    // Instead of w: floats that live elsewhere, never copied. Row r of the d_in×d_out
    // matrix starts at ext + r·ext_ld, or, `ext_transposed`, the floats are its d_out×d_in
    // transpose (nn.Linear's layout) with rows ext_ld apart. `owner` keeps them valid.
    const float* ext = nullptr;
    // Or 16-bit values in the same layout: bfloat16 (ext16_bf16) or IEEE half.
    const std::uint16_t* ext16 = nullptr;
    bool ext16_bf16 = true;
    // Or float32 numbers made when they are used (a GGUF's quantized weights, dequantized:
    // made_floats.hpp), the layout's first number at made_first.
    std::shared_ptr<const MadeFloats> made;
    std::size_t made_first = 0;
    std::size_t ext_in = 0, ext_out = 0, ext_ld = 0;
    bool ext_transposed = false;
    std::shared_ptr<const void> owner;

    bool external() const { return ext || ext16 || made; }
    std::size_t in() const { return external() ? ext_in : w.shape(0); }
    std::size_t out() const { return external() ? ext_out : w.shape(1); }
    Mat matrix() const;  // w, or the external numbers as a d_in×d_out float32 matrix
    float at(std::size_t r, std::size_t c) const;  // entry (r, c) of the d_in×d_out matrix, as float32
    // The d_in weights of output j into `dst` as float32: only for nn.Linear's layout,
    // where they are a row (a tied embedding table's row for token j).
    void copy_out_row(std::size_t j, float* dst) const;
};

// A layer the library owns: w (d_in×d_out, x·W layout) and b (d_out, or empty).
Linear owned_linear(Mat w, Vec b = {});
// Floats at `data` as a layer of d_in×d_out (x·W layout) or, `transposed`, d_out×d_in.
Linear external_linear(const float* data, std::size_t d_in, std::size_t d_out, std::size_t ld, bool transposed,
                       std::shared_ptr<const void> owner);
// The same for 16-bit values: bfloat16 (`bf16`) or IEEE half.
Linear external_linear16(const std::uint16_t* data, bool bf16, std::size_t d_in, std::size_t d_out, std::size_t ld, bool transposed,
                         std::shared_ptr<const void> owner);

// The same for floats made when they are used, the layout's first number at `first`.
Linear made_linear(std::shared_ptr<const MadeFloats> made, std::size_t first, std::size_t d_in, std::size_t d_out, std::size_t ld, bool transposed);

// Outputs first … first+count−1 of an external layer (its weights and bias), in place:
// Q, K and V of one fused qkv layer.
Linear output_columns(const Linear& layer, std::size_t first, std::size_t count);

// x·W + b for every batch element: (B,T,d_in) -> (B,T,d_out)
Cube project(const Cube& x, const Linear& layer);
// The same for `rows` rows of x (d_in floats each, contiguous) into rows of y `ldy` apart.
void project_into(const float* x, std::size_t rows, const Linear& layer, float* y, std::size_t ldy);
// One row x (d_in floats) through a layer in nn.Linear's layout, as the product W·x:
// (1,d_out). How a tied head makes the logits of one position.
Mat project_row(const Linear& layer, const float* x);

}  // namespace attnwalk
