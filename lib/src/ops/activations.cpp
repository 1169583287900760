#include "attnwalk/ops/activations.hpp"

#include <cmath>
#include <stdexcept>

namespace attnwalk {

Cube gelu_tanh(Cube x) {
    const float k = std::sqrt(2.0f / 3.14159265358979323846f);
    for (float& v : x) v = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
    return x;
}

Cube mlp_hidden(const Cube& x, MlpKind kind, const Linear& up) {
    switch (kind) {
        case MlpKind::gelu_tanh: return gelu_tanh(project(x, up));
    }
    throw std::logic_error("unknown MLP kind");
}

}  // namespace attnwalk
