// The one place that knows PyTorch's CPU random number generator.
//
// Generator reproduces torch.manual_seed(seed) followed by the draws PyTorch makes on
// CPU for float32 tensors: torch.rand, torch.randn (both code paths), Tensor.uniform_
// (what nn.Linear's initialisation uses) and bernoulli_ (what nn.Dropout uses).
// Values are bit-identical to Debian's python3-torch 1.13 on x86-64 with AVX2.
// Facts and sources: docs/rng.md.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <random>
#include <vector>

namespace attnwalk {

class Generator {
public:
    explicit Generator(std::uint64_t seed) { manual_seed(seed); }

    // torch.manual_seed: a 32-bit mt19937 seeded with the low 32 bits; clears the
    // cached normal sample.
    void manual_seed(std::uint64_t seed);
    // The seed of the last manual_seed (torch.initial_seed()).
    std::uint64_t initial_seed() const { return seed_; }

    std::uint32_t random();    // one mt19937 output
    std::uint64_t random64();  // two outputs, the first is the high word

    float uniform_float();    // [0,1) from 24 bits
    double uniform_double();  // [0,1) from 53 bits

    // torch.rand(n): n float uniforms in order.
    std::vector<float> rand(std::size_t n);
    // torch.randn(n) for a contiguous float tensor of n elements.
    std::vector<float> randn(std::size_t n);
    // torch.empty(n).uniform_(from, to) on float.
    std::vector<float> uniform(std::size_t n, double from, double to);
    // torch.empty(n).bernoulli_(p): 1 where a double uniform is below p, else 0.
    std::vector<std::uint8_t> bernoulli(std::size_t n, double p);

    // nn.Linear(in_features, out_features) initialisation: the weight
    // (out_features × in_features, PyTorch's layout), then the bias if requested.
    struct LinearInit {
        std::vector<float> weight;  // out×in, row-major
        std::vector<float> bias;    // out, empty without bias
    };
    LinearInit linear(std::size_t in_features, std::size_t out_features, bool bias);

private:
    double normal_double();  // one standard normal sample, serial Box–Muller with a cache

    std::uint64_t seed_ = 0;
    std::mt19937 engine_;
    std::optional<double> next_normal_;
};

// The bound nn.Linear uses for its weight: kaiming_uniform_(a=√5) evaluated exactly
// as torch/nn/init.py does in double precision.
double linear_weight_bound(std::size_t fan_in);

}  // namespace attnwalk
