// What a Gated DeltaNet layer (ops/gated_deltanet.hpp) keeps between decoding calls, in
// place of a KvCache: a state of fixed size and a few convolution inputs. Its own header so
// that the decoder's cache (model/decoder.hpp: DecoderCache) holds it without the layer's ops.
#pragma once

#include <cstddef>

#include "attnwalk/ops/tensor.hpp"

namespace attnwalk {

// What a decoding layer keeps between calls: its last K − 1 convolution inputs and its state.
struct DeltaNetCache {
    Mat inputs;   // (K − 1, conv_dim), oldest first; empty before the first call
    Hyper state;  // (1, H_v, d_k, d_v)
    std::size_t seen = 0;
    double bytes(std::size_t bytes_per_value) const {
        return static_cast<double>((inputs.size() + state.size()) * bytes_per_value);
    }
};

}  // namespace attnwalk
