// Recording steps into a trace. Internally every tensor carries a leading batch axis
// (B = 1 for a single sequence); the recorder drops it when the input was not a batch,
// so that the trace shows the shapes the user gave.
#pragma once

#include <chrono>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include "attnwalk/lessons/catalogue.hpp"
#include "attnwalk/ops/rows.hpp"
#include "attnwalk/ops/tensor.hpp"
#include "attnwalk/ops/work.hpp"
#include "attnwalk/trace_tensors.hpp"
#include "attnwalk/trace.hpp"

namespace attnwalk {

class Recorder {
public:
    explicit Recorder(Trace& trace) : trace_(trace), last_(Clock::now()), last_work_(work_so_far()) {}

    // A batched tensor (leading B), its axes given without the batch axis.
    template <std::size_t N>
    Step& add(std::string id, std::string title, std::string formula, const xt::xtensor<float, N>& t,
              std::vector<Axis> axes) {
        if (summarising_) return add_summarised(std::move(id), std::move(title), std::move(formula), t, std::move(axes));
        return push(std::move(id), std::move(title), std::move(formula), per_batch(to_trace(t)),
                    with_batch(std::move(axes)));
    }
    // Same, with the sums of the last axis attached (to show that rows sum to 1).
    template <std::size_t N>
    Step& add_with_row_sums(std::string id, std::string title, std::string formula,
                            const xt::xtensor<float, N>& t, std::vector<Axis> axes) {
        if (summarising_) return add_summarised(std::move(id), std::move(title), std::move(formula), t, std::move(axes), true);
        Step& step = add(std::move(id), std::move(title), std::move(formula), t, std::move(axes));
        step.row_sum = per_batch(to_trace(row_sums(t)));
        return step;
    }
    // The step add (with `row_sums`: add_with_row_sums) then summarise would make, without
    // copying the tensor: for a summary, where a T×T tensor of every head would otherwise
    // be copied into the trace only to be summed.
    template <std::size_t N>
    Step& add_summarised(std::string id, std::string title, std::string formula, const xt::xtensor<float, N>& t,
                         std::vector<Axis> axes, bool with_row_sums = false) {
        Summary summary;
        summary.add_all(t.data(), t.size());
        if (with_row_sums)
            for (float v : row_sums(t)) summary.add_row_sum(v);
        return add_summary(std::move(id), std::move(title), std::move(formula), {t.shape().begin() + 1, t.shape().end()}, t.shape(0),
                           std::move(axes), summary);
    }

    // A tensor without a batch axis (a mask, a weight matrix, a scalar).
    Step& add_plain(std::string id, std::string title, std::string formula, Tensor t, std::vector<Axis> axes) {
        return push(std::move(id), std::move(title), std::move(formula), std::move(t), std::move(axes));
    }

    // A step known only by its statistics (the blocked path keeps no tensor): the shape
    // without the batch axis, which is added when the input was a batch and `batched`.
    Step& add_summary(std::string id, std::string title, std::string formula, std::vector<std::size_t> shape,
                      std::size_t batch, std::vector<Axis> axes, const Summary& summary, bool batched = true) {
        Tensor t;
        t.shape = std::move(shape);
        if (batched && trace_.batched) {
            t.shape.insert(t.shape.begin(), batch);
            axes.insert(axes.begin(), Axis::batch);
        }
        Step& step = push(std::move(id), std::move(title), std::move(formula), std::move(t), std::move(axes));
        step.summary = summary;
        step.summarised = true;
        return step;
    }

    // The token×token steps recorded from now on are masked so (nullopt: from now on not).
    void mask_from_here(std::optional<CellMask> mask) { mask_ = mask; }

    // The clock of the next step, and its count of work, start now (after work that belongs
    // to no step).
    void restart_clock() {
        last_ = Clock::now();
        last_work_ = work_so_far();
    }

    Tensor per_batch(Tensor t) const {
        if (!trace_.batched) t.shape.erase(t.shape.begin());
        return t;
    }
    Trace& trace() { return trace_; }
    // From here on (`on`) add and add_with_row_sums keep a step as add_summarised does: for
    // a summary, where each tensor would be copied into the trace only to be summed at the
    // end. Not for the step that ends a trace, which keeps its numbers.
    void summarise_from_here(bool on) { summarising_ = on; }
    bool summarising() const { return summarising_; }

private:
    std::vector<Axis> with_batch(std::vector<Axis> axes) const {
        if (trace_.batched) axes.insert(axes.begin(), Axis::batch);
        return axes;
    }
    Step& push(std::string id, std::string title, std::string formula, Tensor t, std::vector<Axis> axes) {
        Step step;
        step.id = std::move(id);
        step.title = std::move(title);
        step.formula = std::move(formula);
        step.tensor = std::move(t);
        step.axes = std::move(axes);
        const std::size_t rank = step.axes.size();
        if (mask_ && rank >= 2 && step.axes[rank - 1] == Axis::token && step.axes[rank - 2] == Axis::token) step.mask = mask_;
        const auto now = Clock::now();  // the time since the previous step: this step's work
        step.seconds = std::chrono::duration<double>(now - last_).count();
        last_ = now;
        const Work work = work_so_far();  // the products' work since the previous step
        step.flop = work.flop - last_work_.flop;
        step.bytes = work.bytes - last_work_.bytes;
        last_work_ = work;
        trace_.steps.push_back(std::move(step));
        return trace_.steps.back();
    }

    using Clock = std::chrono::steady_clock;
    Trace& trace_;
    Clock::time_point last_;
    Work last_work_;
    std::optional<CellMask> mask_;
    bool summarising_ = false;
};

}  // namespace attnwalk
