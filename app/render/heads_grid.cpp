// The model view's grid of heads, as text and as an SVG, and the SVG of any heatmap step
// (--svg): render_text.hpp's svg_of_weights.
#include <algorithm>
#include <optional>
#include <string>
#include <vector>

#include "../selection.hpp"
#include "attnwalk/errors.hpp"
#include "figure.hpp"
#include "heatmap.hpp"
#include "render_text.hpp"
#include "text.hpp"
#include "text_parts.hpp"

namespace attnwalk::app {

bool is_token_matrix(const Step& step) {
    const std::size_t rank = step.tensor.shape.size();
    return rank >= 2 && step.axes[rank - 1] == Axis::token && step.axes[rank - 2] == Axis::token;
}

bool is_heat_matrix(const Step& step) {
    const std::size_t rank = step.tensor.shape.size();
    return is_token_matrix(step) || (rank == 2 && step.axes[0] == Axis::layer && step.axes[1] == Axis::head && !step.tensor.data.empty());
}

namespace {

// The model view's heads in the order --sort ranked them (Step::ranked_panels), each with
// its ranking value; in layer, head order without --sort.
struct RankedHead {
    std::size_t layer, head;  // 0-based
    std::string value;        // "previous_token 0.4082", or empty
};

std::vector<RankedHead> grid_order(const Step& grid, int precision) {
    const std::size_t L = grid.tensor.shape[0], H = grid.tensor.shape[1];
    std::vector<RankedHead> order;
    if (grid.ranked_panels.size() == L * H && grid.ranked_values.size() == L * H) {
        for (std::size_t q = 0; q < L * H; ++q)
            order.push_back({grid.ranked_panels[q] / H, grid.ranked_panels[q] % H, grid.ranked_by + " " + value_text(grid.ranked_values[q], precision)});
        return order;
    }
    for (std::size_t l = 0; l < L; ++l)
        for (std::size_t h = 0; h < H; ++h) order.push_back({l, h, ""});
    return order;
}

}  // namespace

// The model view's grid (Step::heads_grid, layer × head × T × T): one small heatmap per
// head, side by side as the terminal allows, each cell one shade (rows and columns
// averaged in blocks when T is long).
void print_grid(const Step& step, const TextOptions& opt, std::ostream& out) {
    static const char* const shades[] = {" ", "░", "▒", "▓", "█"};
    const auto& s = step.tensor.shape;
    const std::size_t H = s[1], T = s[2], side = std::min<std::size_t>(T, 12);
    const std::size_t label = 6;  // "L11H3 " above each panel
    const std::size_t width = std::max(side, label - 1) + 2;
    const std::size_t per_row = std::max<std::size_t>(1, (opt.columns > 4 ? opt.columns - 4 : 1) / width);
    const auto cell = [&](std::size_t l, std::size_t h, std::size_t r, std::size_t c) {  // the block's mean, 0…1
        const std::size_t r0 = r * T / side, r1 = std::max(r0 + 1, (r + 1) * T / side), c0 = c * T / side,
                          c1 = std::max(c0 + 1, (c + 1) * T / side);
        double sum = 0.0;
        for (std::size_t i = r0; i < r1; ++i)
            for (std::size_t j = c0; j < c1; ++j) sum += step.tensor.data[((l * H + h) * T + i) * T + j];
        return sum / static_cast<double>((r1 - r0) * (c1 - c0));
    };
    out << "    heatmaps: weight 0 ' ' ░▒▓█ 1 (rows: queries, columns: keys" << (side < T ? "; block means" : "") << ")\n";
    const std::vector<RankedHead> heads = grid_order(step, opt.precision);  // layer and head named from 1
    if (!heads.empty() && !heads[0].value.empty())
        out << "    ranked by " << heads[0].value.substr(0, heads[0].value.find(' ')) << ", highest first\n";
    for (std::size_t first = 0; first < heads.size(); first += per_row) {
        const std::size_t n = std::min(per_row, heads.size() - first);
        std::string line = "    ";
        for (std::size_t k = 0; k < n; ++k) {
            std::string name = "L" + std::to_string(heads[first + k].layer + 1) + "H" + std::to_string(heads[first + k].head + 1);
            line += name + std::string(width > name.size() ? width - name.size() : 1, ' ');
        }
        out << line << '\n';
        for (std::size_t r = 0; r < side; ++r) {
            line = "    ";
            for (std::size_t k = 0; k < n; ++k) {
                const std::size_t l = heads[first + k].layer, h = heads[first + k].head;
                for (std::size_t c = 0; c < side; ++c) {
                    const double v = cell(l, h, r, c);
                    line += shades[std::isfinite(v) ? static_cast<std::size_t>(std::lround(std::clamp(v, 0.0, 1.0) * 4.0)) : 0];
                }
                line += std::string(width - side, ' ');
            }
            out << line << '\n';
        }
    }
}

std::string svg_of_weights(const Trace& trace, const TextOptions& opt, const std::string& step_id) {
    const Step* chosen = nullptr;
    if (!step_id.empty()) {
        for (const Step& s : trace.steps)
            if (s.id == step_id) chosen = &s;
        if (!chosen || !is_heat_matrix(*chosen)) {  // name the steps it could draw, as --steps does
            std::string drawable;
            for (const Step& s : trace.steps)
                if (is_heat_matrix(s) && drawable.find(" " + s.id + ",") == std::string::npos) drawable += " " + s.id + ",";
            if (!drawable.empty()) drawable.pop_back();
            throw UsageError("--svg-step " + step_id + ": " +
                             (chosen ? "not a token×token or layer×head step, nothing to draw as a heatmap" : "this trace has no such step" + unrecorded_hint(trace, step_id)) +
                             (drawable.empty() ? " (the steps kept hold none)" : " (the steps it can draw:" + drawable + ")"));
        }
    } else if (const std::optional<std::size_t> opening = opening_step(trace)) {
        chosen = &trace.steps[*opening];
    }
    if (!chosen)
        throw UsageError(std::string("--svg draws a token×token step, and this run has none (") +
                         (trace.command == "kvcache" ? "kvcache attends with one new query per step; mha --svg draws the whole matrix"
                          : trace.command == "params" ? "params counts, it computes no attention"
                          : std::any_of(trace.params.begin(), trace.params.end(), [](const auto& p) { return p.first == "query_index"; })
                              ? "--query keeps one row only"
                              : "the steps kept hold none: see --steps") +
                         ")");
    const Step& step = *chosen;
    if (step.tensor.data.size() != step.tensor.size())
        throw UsageError("--svg draws the " + step.id + " step, and --summary keeps only its statistics: leave out one of the two");
    const std::size_t rank = step.tensor.shape.size();
    const std::size_t inner = step.tensor.shape[rank - 1] * step.tensor.shape[rank - 2];
    // Panels: every head (and layer) of batch element 0.
    std::size_t panels = 1;
    for (std::size_t a = 0; a + 2 < rank; ++a)
        if (step.axes[a] != Axis::batch) panels *= step.tensor.shape[a];
    std::string what;  // "12 layers × 12 heads × 40 × 40 tokens"
    for (std::size_t a = 0; a + 2 < rank; ++a)
        if (step.axes[a] != Axis::batch) what += std::to_string(step.tensor.shape[a]) + " " + axis_name(step.axes[a]) + "s × ";
    check_svg_cells(static_cast<double>(panels) * static_cast<double>(inner),
                    what + std::to_string(step.tensor.shape[rank - 2]) + " × " + std::to_string(step.tensor.shape[rank - 1]) + " tokens",
                    "use fewer tokens or heads");
    const Figure figure = figure_of(trace, step, opt.color_scale, PanelScale::together);
    // The model view's grid: every layer × head, in the order --sort ranked them.
    const std::vector<RankedHead> ranked = step.heads_grid ? grid_order(step, opt.precision) : std::vector<RankedHead>{};
    std::vector<std::size_t> order = figure.first_batch();
    std::vector<std::string> titles;
    for (std::size_t q = 0; q < order.size(); ++q) {
        if (!ranked.empty()) order[q] = ranked[q].layer * step.tensor.shape[1] + ranked[q].head;
        std::string title = order.size() > 1 ? figure.panel_names[order[q]] : "";
        if (!ranked.empty() && !ranked[q].value.empty()) title += " · " + ranked[q].value;
        titles.push_back(title);
    }
    const std::string batch = trace.batched ? ", batch 1" : "";  // batches count from 1, as the text names them
    return heatmap_svg(figure, order, titles, "attnwalk " + trace.command + ": " + step.title + " (" + step.id + batch + ")", opt.precision);
}

}  // namespace attnwalk::app
