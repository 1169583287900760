#include "attnwalk/ops/activations.hpp"

#include <cmath>
#include <stdexcept>

namespace attnwalk {

Cube gelu_tanh(Cube x) {
    const float k = std::sqrt(2.0f / 3.14159265358979323846f);
    for (float& v : x) v = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
    return x;
}

Cube silu(Cube x) {
    for (float& v : x) v = v / (1.0f + std::exp(-v));
    return x;
}

bool gated(MlpKind kind) { return kind != MlpKind::gelu_tanh; }

Cube mlp_hidden(const Cube& x, MlpKind kind, const Linear& up, const Linear* gate) {
    if (!gated(kind)) return gelu_tanh(project(x, up));
    if (!gate) throw std::logic_error("a gated MLP without its gate");
    Cube g = kind == MlpKind::swiglu ? silu(project(x, *gate)) : gelu_tanh(project(x, *gate));
    const Cube u = project(x, up);
    for (std::size_t i = 0; i < g.size(); ++i) g.data()[i] *= u.data()[i];
    return g;
}

}  // namespace attnwalk
