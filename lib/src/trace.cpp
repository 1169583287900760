#include "attnwalk/trace.hpp"

#include <algorithm>
#include <cmath>
#include <functional>

#include "attnwalk/errors.hpp"
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

bool Tensor::all_finite() const {
    return std::all_of(data.begin(), data.end(), [](float v) { return std::isfinite(v); });
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

Trace check_finite(Trace trace) {
    for (const auto& step : trace.steps) {
        if (!step.may_be_non_finite && !step.tensor.all_finite())
            throw RuntimeError("step '" + step.id + "' (" + step.title +
                               ") turned finite input into inf or NaN: float32 overflows beyond ±3.4e38; "
                               "scale the embeddings or weights down");
    }
    return trace;
}

}  // namespace attnwalk
