// --format torch: tensors as PyTorch prints them.
#pragma once

#include <string>

#include "attnwalk/trace.hpp"

namespace attnwalk::app {

// A tensor the way PyTorch 1.13 prints it (`repr(t)` of a float32 CPU tensor, default
// print options): "tensor([[0.2098, 0.2006, ...]])".
std::string torch_repr(const Tensor& tensor);

}  // namespace attnwalk::app
