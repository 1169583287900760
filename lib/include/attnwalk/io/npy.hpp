// NumPy's .npy format, for tensors too large to go through JSON text: read as an input
// file of embeddings and written for each step of a trace.
//
//   \x93NUMPY, version (1.0, 2.0 or 3.0), the header's length, the header — a Python dict
//   {'descr': '<f4', 'fortran_order': False, 'shape': (6, 3), } padded with spaces to a
//   multiple of 64 bytes and ended by '\n' — then the values, little-endian.
//
// Read: float32, float64 and float16 ('<f4', '<f8', '<f2'), C or Fortran order, every value
// finite in float32. Written: float32, or int64 for a tensor of whole numbers (token ids,
// counts), version 1.0, C order — what numpy.load reads.
#pragma once

#include <string>

#include "attnwalk/trace.hpp"

namespace attnwalk {

// Whether `bytes` starts as a .npy file does (its magic string).
bool is_npy(const std::string& bytes);

// The tensor of a .npy file's bytes; `source` names the file in errors. Throws InputError
// naming the file, the part (header, descr, shape, data) and what was expected.
Tensor parse_npy(const std::string& bytes, const std::string& source);

// The .npy bytes of `t`: float32 values, or int64 when it holds whole numbers.
std::string npy_bytes(const Tensor& t);

}  // namespace attnwalk
