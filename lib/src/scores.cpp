#include "attnwalk/scores.hpp"

#include <xtensor/xview.hpp>

namespace attnwalk {

Cube attention_scores(const Cube& q, const Cube& k) {
    return matmul_nt_each(q, k);  // (B,T,T)
}

Mat query_scores(const Mat& q, const Cube& k) {
    Mat out({k.shape(0), k.shape(1)});  // (B,T)
    for (std::size_t b = 0; b < k.shape(0); ++b) {
        const Mat kb = xt::view(k, b);     // (T,d)
        const Vec qb = xt::view(q, b);     // (d)
        xt::view(out, b) = matvec(kb, qb); // (T)
    }
    return out;
}

}  // namespace attnwalk
