// A step as a figure (figure.hpp).
#include "figure.hpp"

#include <algorithm>
#include <array>
#include <cmath>

#include "heatmap.hpp"

namespace attnwalk::app {

namespace {

// Five colours evenly spaced on 0…1, linearly interpolated between them.
Rgb interpolate(const std::array<Rgb, 5>& stops, double t) {
    t = std::clamp(t, 0.0, 1.0) * 4.0;
    const std::size_t i = std::min<std::size_t>(static_cast<std::size_t>(t), 3);
    const double f = t - static_cast<double>(i);
    auto mix = [f](int a, int b) { return static_cast<int>(std::lround(a + (b - a) * f)); };
    return {mix(stops[i].r, stops[i + 1].r), mix(stops[i].g, stops[i + 1].g), mix(stops[i].b, stops[i + 1].b)};
}

}  // namespace

Rgb heat_rgb(double t) {
    // viridis at five points
    static const std::array<Rgb, 5> stops = {{{68, 1, 84}, {59, 82, 139}, {33, 145, 140}, {94, 201, 98}, {253, 231, 37}}};
    return interpolate(stops, std::isfinite(t) ? t : 0.0);
}

Rgb diverging_rgb(double t) {
    // ColorBrewer's RdBu ends and a near-white middle: blue below zero, red above
    static const std::array<Rgb, 5> stops = {{{33, 102, 172}, {146, 197, 222}, {247, 247, 247}, {244, 165, 130}, {178, 24, 43}}};
    return interpolate(stops, std::isfinite(t) ? t : 0.5);
}

int xterm256(Rgb c) {
    return 16 + 36 * static_cast<int>(std::lround(c.r / 51.0)) + 6 * static_cast<int>(std::lround(c.g / 51.0)) +
           static_cast<int>(std::lround(c.b / 51.0));
}

std::string axis_label(const Trace& trace, Axis axis, std::size_t i) {
    switch (axis) {
        case Axis::token: return i < trace.tokens.size() ? trace.tokens[i] : std::to_string(i + 1);
        case Axis::batch: return "batch " + std::to_string(i + 1);
        case Axis::head: return "head " + std::to_string(i + 1);  // everything a person reads counts from 1
        case Axis::feature: return "d" + std::to_string(i + 1);  // d1 … d_C, as the notes count features
        case Axis::layer: return "layer " + std::to_string(i + 1);
        case Axis::rank: return std::to_string(i + 1) + ".";
    }
    return std::to_string(i);
}

std::string label_at(const Trace& trace, const Step& step, std::size_t a, std::size_t i) {
    const std::size_t rank = step.axes.size();
    if (a + 1 == rank && i < step.labels.size()) return step.labels[i];
    if (step.axes[a] == Axis::token) i += a + 1 == rank ? step.first_key : a + 2 == rank ? step.first_row : 0;
    if (step.axes[a] == Axis::layer) i += step.first_layer;
    return axis_label(trace, step.axes[a], i);
}

bool drawable(const Step& step) {
    const std::size_t r = step.tensor.shape.size();
    return step.kind == StepKind::result && r >= 2 && r == step.axes.size() && !step.tensor.data.empty() &&
           step.tensor.data.size() == step.tensor.size();
}

float Figure::value(std::size_t p, std::size_t r, std::size_t c) const { return step->tensor.data[offsets[p] + r * cols + c]; }

bool Figure::hidden(std::size_t p, std::size_t r, std::size_t c) const {
    const float v = value(p, r, c);
    return (!masked.empty() && masked[r * cols + c]) || (std::isinf(v) && v < 0);
}

bool Figure::any_shown(std::size_t p) const {
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c)
            if (std::isfinite(value(p, r, c)) && !hidden(p, r, c)) return true;
    return false;
}

double Figure::at(std::size_t p, std::size_t r0, std::size_t kr, float v) const {
    if (scales[p] == ColorScale::row) {  // each row on 0 … its max (a block: its rows' largest)
        float top = 0.0f;
        for (std::size_t r = r0; r < std::min(rows, r0 + kr); ++r) top = std::max(top, row_top[p][r]);
        return top > 0.0f ? std::clamp(static_cast<double>(v) / top, 0.0, 1.0) : 1.0;
    }
    return hi[p] > lo[p] ? (static_cast<double>(v) - lo[p]) / (static_cast<double>(hi[p]) - lo[p]) : 1.0;
}

std::optional<CellRef> Figure::cell(const Trace& trace, std::size_t p, std::size_t r, std::size_t c) const {
    if (!attention) return std::nullopt;
    return cell_of(trace, *step, p, r, c);  // the figure's panels are the step's, batches included
}

std::vector<std::size_t> Figure::first_batch() const {
    std::vector<std::size_t> out;
    for (std::size_t p = 0; p < panels; ++p)
        if (panel_batch[p] == 0) out.push_back(p);
    return out;
}

namespace {

const char* axis_word(Axis a, bool row, bool square) {
    if (square) return row ? "query" : "key";
    switch (a) {
        case Axis::token: return row ? "token" : "key";
        case Axis::feature: return "feature";
        case Axis::head: return "head";
        case Axis::layer: return "layer";
        case Axis::rank: return "rank";
        case Axis::batch: return "batch";
    }
    return "";
}

// The shown layer of a model's trace (its layer_index param), or none.
std::optional<std::size_t> shown_layer(const Trace& trace) {
    for (const auto& [name, value] : trace.params)
        if (name == "layer_index")
            if (const Index* at = std::get_if<Index>(&value); at && !at->at.empty()) return static_cast<std::size_t>(at->at[0]);
    return std::nullopt;
}

struct Range {
    float min = INFINITY, max = -INFINITY;
    bool any() const { return min <= max; }
    void add(float v) {
        min = std::min(min, v);
        max = std::max(max, v);
    }
};

}  // namespace

Figure figure_of(const Trace& trace, std::size_t index, ColorScale asked, PanelScale together) {
    Figure f;
    const Step& s = trace.steps.at(index);
    f.step = &s;
    f.index = index;
    const std::size_t rank = s.tensor.shape.size();
    f.rows = s.tensor.shape[rank - 2];
    f.cols = s.tensor.shape[rank - 1];
    const bool square = s.axes[rank - 1] == Axis::token && s.axes[rank - 2] == Axis::token;
    f.row_axis = s.row_axis.empty() ? axis_word(s.axes[rank - 2], true, square) : s.row_axis;  // the step's own names (a circuit table)
    f.col_axis = s.col_axis.empty() ? axis_word(s.axes[rank - 1], false, square) : s.col_axis;
    for (std::size_t r = 0; r < f.rows; ++r) f.row_labels.push_back(label_at(trace, s, rank - 2, r));
    for (std::size_t c = 0; c < f.cols; ++c) f.col_labels.push_back(label_at(trace, s, rank - 1, c));
    // one query's row per head is a cell of the attention unless its keys name themselves (a cache that kept some tokens:
    // their positions are not first_key + j)
    f.attention = (square && s.row_axis.empty() && s.col_axis.empty()) || (s.query && s.axes[rank - 2] == Axis::head && s.axes[rank - 1] == Axis::token && s.labels.empty());
    f.token_rows = !square && s.axes[rank - 2] == Axis::token;
    f.weights = !s.row_sum.data.empty() || s.heads_grid;
    // the panels: every index of the leading axes
    const std::size_t inner = f.rows * f.cols;
    std::size_t all = 1;
    for (std::size_t a = 0; a + 2 < rank; ++a) all *= s.tensor.shape[a];
    const std::optional<std::size_t> layer = shown_layer(trace);
    f.panels = 0;
    for (std::size_t q = 0; q < all; ++q) {
        std::string name;
        std::size_t head = 0, lay = layer.value_or(0), rest = q;
        bool first_batch = true;  // batch element 0 (panel_batch: 0, or 1 for any other)
        std::vector<std::string> parts(rank - 2);
        for (std::size_t a = rank - 2; a-- > 0;) {
            const std::size_t n = s.tensor.shape[a], at = rest % n;
            rest /= n;
            if (s.axes[a] == Axis::batch) first_batch = first_batch && at == 0;
            else parts[a] = label_at(trace, s, a, at);
            if (s.axes[a] == Axis::head) head = at;
            if (s.axes[a] == Axis::layer) lay = at + s.first_layer;
        }
        for (const std::string& p : parts)
            if (!p.empty()) name += (name.empty() ? "" : ", ") + p;
        f.offsets.push_back(q * inner);
        f.panel_names.push_back(name);
        f.panel_batch.push_back(first_batch ? 0 : 1);
        f.panel_head.push_back(head);
        f.panel_layer.push_back(lay);
        f.panel_marks.push_back(lay < trace.layer_kinds.size() && (layer || std::find(s.axes.begin(), s.axes.end(), Axis::layer) != s.axes.end())
                                    ? trace.layer_kinds[lay]
                                    : "");
        ++f.panels;
    }
    // the mask, from the step's rule at its first row and key (nothing is recomputed)
    if (s.mask) {
        f.masked.assign(inner, 0);
        for (std::size_t i = 0; i < f.rows; ++i)
            for (std::size_t j = 0; j < f.cols; ++j) f.masked[i * f.cols + j] = s.mask->masks(i + s.first_row, j + s.first_key) ? 1 : 0;
    }
    // the colour scale: the panels' shown values, together or each alone
    std::vector<Range> ranges(f.panels);
    Range both;
    for (std::size_t p = 0; p < f.panels; ++p)
        for (std::size_t r = 0; r < f.rows; ++r)
            for (std::size_t c = 0; c < f.cols; ++c) {
                const float v = f.value(p, r, c);
                if (std::isfinite(v) && (f.masked.empty() || !f.masked[r * f.cols + c])) {
                    ranges[p].add(v);
                    both.add(v);
                }
            }
    // weights drawn as weights only when every one is in 0…1 (deltanet's effective matrix has row sums and negative entries)
    const bool weights = f.weights && !(both.any() && (both.min < 0.0f || both.max > 1.0f));
    for (std::size_t p = 0; p < f.panels; ++p) {
        const Range& basis = together == PanelScale::together ? both : ranges[p];
        const ColorScale kind = asked == ColorScale::automatic ? automatic_scale(weights, std::max(f.rows, f.cols), basis.any(), basis.min, basis.max) : asked;
        f.scales.push_back(kind);
        Range b = basis;
        if (kind == ColorScale::each) b = ranges[p];
        if (kind == ColorScale::unit || kind == ColorScale::row) b = {0.0f, 1.0f};
        if (kind == ColorScale::symmetric) {
            const float m = std::max(std::fabs(basis.min), std::fabs(basis.max));
            b = {-m, m};
        }
        f.lo.push_back(b.min);
        f.hi.push_back(b.max);
        std::vector<float> tops(f.rows, 0.0f);
        if (kind == ColorScale::row)
            for (std::size_t r = 0; r < f.rows; ++r)
                for (std::size_t c = 0; c < f.cols; ++c) {
                    const float v = f.value(p, r, c);
                    if (std::isfinite(v) && (f.masked.empty() || !f.masked[r * f.cols + c])) tops[r] = std::max(tops[r], v);
                }
        f.row_top.push_back(std::move(tops));
    }
    return f;
}

Figure figure_of(const Trace& trace, const Step& step, ColorScale asked, PanelScale panels) {
    return figure_of(trace, static_cast<std::size_t>(&step - trace.steps.data()), asked, panels);
}

std::optional<std::size_t> opening_step(const Trace& trace) {
    const auto square = [](const Step& s) {
        const std::size_t rank = s.tensor.shape.size();
        return rank >= 2 && s.axes[rank - 1] == Axis::token && s.axes[rank - 2] == Axis::token;
    };
    for (std::size_t i = 0; i < trace.steps.size(); ++i)
        if (trace.steps[i].heads_grid && square(trace.steps[i])) return i;
    for (std::size_t i = trace.steps.size(); i-- > 0;)  // the lesson's final weights, as it declares them
        if (trace.steps[i].opens && square(trace.steps[i])) return i;
    for (std::size_t i = trace.steps.size(); i-- > 0;)
        if (square(trace.steps[i])) return i;
    return std::nullopt;
}

Block average(const Figure& f, std::size_t p, std::size_t r0, std::size_t c0, std::size_t kr, std::size_t kc) {
    double sum = 0.0;
    std::size_t n = 0;
    for (std::size_t r = r0; r < std::min(f.rows, r0 + kr); ++r)
        for (std::size_t c = c0; c < std::min(f.cols, c0 + kc); ++c) {
            const float v = f.value(p, r, c);
            if (std::isnan(v)) return {Block::invalid, 0.0f};
            if (std::isfinite(v) && !f.hidden(p, r, c)) {
                sum += v;
                ++n;
            }
        }
    if (n == 0) return {Block::masked, 0.0f};
    return {Block::value, static_cast<float>(sum / static_cast<double>(n))};
}

std::vector<PathEntry> cell_path(const Trace& trace, const CellRef& cell) {
    std::vector<PathEntry> out;
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        const Step& s = trace.steps[i];
        if (!drawable(s)) continue;
        const std::size_t rank = s.tensor.shape.size(), rows = s.tensor.shape[rank - 2], cols = s.tensor.shape[rank - 1];
        std::size_t panels = 1;
        for (std::size_t a = 0; a + 2 < rank; ++a) panels *= s.tensor.shape[a];
        // where this step would hold the cell: its rows and columns are queries and keys
        // from first_row / first_key (or one query's row per head)
        const bool square = s.axes[rank - 1] == Axis::token && s.axes[rank - 2] == Axis::token;
        const bool one_query = s.query && s.axes[rank - 2] == Axis::head && s.axes[rank - 1] == Axis::token;
        if (!square && !one_query) continue;
        if (cell.key < s.first_key || cell.key - s.first_key >= cols) continue;
        const std::size_t col = cell.key - s.first_key;
        for (std::size_t p = 0; p < panels; ++p) {
            std::size_t row = 0;
            if (square) {
                if (cell.query < s.first_row || cell.query - s.first_row >= rows) continue;
                row = cell.query - s.first_row;
            } else {
                if (*s.query != cell.query || cell.head >= rows) continue;
                row = cell.head;
            }
            const std::optional<CellRef> here = cell_of(trace, s, p, row, col);
            if (here && *here == cell) out.push_back({i, p, row, col, s.tensor.data[(p * rows + row) * cols + col]});
        }
    }
    return out;
}

}  // namespace attnwalk::app
