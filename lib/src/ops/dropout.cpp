#include "attnwalk/ops/dropout.hpp"

namespace attnwalk {

template <std::size_t N>
DropoutResult<N> dropout(const xt::xtensor<float, N>& x, double p, Generator& gen) {
    DropoutResult<N> r{xt::xtensor<float, N>(x.shape()), 1.0f, x};
    if (p == 0.0) {
        r.keep.fill(1.0f);
        return r;
    }
    const auto keep = gen.bernoulli(x.size(), 1.0 - p);
    // noise = bernoulli(1 − p) / (1 − p) in float, then x · noise
    r.scale = 1.0f / static_cast<float>(1.0 - p);
    for (std::size_t i = 0; i < x.size(); ++i) {
        r.keep.data()[i] = keep[i] ? 1.0f : 0.0f;
        r.output.data()[i] = x.data()[i] * (r.keep.data()[i] * r.scale);
    }
    return r;
}

template DropoutResult<1> dropout(const xt::xtensor<float, 1>&, double, Generator&);
template DropoutResult<2> dropout(const xt::xtensor<float, 2>&, double, Generator&);
template DropoutResult<3> dropout(const xt::xtensor<float, 3>&, double, Generator&);
template DropoutResult<4> dropout(const xt::xtensor<float, 4>&, double, Generator&);

}  // namespace attnwalk
