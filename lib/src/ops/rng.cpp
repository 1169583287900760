#include "attnwalk/ops/rng.hpp"

#include <cmath>
#include <cstring>

namespace attnwalk {

namespace {

constexpr double pi = 3.14159265358979323846;

// ---- Float math that PyTorch's AVX2 normal_fill uses ---------------------------------
// torch.randn on 16 or more contiguous floats transforms uniforms with single-precision
// Cephes polynomials (ATen's avx_mathfun.h, eight lanes at a time). To reproduce its
// bits we evaluate the same polynomials lane by lane, in the same operation order, in
// float. PyTorch's AVX2 kernels are compiled with -mfma and GCC contracts a multiply
// whose only use is an add into one fused multiply-add; the std::fma calls below sit
// exactly where that contraction happens (verified bit for bit against python3-torch,
// tests/test_rng.cpp). Every file is compiled with -ffp-contract=off (CMakeLists.txt) so that no other
// operation is fused.

// ATen declares its constants as double literals stored in float arrays.
constexpr float F(double v) { return static_cast<float>(v); }

float bits_to_float(std::uint32_t u) {
    float f;
    std::memcpy(&f, &u, sizeof f);
    return f;
}
std::uint32_t float_to_bits(float f) {
    std::uint32_t u;
    std::memcpy(&u, &f, sizeof u);
    return u;
}

// Natural logarithm for x > 0: exponent split, then a degree-8 polynomial in the
// mantissa around 1 (Cephes logf).
float cephes_logf(float x) {
    const float one = F(1.0);
    const bool invalid = !(x > F(0.0));
    const float min_norm = bits_to_float(0x00800000u);
    x = x > min_norm ? x : min_norm;
    const std::uint32_t bits = float_to_bits(x);
    const std::int32_t exponent = static_cast<std::int32_t>(bits >> 23) - 0x7f;
    x = bits_to_float((bits & ~0x7f800000u) | float_to_bits(F(0.5)));  // mantissa in [0.5, 1)
    float e = static_cast<float>(exponent);
    e = e + one;
    const bool below = x < F(0.707106781186547524);
    const float tmp = below ? x : F(0.0);
    x = x - one;
    e = e - (below ? one : F(0.0));
    x = x + tmp;
    const float z = x * x;
    float y = F(7.0376836292E-2);
    y = std::fma(y, x, F(-1.1514610310E-1));
    y = std::fma(y, x, F(1.1676998740E-1));
    y = std::fma(y, x, F(-1.2420140846E-1));
    y = std::fma(y, x, F(1.4249322787E-1));
    y = std::fma(y, x, F(-1.6668057665E-1));
    y = std::fma(y, x, F(2.0000714765E-1));
    y = std::fma(y, x, F(-2.4999993993E-1));
    y = std::fma(y, x, F(3.3333331174E-1));
    y = y * x;
    y = std::fma(y, z, e * F(-2.12194440e-4));
    y = std::fma(-z, F(0.5), y);
    x = std::fma(e, F(0.693359375), x + y);
    if (invalid) return bits_to_float(float_to_bits(x) | 0xffffffffu);  // NaN, as the or-mask
    return x;
}

// Sine and cosine together: reduce by π/4 with extended-precision constants, then the
// two Cephes polynomials, selected per octant.
void cephes_sincosf(float x, float& s, float& c) {
    std::uint32_t sign_sin = float_to_bits(x) & 0x80000000u;
    x = bits_to_float(float_to_bits(x) & 0x7fffffffu);
    float y = x * F(1.27323954473516);  // 4/π
    std::int32_t j = static_cast<std::int32_t>(y);  // truncation, like cvttps
    j = (j + 1) & ~1;
    y = static_cast<float>(j);
    const std::uint32_t swap_sign_sin = (static_cast<std::uint32_t>(j) & 4u) << 29;
    const bool poly_is_sin = (j & 2) == 0;
    x = std::fma(y, F(-0.78515625), x);
    x = std::fma(y, F(-2.4187564849853515625e-4), x);
    x = std::fma(y, F(-3.77489497744594108e-8), x);
    const std::uint32_t sign_cos = (~static_cast<std::uint32_t>(j - 2) & 4u) << 29;
    sign_sin ^= swap_sign_sin;

    const float z = x * x;
    float yc = F(2.443315711809948E-005);
    yc = std::fma(yc, z, F(-1.388731625493765E-003));
    yc = std::fma(yc, z, F(4.166664568298827E-002));
    yc = yc * z;
    yc = std::fma(yc, z, -(z * F(0.5)));
    yc = yc + F(1.0);

    float ys = F(-1.9515295891E-4);
    ys = std::fma(ys, z, F(8.3321608736E-3));
    ys = std::fma(ys, z, F(-1.6666654611E-1));
    ys = ys * z;
    ys = std::fma(ys, x, x);

    // The sine takes the sine polynomial in octants where poly_is_sin, else the cosine one;
    // the cosine takes the other. ATen adds the two masked halves, so +0 is added too
    // (which turns -0 into +0).
    const float sin_part = poly_is_sin ? ys : yc;
    const float cos_part = poly_is_sin ? yc : ys;
    s = bits_to_float(float_to_bits(sin_part + F(0.0)) ^ sign_sin);
    c = bits_to_float(float_to_bits(cos_part + F(0.0)) ^ sign_cos);
}

// Transforms 16 uniforms into 16 normals in place (PyTorch's normal_fill_16, AVX2 form).
void normal_fill_16(float* data) {
    const float two_pi = static_cast<float>(2.0 * pi);
    for (int j = 0; j < 8; ++j) {
        const float u1 = 1.0f - data[j];
        const float u2 = data[j + 8];
        const float radius = std::sqrt(-2.0f * cephes_logf(u1));
        const float theta = two_pi * u2;
        float sin_theta = 0.0f;
        float cos_theta = 0.0f;
        cephes_sincosf(theta, sin_theta, cos_theta);
        data[j] = radius * cos_theta;
        data[j + 8] = radius * sin_theta;
    }
}

}  // namespace

void Generator::manual_seed(std::uint64_t seed) {
    seed_ = seed;
    engine_.seed(static_cast<std::uint32_t>(seed & 0xffffffffu));
    next_normal_.reset();
}

std::uint32_t Generator::random() { return static_cast<std::uint32_t>(engine_()); }

std::uint64_t Generator::random64() {
    const std::uint64_t hi = random();
    const std::uint64_t lo = random();
    return (hi << 32) | lo;
}

float Generator::uniform_float() {
    return static_cast<float>(static_cast<double>(random() & ((1u << 24) - 1)) / double(1u << 24));
}

double Generator::uniform_double() {
    return static_cast<double>(random64() & ((std::uint64_t{1} << 53) - 1)) /
           static_cast<double>(std::uint64_t{1} << 53);
}

std::vector<float> Generator::rand(std::size_t n) {
    std::vector<float> out(n);
    for (auto& v : out) v = uniform_float();
    return out;
}

double Generator::normal_double() {
    if (next_normal_) {
        const double cached = *next_normal_;
        next_normal_.reset();
        return cached;
    }
    const double u1 = uniform_double();
    const double u2 = uniform_double();
    const double r = std::sqrt(-2.0 * std::log1p(-u2));
    const double theta = 2.0 * pi * u1;
    next_normal_ = r * std::sin(theta);
    return r * std::cos(theta);
}

std::vector<float> Generator::randn(std::size_t n) {
    std::vector<float> out(n);
    if (n < 16) {  // PyTorch's serial path: one double Box–Muller sample per element
        for (auto& v : out) v = static_cast<float>(normal_double());
        return out;
    }
    // Vectorised path: all uniforms first, then blocks of 16; a ragged tail redraws the
    // last 16 uniforms and transforms them again.
    for (auto& v : out) v = uniform_float();
    for (std::size_t i = 0; i + 16 <= n; i += 16) normal_fill_16(out.data() + i);
    if (n % 16 != 0) {
        float* tail = out.data() + n - 16;
        for (std::size_t i = 0; i < 16; ++i) tail[i] = uniform_float();
        normal_fill_16(tail);
    }
    return out;
}

std::vector<float> Generator::uniform(std::size_t n, double from, double to) {
    // ATen casts the bounds to float, takes (to - from) in float, then evaluates
    // x·(to − from) + from in double and rounds the result to float.
    const float from_f = static_cast<float>(from);
    const float to_f = static_cast<float>(to);
    const float range = to_f - from_f;
    std::vector<float> out(n);
    for (auto& v : out) {
        const double x = static_cast<double>(random() & ((1u << 24) - 1)) / double(1u << 24);
        v = static_cast<float>(x * static_cast<double>(range) + static_cast<double>(from_f));
    }
    return out;
}

std::vector<std::uint8_t> Generator::bernoulli(std::size_t n, double p) {
    std::vector<std::uint8_t> out(n);
    for (auto& v : out) v = uniform_double() < p ? 1 : 0;
    return out;
}

double linear_weight_bound(std::size_t fan_in) {
    // kaiming_uniform_(w, a=math.sqrt(5)): gain = sqrt(2 / (1 + a**2)),
    // std = gain / sqrt(fan_in), bound = sqrt(3) * std — in this order, in double.
    const double a = std::sqrt(5.0);
    const double gain = std::sqrt(2.0 / (1.0 + a * a));
    const double stdv = gain / std::sqrt(static_cast<double>(fan_in));
    return std::sqrt(3.0) * stdv;
}

Generator::LinearInit Generator::linear(std::size_t in_features, std::size_t out_features,
                                        bool bias) {
    LinearInit init;
    const double w_bound = linear_weight_bound(in_features);
    init.weight = uniform(in_features * out_features, -w_bound, w_bound);
    if (bias) {
        const double b_bound = 1.0 / std::sqrt(static_cast<double>(in_features));
        init.bias = uniform(out_features, -b_bound, b_bound);
    }
    return init;
}

}  // namespace attnwalk
