#include "attnwalk/ops/activations.hpp"

#include <stdexcept>

#include "attnwalk/ops/blas.hpp"
#include "kernels.hpp"

namespace attnwalk {

namespace {

// x ← x·σ(z) (· times), the vector kernel on every core for a large tensor.
void x_sigmoid(Cube& x, const Cube* times, fast::Sigmoid kind) {
    const std::size_t n = x.size();
    float* v = x.data();
    const float* t = times ? times->data() : nullptr;
    if (n < (std::size_t{1} << 15)) return fast::x_sigmoid(v, t, n, kind);
    on_every_core([&](std::size_t worker, std::size_t workers) {
        const WorkerShare s = worker_share(n, worker, workers, 64);
        if (s.end > s.begin) fast::x_sigmoid(v + s.begin, t ? t + s.begin : nullptr, s.end - s.begin, kind);
    });
}

}  // namespace

Cube gelu_tanh(Cube x) {
    x_sigmoid(x, nullptr, fast::Sigmoid::gelu_tanh);
    return x;
}

Cube silu(Cube x) {
    x_sigmoid(x, nullptr, fast::Sigmoid::silu);
    return x;
}

bool gated(MlpKind kind) { return kind != MlpKind::gelu_tanh; }

Cube mlp_hidden(const Cube& x, MlpKind kind, const Linear& up, const Linear* gate) {
    if (!gated(kind)) return gelu_tanh(project(x, up));
    if (!gate) throw std::logic_error("a gated MLP without its gate");
    Cube g = project(x, *gate);
    const Cube u = project(x, up);
    x_sigmoid(g, &u, kind == MlpKind::swiglu ? fast::Sigmoid::silu : fast::Sigmoid::gelu_tanh);  // act(gate) ⊙ up
    return g;
}

}  // namespace attnwalk
