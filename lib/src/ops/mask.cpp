#include "attnwalk/ops/mask.hpp"

namespace attnwalk {

Mat causal_mask(std::size_t T) {
    Mat m({T, T});
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) m(i, j) = j <= i ? 1.0f : 0.0f;
    return m;
}

}  // namespace attnwalk
