#include "attnwalk/context.hpp"

#include <xtensor/xview.hpp>

namespace attnwalk {

Mat query_context(const Mat& weights, const Cube& values) {
    Mat out({values.shape(0), values.shape(2)});  // (B,d)
    for (std::size_t b = 0; b < values.shape(0); ++b) {
        const Mat vt = xt::transpose(xt::view(values, b));  // (d,T)
        const Vec wb = xt::view(weights, b);                 // (T)
        xt::view(out, b) = matvec(vt, wb);                   // (d)
    }
    return out;
}

}  // namespace attnwalk
