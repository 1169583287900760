#include "attnwalk/ops/tensor.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#if defined(__linux__)
#include <sys/mman.h>
#endif

#include "attnwalk/ops/blas.hpp"

namespace attnwalk {

void advise_huge_pages(void* p, std::size_t bytes) {
#if defined(__linux__) && defined(MADV_HUGEPAGE)
    constexpr std::uintptr_t huge = huge_page_bytes;
    const auto begin = (reinterpret_cast<std::uintptr_t>(p) + huge - 1) & ~(huge - 1);
    const auto end = (reinterpret_cast<std::uintptr_t>(p) + bytes) & ~(huge - 1);
    if (end > begin) ::madvise(reinterpret_cast<void*>(begin), end - begin, MADV_HUGEPAGE);
#else
    (void)p;
    (void)bytes;
#endif
}

float half_to_float(std::uint16_t h) {
    const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
    const std::uint32_t exp = (h >> 10) & 0x1Fu, mant = h & 0x3FFu;
    float out;
    if (exp == 0) {  // zero or subnormal: mant · 2^−24
        out = std::ldexp(static_cast<float>(mant), -24);
        return sign ? -out : out;
    }
    std::uint32_t bits;
    if (exp == 31) bits = sign | 0x7F800000u | (mant << 13);  // inf, NaN
    else bits = sign | ((exp + 112) << 23) | (mant << 13);
    std::memcpy(&out, &bits, sizeof out);
    return out;
}

float bfloat16_to_float(std::uint16_t b) {
    const std::uint32_t bits = static_cast<std::uint32_t>(b) << 16;
    float out;
    std::memcpy(&out, &bits, sizeof out);
    return out;
}


// (B,m,k)·(k,n): one product with B·m rows, since every batch element uses the same matrix.
Cube matmul_each(const Cube& a, const Mat& b) {
    Cube out({a.shape(0), a.shape(1), b.shape(1)});
    sgemm(false, false, a.shape(0) * a.shape(1), b.shape(1), a.shape(2), 1.0f, a.data(), a.shape(2), b.data(),
          b.shape(1), 0.0f, out.data(), b.shape(1));
    return out;
}

}  // namespace attnwalk
