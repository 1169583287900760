#include "attnwalk/ops/scores.hpp"

namespace attnwalk {

template <std::size_t N>
xt::xtensor<float, N> scale_scores(const xt::xtensor<float, N>& scores, float scale) {
    xt::xtensor<float, N> out = scores / scale;  // a division, as PyTorch's `scores / d_k**0.5`
    return out;
}

template xt::xtensor<float, 1> scale_scores(const xt::xtensor<float, 1>&, float);
template xt::xtensor<float, 2> scale_scores(const xt::xtensor<float, 2>&, float);
template xt::xtensor<float, 3> scale_scores(const xt::xtensor<float, 3>&, float);
template xt::xtensor<float, 4> scale_scores(const xt::xtensor<float, 4>&, float);

}  // namespace attnwalk
