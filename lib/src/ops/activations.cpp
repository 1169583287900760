#include "attnwalk/ops/activations.hpp"

#include <cmath>

namespace attnwalk {

Cube gelu_tanh(Cube x) {
    const float k = std::sqrt(2.0f / 3.14159265358979323846f);
    for (float& v : x) v = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
    return x;
}

}  // namespace attnwalk
