// The bridge between the trace's tensors and xtensor (trace_tensors.hpp).
#include "attnwalk/trace_tensors.hpp"

#include <algorithm>

namespace attnwalk {

Tensor scalar_trace(float value) {
    Tensor out;
    out.data = {value};
    return out;
}

Cube cube_from_trace(const Tensor& t) {
    Cube out({t.shape.at(0), t.shape.at(1), t.shape.at(2)});
    std::copy(t.data.begin(), t.data.end(), out.begin());
    return out;
}

Mat mat_from_trace(const Tensor& t) {
    Mat out({t.shape.at(0), t.shape.at(1)});
    std::copy(t.data.begin(), t.data.end(), out.begin());
    return out;
}

}  // namespace attnwalk
