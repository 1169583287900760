// A loaded model: what it says of itself, its decoder weights, and the mapped file they
// may point into. Heavy (xtensor): for model/ and the lessons, not for app/.
#pragma once

#include <memory>

#include "attnwalk/model/decoder.hpp"
#include "attnwalk/model/model.hpp"

namespace attnwalk {

class SafeTensors;

struct LoadedModel {
    ModelInfo info;
    DecoderWeights weights;
    std::shared_ptr<const SafeTensors> file;  // keeps the weights read in place valid
};

}  // namespace attnwalk
