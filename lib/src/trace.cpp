#include "attnwalk/trace.hpp"

#include <functional>
#include <numeric>

namespace attnwalk {

const char* axis_name(Axis axis) {
    switch (axis) {
        case Axis::batch: return "batch";
        case Axis::head: return "head";
        case Axis::token: return "token";
        case Axis::feature: return "feature";
    }
    return "feature";
}

std::size_t Tensor::size() const {
    return std::accumulate(shape.begin(), shape.end(), std::size_t{1}, std::multiplies<>());
}

void Trace::set_param(const std::string& name, ParamValue value) {
    for (auto& [key, existing] : params) {
        if (key == name) {
            existing = std::move(value);
            return;
        }
    }
    params.emplace_back(name, std::move(value));
}

}  // namespace attnwalk
