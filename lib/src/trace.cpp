#include "attnwalk/trace.hpp"

#include <algorithm>
#include <cmath>
#include <functional>
#include <stdexcept>

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
        case Axis::rank: return "rank";
    }
    return "feature";
}

std::size_t Tensor::size() const {
    return std::accumulate(shape.begin(), shape.end(), std::size_t{1}, std::multiplies<>());
}

Tensor integer_tensor(std::vector<unsigned long long> values, std::vector<std::size_t> shape) {
    Tensor t;
    t.shape = std::move(shape);
    if (t.size() != values.size()) throw std::logic_error("integer_tensor: the shape does not hold the values");
    t.data.reserve(values.size());
    for (unsigned long long v : values) t.data.push_back(static_cast<float>(v));
    t.integers = std::move(values);
    return t;
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

namespace {

void summarise_step(Trace& trace, Step& step) {
    if (step.summarised) return;
    step.summary.add_all(step.tensor.data.data(), step.tensor.data.size());
    for (float v : step.row_sum.data) step.summary.add_row_sum(v);
    if (&step != &trace.steps.back()) {  // the final result keeps its numbers
        step.tensor.data = {};
        step.tensor.integers = {};
    }
    step.row_sum = Tensor{};
    step.expansion.clear();
    step.summarised = true;
}

}  // namespace

void summarise(Trace& trace) {
    for (auto& step : trace.steps) summarise_step(trace, step);
}

std::vector<std::size_t> share_steps(const Trace& trace, std::size_t parts) {
    std::vector<std::size_t> order(trace.steps.size()), owner(trace.steps.size(), 0);
    std::iota(order.begin(), order.end(), std::size_t{0});
    const auto size = [&](std::size_t i) { return trace.steps[i].tensor.data.size(); };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return size(a) > size(b); });
    std::vector<std::size_t> load(std::max<std::size_t>(parts, 1), 0);
    for (std::size_t i : order) {
        owner[i] = static_cast<std::size_t>(std::min_element(load.begin(), load.end()) - load.begin());
        load[owner[i]] += size(i) + 1;
    }
    return owner;
}

void summarise(Trace& trace, const std::vector<std::size_t>& owner, std::size_t worker, std::size_t workers) {
    for (std::size_t i = 0; i < trace.steps.size(); ++i)
        if (owner.at(i) % workers == worker) summarise_step(trace, trace.steps[i]);
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
