// Weights that exist as float32 only while they are used: a GGUF file's quantized tensors,
// dequantized when a product first needs them and kept while a budget allows. A model larger
// than the budget in float32 then runs layer by layer: each layer's matrices are made as the
// forward reaches them, and when the budget is full the ones made most recently are given
// back (the first layers stay held for the next pass). The numbers made are the same
// whenever they are made, so a product's result does not depend on what the cache held.
//
// This header is light (no xtensor): linear.hpp and safetensors.hpp include it.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>

namespace attnwalk {

class MadeCache;

class MadeFloats {
public:
    // Writes the tensor's `count` floats.
    using Make = std::function<void(float* out)>;
    // Writes the `length` floats of stored row `row` (rows of `length` one after the other):
    // a row alone (an embedding's, for one token) without making the whole tensor. Null
    // when a row cannot be made alone (a tensor transposed once dequantized).
    using MakeRow = std::function<void(std::size_t row, float* out)>;

    MadeFloats(std::size_t count, std::size_t length, Make make, MakeRow make_row, std::shared_ptr<MadeCache> cache);
    ~MadeFloats();
    MadeFloats(const MadeFloats&) = delete;
    MadeFloats& operator=(const MadeFloats&) = delete;

    std::size_t count() const { return count_; }
    const MadeCache& cache() const { return *cache_; }
    // All the floats: the cache's, or made now and kept while the budget allows. Valid, and
    // never given back, while the returned pointer (or a copy of it) lives.
    std::shared_ptr<const float> get() const;
    // Floats first … first+n−1 into `out`: from the cache when it holds them; else, when they
    // are one whole row that can be made alone, that row made (not kept); else get() (a few
    // numbers read one by one make the tensor once, not a row each).
    void read(std::size_t first, std::size_t n, float* out) const;

private:
    friend class MadeCache;
    std::size_t count_, length_;
    Make make_;
    MakeRow make_row_;
    std::shared_ptr<MadeCache> cache_;
    mutable std::shared_ptr<float> held_;  // guarded by the cache's lock
    mutable unsigned long long last_used_ = 0;
};

// The budget the made floats of one model share.
class MadeCache {
public:
    struct Stats {
        std::size_t made = 0;        // tensors made (a tensor made again after it was given back counts again)
        std::size_t given_back = 0;  // tensors given back to make room
        double held = 0, peak = 0;   // bytes held now, and at most
    };
    // `capacity`: the bytes the made floats may hold at once (infinity: each made once and kept).
    explicit MadeCache(double capacity);
    double capacity() const { return capacity_; }
    Stats stats() const;

private:
    friend class MadeFloats;
    struct State;
    double capacity_;
    std::shared_ptr<State> state_;
};

}  // namespace attnwalk
