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
        case Axis::layer: return "layer";
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

void Summary::add(double value) {
    if (!std::isfinite(value)) {
        ++non_finite;
        return;
    }
    min = count ? std::min(min, value) : value;
    max = count ? std::max(max, value) : value;
    checksum += value;
    ++count;
    mean = checksum / static_cast<double>(count);
}

void Summary::add_row_sum(double sum) {
    row_sum_min = has_row_sums ? std::min(row_sum_min, sum) : sum;
    row_sum_max = has_row_sums ? std::max(row_sum_max, sum) : sum;
    has_row_sums = true;
}

void summarise(Trace& trace) {
    for (auto& step : trace.steps) {
        if (step.summarised) continue;
        for (float v : step.tensor.data) step.summary.add(v);
        for (float v : step.row_sum.data) step.summary.add_row_sum(v);
        if (&step != &trace.steps.back()) step.tensor.data = {};  // the final result keeps its numbers
        step.row_sum = Tensor{};
        step.expansion.clear();
        step.summarised = true;
    }
}

Trace check_finite(Trace trace) {
    for (const auto& step : trace.steps) {
        const bool bad = step.summarised ? step.summary.non_finite > 0 : !step.tensor.all_finite();
        if (!step.may_be_non_finite && bad)
            throw RuntimeError("step '" + step.id + "' (" + step.title +
                               ") turned finite input into inf or NaN: float32 overflows beyond ±3.4e38; "
                               "scale the embeddings or weights down");
    }
    return trace;
}

}  // namespace attnwalk
