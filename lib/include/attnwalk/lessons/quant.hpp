// The quant lesson's call: one block of quantized weights taken apart (lessons/quant.cpp).
// Its own header, included by its command alone (app/commands/quant.cpp) and its tests.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "attnwalk/trace.hpp"

namespace attnwalk {

// A block of ggml's Q8_0, Q4_0 or Q4_K: its bytes as stored, and where they come from.
struct QuantBlock {
    std::string type;                  // "Q8_0", "Q4_0", "Q4_K"
    std::vector<std::uint8_t> bytes;   // one block
    std::string source;                // "FILE, tensor NAME, block N of M" or the built-in row
    std::vector<float> original;       // the built-in row's weights before quantization (empty for a file's)
};
// Block `block` (counted from 0) of tensor `tensor` of a GGUF file (InputError naming the
// file and the tensor: no such tensor, a type the lesson does not take apart, no such block).
QuantBlock quant_block_of_file(const std::string& path, const std::string& tensor, std::size_t block, double memory_budget);
// A built-in row of 32 weights quantized to Q8_0 or Q4_0 by ggml's reference quantizers.
QuantBlock quant_block_builtin(const std::string& type);
Trace walk_quant(const QuantBlock& block);

}  // namespace attnwalk
