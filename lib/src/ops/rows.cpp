// PyTorch's CPU float sum over a contiguous row (aten/src/ATen/native/cpu/SumKernel.cpp:
// row_sum, multi_row_sum, vectorized_inner_sum), in its order of additions. Checked bit for
// bit against torch 1.13 (tests/golden/torch_sum.json, test rows.sum_matches_torch).
#include <algorithm>
#include <cstddef>

#include "attnwalk/ops/rows.hpp"

namespace attnwalk {

namespace {

constexpr std::size_t ilp = 4;     // interleaved partial sums
constexpr std::size_t levels = 4;  // depth of the cascade

std::size_t ceil_log2(std::size_t x) {
    std::size_t bits = 0;
    while ((std::size_t{1} << bits) < x) ++bits;
    return bits;
}

// `size` groups of `ilp` elements of W lanes, data[(group·ilp + k)·W + lane]: the `ilp`
// partial sums, each W lanes, after the cascade.
template <std::size_t W>
void multi_row_sum(const float* data, std::size_t size, float (&out)[ilp][W]) {
    const std::size_t level_power = std::max<std::size_t>(4, ceil_log2(size) / levels);
    const std::size_t level_step = std::size_t{1} << level_power, level_mask = level_step - 1;
    float acc[levels][ilp][W] = {};
    std::size_t i = 0;
    while (i + level_step <= size) {
        for (std::size_t j = 0; j < level_step; ++j, ++i)
            for (std::size_t k = 0; k < ilp; ++k)
                for (std::size_t l = 0; l < W; ++l) acc[0][k][l] += data[(i * ilp + k) * W + l];
        for (std::size_t j = 1; j < levels; ++j) {
            for (std::size_t k = 0; k < ilp; ++k)
                for (std::size_t l = 0; l < W; ++l) {
                    acc[j][k][l] += acc[j - 1][k][l];
                    acc[j - 1][k][l] = 0.0f;
                }
            if ((i & (level_mask << (j * level_power))) != 0) break;
        }
    }
    for (; i < size; ++i)
        for (std::size_t k = 0; k < ilp; ++k)
            for (std::size_t l = 0; l < W; ++l) acc[0][k][l] += data[(i * ilp + k) * W + l];
    for (std::size_t j = 1; j < levels; ++j)
        for (std::size_t k = 0; k < ilp; ++k)
            for (std::size_t l = 0; l < W; ++l) acc[0][k][l] += acc[j][k][l];
    std::copy(&acc[0][0][0], &acc[0][0][0] + ilp * W, &out[0][0]);
}

}  // namespace

float sum_of(const float* row, std::size_t n) {
    constexpr std::size_t W = 8;  // floats in an AVX2 vector
    if (n < W) {  // scalar: 4 partial sums, the tail into the first, then the others
        float p[ilp][1];
        multi_row_sum<1>(row, n / ilp, p);
        for (std::size_t i = n / ilp * ilp; i < n; ++i) p[0][0] += row[i];
        for (std::size_t k = 1; k < ilp; ++k) p[0][0] += p[k][0];
        return p[0][0];
    }
    const std::size_t vectors = n / W;
    float p[ilp][W];
    multi_row_sum<W>(row, vectors / ilp, p);
    for (std::size_t v = vectors / ilp * ilp; v < vectors; ++v)
        for (std::size_t l = 0; l < W; ++l) p[0][l] += row[v * W + l];
    for (std::size_t k = 1; k < ilp; ++k)
        for (std::size_t l = 0; l < W; ++l) p[0][l] += p[k][l];
    float sum = 0.0f;
    for (std::size_t i = vectors * W; i < n; ++i) sum += row[i];
    for (std::size_t l = 0; l < W; ++l) sum += p[0][l];
    return sum;
}

}  // namespace attnwalk
