#include "attnwalk/ops/softmax.hpp"

namespace attnwalk {

template <std::size_t N>
xt::xtensor<float, N> normalise_by_sum(xt::xtensor<float, N> s) {
    for_each_row(s, [](float* row, std::size_t n) {
        const float sum = sum_of(row, n);
        for (std::size_t j = 0; j < n; ++j) row[j] /= sum;
    });
    return s;
}

template <std::size_t N>
xt::xtensor<float, N> softmax_naive(xt::xtensor<float, N> s) {
    for_each_row(s, [](float* row, std::size_t n) {
        for (std::size_t j = 0; j < n; ++j) row[j] = std::exp(row[j]);
        const float sum = sum_of(row, n);
        for (std::size_t j = 0; j < n; ++j) row[j] /= sum;
    });
    return s;
}

template <std::size_t N>
xt::xtensor<float, N> softmax(xt::xtensor<float, N> s) {
    for_each_row(s, [](float* row, std::size_t n) { softmax_row(row, n); });
    return s;
}

template <std::size_t N>
xt::xtensor<float, N> shift_by_row_max(xt::xtensor<float, N> s) {
    for_each_row(s, [](float* row, std::size_t n) {
        const float max = max_of(row, n);
        for (std::size_t j = 0; j < n; ++j) row[j] -= max;
    });
    return s;
}

template xt::xtensor<float, 1> normalise_by_sum(xt::xtensor<float, 1>);
template xt::xtensor<float, 2> normalise_by_sum(xt::xtensor<float, 2>);
template xt::xtensor<float, 3> normalise_by_sum(xt::xtensor<float, 3>);
template xt::xtensor<float, 4> normalise_by_sum(xt::xtensor<float, 4>);
template xt::xtensor<float, 1> softmax_naive(xt::xtensor<float, 1>);
template xt::xtensor<float, 2> softmax_naive(xt::xtensor<float, 2>);
template xt::xtensor<float, 3> softmax_naive(xt::xtensor<float, 3>);
template xt::xtensor<float, 4> softmax_naive(xt::xtensor<float, 4>);
template xt::xtensor<float, 1> softmax(xt::xtensor<float, 1>);
template xt::xtensor<float, 2> softmax(xt::xtensor<float, 2>);
template xt::xtensor<float, 3> softmax(xt::xtensor<float, 3>);
template xt::xtensor<float, 4> softmax(xt::xtensor<float, 4>);
template xt::xtensor<float, 1> shift_by_row_max(xt::xtensor<float, 1>);
template xt::xtensor<float, 2> shift_by_row_max(xt::xtensor<float, 2>);
template xt::xtensor<float, 3> shift_by_row_max(xt::xtensor<float, 3>);
template xt::xtensor<float, 4> shift_by_row_max(xt::xtensor<float, 4>);

}  // namespace attnwalk
