// The text view: every step, labelled with tokens, aligned, N decimals.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>
#include <sstream>
#include <string>
#include <variant>
#include <vector>

#include "attnwalk/errors.hpp"
#include "figure.hpp"
#include "heatmap.hpp"
#include "render_text.hpp"
#include "render_torch.hpp"
#include "text.hpp"
#include "text_parts.hpp"

namespace attnwalk::app {

namespace {

// Element i of a tensor as text: a whole number as it is (an id, a count), else `precision` decimals.
std::string cell(const Tensor& t, std::size_t i, int precision) {
    if (i < t.words.size()) return t.words[i];
    return t.is_integer_at(i) ? std::to_string(t.shown_integer_at(i)) : value_text(t.data[i], precision);
}

void print_note(const std::string& label, const std::string& note, const TextOptions& opt, std::ostream& out) {
    if (!note.empty()) out << wrap(note, opt.columns, "    " + label + ": ", "      ");
}

std::string label(const Trace& trace, Axis axis, std::size_t i) { return axis_label(trace, axis, i); }


struct Table {
    std::vector<std::string> header;            // first cell is the corner
    std::vector<std::vector<std::string>> rows;  // first cell is the row label
    std::size_t gap = 2;                         // spaces between columns

    std::vector<std::size_t> widths() const {
        std::vector<std::size_t> w(header.size(), 0);
        auto fit = [&](const std::vector<std::string>& r) {
            for (std::size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], width(r[c]));
        };
        fit(header);
        for (const auto& r : rows) fit(r);
        return w;
    }
    // The printed width with this indent.
    std::size_t total(const std::string& indent) const {
        std::size_t sum = width(indent);
        for (std::size_t w : widths()) sum += w + gap;
        return sum - gap;
    }

    void print(std::ostream& out, const std::string& indent) const {
        const std::vector<std::size_t> w = widths();
        const std::string space(gap, ' ');
        auto line = [&](const std::vector<std::string>& r) {
            std::string s = indent + pad_right(r[0], w[0]);
            for (std::size_t c = 1; c < r.size(); ++c) s += space + pad_left(r[c], w[c]);
            while (!s.empty() && s.back() == ' ') s.pop_back();
            out << s << '\n';
        };
        line(header);
        for (const auto& r : rows) line(r);
    }
};

// A table made narrower for the terminal, one way at a time until it fits: column labels
// abbreviated to their numbers' width (at least 5: "<|be…"), row labels to 10 columns,
// then one space between columns. `columns` [first, last) are the labelled ones.
void narrow(Table& t, std::size_t first, std::size_t last, const std::string& indent, std::size_t columns) {
    for (int way = 0; way < 3 && t.total(indent) > columns; ++way) {
        if (way == 0)
            for (std::size_t c = first; c < last && c < t.header.size(); ++c) {
                std::size_t numbers = 0;
                for (const auto& r : t.rows) numbers = std::max(numbers, width(r[c]));
                t.header[c] = abbreviate(t.header[c], std::max<std::size_t>(numbers, 5));
            }
        if (way == 1)
            for (auto& r : t.rows) r[0] = abbreviate(r[0], 10);
        if (way == 2) t.gap = 1;
    }
}

// One 2-D slice (or a 1-D tensor as a single row) starting at `offset`.
// `slice`: the 2-D slice's name ("head 2"), or empty; it stands in the table's corner, above
// the row labels, when it is no wider than they are, else on a line of its own above.
void print_matrix(const Trace& trace, const Step& step, std::size_t offset, std::size_t sum_offset, const std::string& slice,
                  const TextOptions& opt, std::ostream& out) {
    const auto& shape = step.tensor.shape;
    const std::size_t rank = shape.size();
    const std::size_t cols = shape[rank - 1];
    const std::size_t rows = rank >= 2 ? shape[rank - 2] : 1;
    const bool sums = !step.row_sum.data.empty();
    const std::string indent = "    ";
    std::size_t label_width = 0;
    for (std::size_t r : shown(rows, opt))
        if (r != gap && rank >= 2) label_width = std::max(label_width, width(label_at(trace, step, rank - 2, r)));
    const bool corner = !slice.empty() && width(slice) <= label_width;
    if (!slice.empty() && !corner) out << "  " << slice << ":\n";
    const auto table = [&](const std::vector<std::size_t>& col_idx) {
        Table t;
        t.header.push_back(corner ? slice : "");
        for (std::size_t c : col_idx) t.header.push_back(c == gap ? "…" : label_at(trace, step, rank - 1, c));
        if (sums) {
            t.header.push_back("|");
            t.header.push_back("row sum");
        }
        for (std::size_t r : shown(rows, opt)) {
            std::vector<std::string> row{r == gap ? "⋮" : rank >= 2 ? label_at(trace, step, rank - 2, r) : ""};
            for (std::size_t c : col_idx)
                row.push_back(r == gap ? (c == gap ? "⋱" : "⋮") : c == gap ? "…" : cell(step.tensor, offset + r * cols + c, opt.precision));
            if (sums) {
                row.push_back("|");
                row.push_back(r == gap ? "⋮" : value_text(step.row_sum.data[sum_offset + r], opt.precision));
            }
            t.rows.push_back(std::move(row));
        }
        if (!opt.full && step.axes[rank - 1] == Axis::token) narrow(t, 1, 1 + col_idx.size(), indent, opt.columns);  // keys, not features
        return t;
    };
    // The columns PyTorch's print would show, narrowed to the terminal's width where they are
    // tokens (keys); then fewer around the gap until the table fits (not with --full).
    std::vector<std::size_t> idx = shown(cols, opt);
    Table t = table(idx);
    bool cut = false;  // columns left out for the width
    for (std::size_t edge = std::min<std::size_t>(cols / 2, edge_items + 5); !opt.full && edge >= 1 && t.total(indent) > opt.columns; --edge) {
        if (2 * edge + 1 > cols) continue;
        idx.clear();
        for (std::size_t c = 0; c < edge; ++c) idx.push_back(c);
        idx.push_back(gap);
        for (std::size_t c = cols - edge; c < cols; ++c) idx.push_back(c);
        t = table(idx);
        cut = true;
    }
    t.print(out, indent);
    // Token columns left out are counted, and how to see them said.
    if (step.axes[rank - 1] == Axis::token && std::find(idx.begin(), idx.end(), gap) != idx.end()) {
        const std::size_t hidden = cols - (idx.size() - 1);
        const bool keys = rank >= 2 && step.axes[rank - 2] == Axis::token;
        out << wrap("(" + std::to_string(hidden) + " of " + std::to_string(cols) + (keys ? " keys" : " tokens") + " left out" +
                        (cut ? " to fit " + std::to_string(opt.columns) + " columns" : std::string()) + "; --full shows every one)",
                    opt.columns, indent, indent + "  ");
    }
}

// The name of 2-D slice s of a tensor by its leading indices: "batch 0, head 1".
std::string slice_name(const Trace& trace, const Step& step, std::size_t s) {
    const auto& shape = step.tensor.shape;
    std::vector<std::string> parts(shape.size() - 2);
    for (std::size_t a = parts.size(); a-- > 0;) {
        parts[a] = label_at(trace, step, a, s % shape[a]);
        s /= shape[a];
    }
    std::string name;
    for (std::size_t a = 0; a < parts.size(); ++a) name += (a ? ", " : "") + parts[a];
    return name;
}

void print_tensor(const Trace& trace, const Step& step, const TextOptions& opt, std::ostream& out) {
    const auto& shape = step.tensor.shape;
    const std::size_t rank = shape.size();
    const std::size_t inner = rank >= 2 ? shape[rank - 1] * shape[rank - 2] : rank == 1 ? shape[0] : 1;
    const std::size_t inner_rows = rank >= 2 ? shape[rank - 2] : 1;
    const std::size_t slices = inner ? step.tensor.size() / inner : 0;
    const bool heat = opt.heatmap && is_heat_matrix(step);
    if (opt.torch) {
        if (step.nn_linear) {  // the textbook holds it as nn.Linear.weight: [out, in]
            out << "nn.Linear.weight, [out, in] (the transpose of the x·W matrix):\n";
            Tensor t = step.tensor;
            const std::size_t rows = t.shape[0], cols = t.shape[1];
            for (std::size_t r = 0; r < rows; ++r)
                for (std::size_t c = 0; c < cols; ++c) t.data[c * rows + r] = step.tensor.data[r * cols + c];
            t.shape = {cols, rows};
            out << torch_repr(t) << '\n';
            return;
        }
        out << torch_repr(step.tensor) << '\n';
        if (!step.row_sum.data.empty()) out << "row sums: " << torch_repr(step.row_sum) << '\n';
        if (!heat) return;
        const Figure figure = figure_of(trace, step, opt.color_scale, PanelScale::apart);
        for (std::size_t s = 0; s < slices; ++s) {
            if (rank > 2) out << "  " << slice_name(trace, step, s) << ":\n";
            print_heatmap(figure, s, opt, out);
        }
        return;
    }
    if (shape.empty()) {
        out << "    = " << cell(step.tensor, 0, opt.precision >= 4 ? std::max(opt.precision, 8) : opt.precision) << '\n';
        return;
    }
    if (step.heads_grid && !opt.full) {  // every head of every layer: the grid (--full prints the numbers)
        print_grid(step, opt, out);
        return;
    }
    // Batch elements equal to batch element 0 (a stacked input) are named, not printed again.
    const bool batched = rank > 2 && step.axes[0] == Axis::batch && shape[0] > 1;
    const std::size_t per_batch = batched ? slices / shape[0] : slices;
    const auto same_as_first = [&](std::size_t b) {
        const std::size_t n = per_batch * inner;
        return std::equal(step.tensor.data.begin() + static_cast<std::ptrdiff_t>(b * n),
                          step.tensor.data.begin() + static_cast<std::ptrdiff_t>((b + 1) * n), step.tensor.data.begin());
    };
    std::optional<Figure> figure;
    if (heat) figure = figure_of(trace, step, opt.color_scale, PanelScale::apart);
    for (std::size_t s : shown(slices, opt)) {
        if (s == gap) {
            out << "  …\n";
            continue;
        }
        if (batched && s >= per_batch && same_as_first(s / per_batch)) {
            if (s % per_batch == 0) out << "  " << label(trace, Axis::batch, s / per_batch) << " equals " << label(trace, Axis::batch, 0) << "\n";
            continue;
        }
        print_matrix(trace, step, s * inner, s * inner_rows, rank > 2 ? slice_name(trace, step, s) : std::string(), opt, out);
        if (heat) print_heatmap(*figure, s, opt, out);
    }
}

// Consecutive 1-D steps of one group, shown as the columns of one table.
void print_group(const Trace& trace, const std::vector<const Step*>& group, const TextOptions& opt, std::ostream& out) {
    const Step& first = *group.front();
    const std::size_t n = first.tensor.shape[0];
    Table t;
    t.header.push_back("");
    for (const Step* s : group) t.header.push_back(s->id);
    for (std::size_t i : shown(n, opt)) {
        std::vector<std::string> row{i == gap ? "⋮" : label_at(trace, first, 0, i)};
        for (const Step* s : group) row.push_back(i == gap ? "⋮" : cell(s->tensor, i, opt.precision));
        t.rows.push_back(std::move(row));
    }
    if (std::any_of(group.begin(), group.end(), [](const Step* s) { return !s->row_sum.data.empty(); })) {
        std::vector<std::string> sums{"row sum"};
        for (const Step* s : group) sums.push_back(s->row_sum.data.empty() ? "" : value_text(s->row_sum.data[0], opt.precision));
        t.rows.push_back(std::move(sums));
    }
    t.print(out, "    ");
}

std::string sci(double v) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.9g", v);
    return buf;
}

void print_summary(const Step& step, const TextOptions& opt, std::ostream& out) {
    const Summary& s = step.summary;
    const std::vector<std::string> parts = {
        "min " + value_text(static_cast<float>(s.min), opt.precision), "max " + value_text(static_cast<float>(s.max), opt.precision),
        "mean " + value_text(static_cast<float>(s.mean), opt.precision), "checksum " + sci(s.checksum),
        "(" + std::to_string(s.count) + " values" + (s.non_finite ? ", " + std::to_string(s.non_finite) + " not finite" : "") + ")"};
    std::string line = "    ";  // the parts two spaces apart, a new line where the next would pass the edge
    for (const std::string& part : parts) {
        if (line.size() > 4 && width(line) + 2 + width(part) > opt.columns) {
            out << line << '\n';
            line = "    ";
        }
        line += (line.size() > 4 ? "  " : "") + part;
    }
    out << line << '\n';
    if (s.has_row_sums)
        out << "    row sums " << value_text(static_cast<float>(s.row_sum_min), opt.precision) << " … "
            << value_text(static_cast<float>(s.row_sum_max), opt.precision) << '\n';
    print_note("scope", s.scope, opt, out);
}

void print_timing(const Trace& trace, const TextOptions& opt, std::ostream& out) {
    double total = 0.0;
    std::size_t id_w = 5;
    for (const Step& s : trace.steps) {
        total += s.seconds;
        id_w = std::max(id_w, width(s.id));
    }
    out << '\n' << wrap("(wall clock per step; matrix products: " + trace.backend + ")", opt.columns, "timing ", "  ");
    char buf[160];
    if (trace.sgemm_flop_per_second <= 0) {  // seconds and shares
        for (const Step& s : trace.steps) {
            std::snprintf(buf, sizeof buf, "%10.6f s  %5.1f%%", s.seconds, total > 0 ? 100.0 * s.seconds / total : 0.0);
            out << "    " << pad_right(s.id, id_w) << buf << '\n';
        }
        std::snprintf(buf, sizeof buf, "%10.6f s", total);
        out << "    " << pad_right("total", id_w) << buf << '\n';
        return;
    }
    // and beside the machine: the rates measured after the walk, each step's work and its time
    // over the least the machine takes for it (the library's limit_seconds)
    std::snprintf(buf, sizeof buf, "%.0f GFLOP/s (sgemm 2048³) and %.1f GB/s (memcpy)", trace.sgemm_flop_per_second / 1e9,
                  trace.copy_bytes_per_second / 1e9);
    out << wrap("(GFLOP: a step's matrix products; × limit: its time over the least this machine takes for them at " + std::string(buf) +
                    ", measured after the walk; the total's over the steps with products)",
                opt.columns, "  ", "  ");
    out << "    " << pad_right("", id_w) << "   seconds   share     GFLOP  × limit\n";
    double flop = 0.0, limit = 0.0, limited = 0.0;  // limited: the seconds of the steps with a limit
    for (const Step& s : trace.steps) {
        std::snprintf(buf, sizeof buf, "%10.6f  %5.1f%%", s.seconds, total > 0 ? 100.0 * s.seconds / total : 0.0);
        std::string row = "    " + pad_right(s.id, id_w) + buf;
        if (s.limit_seconds > 0) {
            std::snprintf(buf, sizeof buf, "%10.3f %8.2f", s.flop / 1e9, s.seconds / s.limit_seconds);
            row += buf;
            flop += s.flop;
            limit += s.limit_seconds;
            limited += s.seconds;
        }
        out << row << '\n';
    }
    std::snprintf(buf, sizeof buf, "%10.6f        ", total);
    std::string row = "    " + pad_right("total", id_w) + buf;
    if (limit > 0) {
        std::snprintf(buf, sizeof buf, "%10.3f %8.2f", flop / 1e9, limited / limit);
        row += buf;
    }
    out << row << '\n';
}

void print_heading(const Step& step, std::size_t number, const TextOptions& opt, std::ostream& out) {
    std::string shape;
    for (std::size_t i = 0; i < step.tensor.shape.size(); ++i) shape += (i ? "×" : "") + std::to_string(step.tensor.shape[i]);
    const std::string tag = "(" + step.id + (shape.empty() ? "" : ", " + shape) + ")";
    const std::string title = "[" + std::to_string(number) + "] " + step.title;
    // the title and its (id, shape) tag on one line when they fit, the tag on its own otherwise
    if (width(title) + 3 + width(tag) <= opt.columns) out << "\n" << title << "   " << tag << '\n';
    else out << '\n' << wrap(title, opt.columns, "", "    ") << "    " << tag << '\n';
    if (!step.formula.empty()) out << wrap_formula(step.formula, opt.columns, "    ", "      ");
}


}  // namespace


namespace {

// The text view's items: a step, or consecutive 1-D steps of a group side by side.
std::vector<std::vector<const Step*>> items_of(const Trace& trace, const TextOptions& opt) {
    std::vector<std::vector<const Step*>> items;
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        const Step& step = trace.steps[i];
        if (step.kind == StepKind::parameter && !opt.show_weights) continue;
        items.push_back({&step});
        if (!step.group.empty() && step.tensor.shape.size() == 1 && !opt.torch)
            while (i + 1 < trace.steps.size() && trace.steps[i + 1].group == step.group &&
                   trace.steps[i + 1].tensor.shape == step.tensor.shape)
                items.back().push_back(&trace.steps[++i]);
    }
    return items;
}

}  // namespace

std::string step_numbers_text(const Trace& trace, const Step& step, const TextOptions& opt) {
    std::ostringstream out;
    if (step.summarised) {
        print_summary(step, opt, out);
        return out.str();
    }
    std::size_t label_width = 0;
    for (const auto& e : step.expansion) label_width = std::max(label_width, width(e.label));
    for (std::size_t e : shown(step.expansion.size(), opt))
        out << "    " << (e == gap ? "…" : expansion_line(step.expansion[e], label_width, "    ", opt)) << '\n';
    print_tensor(trace, step, opt, out);
    return out.str();
}

namespace {

// One item, its steps numbered after `number`; `heading` (if given) receives its heading alone.
std::string item_text(const Trace& trace, const std::vector<const Step*>& group, std::size_t number, const TextOptions& opt,
                      std::string* heading = nullptr) {
    std::ostringstream out, head;
    if (group.size() > 1) {
        head << "\n[" << number + 1 << "-" << number + group.size() << "] Side by side\n";
        for (const Step* s : group) {  // the title at its spaces, the formula between its terms
            std::vector<std::string> words = words_of(s->title + (s->formula.empty() ? "" : ","));
            for (std::string& w : words_of(s->formula, true)) words.push_back(std::move(w));
            head << wrap_words(words, opt.columns, "    " + s->id + ": ", "      ");
        }
        out << head.str();
        print_group(trace, group, opt, out);
        for (const Step* s : group) print_note("note (" + s->id + ")", s->note, opt, out);
    } else {
        const Step& step = *group.front();
        print_heading(step, number + 1, opt, head);
        out << head.str() << step_numbers_text(trace, step, opt);
        print_note("note", step.note, opt, out);
    }
    if (heading) *heading = head.str();
    return out.str();
}

// The rows `text` takes on a terminal `columns` wide (colour escapes take none).
std::size_t rows_of(const std::string& text, std::size_t columns) {
    std::size_t rows = 0, chars = 0;
    for (std::size_t i = 0; i < text.size(); ++i) {
        const char c = text[i];
        if (c == '\x1b') {  // ESC [ … m
            while (i < text.size() && text[i] != 'm') ++i;
            continue;
        }
        if (c == '\n') {
            rows += std::max<std::size_t>(1, (chars + columns - 1) / columns);
            chars = 0;
        } else if ((static_cast<unsigned char>(c) & 0xC0) != 0x80) {
            ++chars;
        }
    }
    return rows + (chars ? (chars + columns - 1) / columns : 0);
}

}  // namespace

namespace {

// The note's first sentence (up to ". " or the end).
std::string first_sentence(const std::string& note) {
    const std::size_t end = note.find(". ");
    return end == std::string::npos ? note : note.substr(0, end + 1);
}

// The text view of `trace` in the way `stage` of --compact's fitting says: 0 every heatmap
// but the last token×token step's left out, 1 that one too, 2 notes cut to their first
// sentence, 3 no notes and no formula the step before just showed.
std::string fitted_text(const Trace& trace, const TextOptions& opt, int stage) {
    Trace shown = trace;
    if (stage >= 2)
        for (Step& s : shown.steps) s.note = stage == 2 ? first_sentence(s.note) : std::string();
    if (stage >= 3)  // a formula the step before just showed is not written again
        for (std::size_t i = shown.steps.size(); i-- > 1;)
            if (shown.steps[i].formula == shown.steps[i - 1].formula) shown.steps[i].formula.clear();
    const Step* last_matrix = nullptr;
    for (const Step& s : shown.steps)
        if (is_token_matrix(s)) last_matrix = &s;
    TextOptions bare = opt;
    bare.heatmap = false;
    std::string text = header_text(shown, opt);
    const auto items = items_of(shown, opt);
    std::size_t number = 0;
    for (const auto& item : items) {
        const bool keeps = stage == 0 && std::find(item.begin(), item.end(), last_matrix) != item.end();
        text += item_text(shown, item, number, keeps ? opt : bare);
        number += item.size();
    }
    if (stage > 0) {
        const std::string left = stage == 1 ? "no heatmaps" : stage == 2 ? "no heatmaps, notes cut to one sentence" : "no heatmaps, notes or repeated formulas";
        // said as it is: fitted, or still longer than two screens with all of it left out
        const std::string fitted = "(--compact, to fit two screens: " + left + ")\n";
        text += rows_of(text + fitted, std::max<std::size_t>(opt.columns, 1)) <= opt.fit_rows
                    ? fitted
                    : wrap("(--compact: " + left + "; still more than two screens: --steps shows fewer steps)", std::max<std::size_t>(opt.columns, 20), "",
                           "") + "\n";
    }
    return text;
}

}  // namespace

void render_text(const Trace& trace, const TextOptions& opt, std::ostream& out, const BeforeItem& before_item) {
    if (opt.fit_rows) {  // --compact: the first way of showing it that fits
        std::string text;
        for (int stage = 0; stage <= 3; ++stage) {
            text = fitted_text(trace, opt, stage);
            if (rows_of(text, std::max<std::size_t>(opt.columns, 1)) <= opt.fit_rows) break;
        }
        out << text;
        if (trace.timed) print_timing(trace, opt, out);
        return;
    }
    out << header_text(trace, opt);
    const auto items = items_of(trace, opt);
    std::size_t number = 0;  // steps before this item
    for (std::size_t n = 0; n < items.size(); ++n) {
        if (before_item && !before_item(n, items.size())) return;
        out << item_text(trace, items[n], number, opt);  // one item at a time: a long trace is never all in memory
        number += items[n].size();
    }
    if (trace.timed) print_timing(trace, opt, out);
}

void render_text(const std::vector<Section>& sections, const TextOptions& opt, const std::string& rerun_suffix,
                 const Pause& pause, std::ostream& out, bool paged) {
    const std::size_t w = std::min<std::size_t>(std::max<std::size_t>(opt.columns, 40), 100);
    const std::string rule(w, '=');
    // Paged (--step on a terminal): a part opens on a fresh screen with its header and its
    // paragraph, once; each step after a pause goes below the steps before it while it fits
    // the terminal's height (less the prompt's line), else on a fresh screen under the part's
    // header alone. A step loses its heatmap only when it is too tall even there.
    const std::size_t page = paged && opt.lines > 2 ? opt.lines - 1 : 0;
    TextOptions bare = opt;
    bare.heatmap = false;
    std::vector<std::pair<const Step*, std::size_t>> shown_before;  // steps of earlier parts, and their part
    for (std::size_t n = 0; n < sections.size(); ++n) {
        const Section& s = sections[n];
        const std::string head = "Part " + std::to_string(n + 1) + " of " + std::to_string(sections.size()) + ": " + s.title;
        const std::string run = "Run this part alone: attnwalk " + s.args + rerun_suffix + "\n";  // whole, to paste
        // a page: the part's header, short; the whole output: a banner
        const std::string again = "== " + head + " ==\n";
        const std::string banner = page ? again + wrap(s.explanation, w, "", "") + wrap_formula(s.formula, w, "    ", "      ") + run + "\n"
                                        : rule + "\n " + head + "\n" + rule + "\n\n" + wrap(s.explanation, w, "", "") + "\n" +
                                              wrap_formula(s.formula, w, "    ", "      ") + "\n" + run + "\n";
        if (n > 0) {
            const PauseAnswer answer = pause(head.substr(0, head.find(" of ")) + ": " + s.title, true);
            if (answer == PauseAnswer::stop) return;
            if (answer == PauseAnswer::go_on) out << '\n';
        }
        const std::string opening = banner + header_text(s.trace, opt);
        out << opening;
        std::size_t used = rows_of(opening, opt.columns), number = 0;
        const auto items = items_of(s.trace, opt);
        std::string pending;  // steps named only, kept for the next step's screen
        const auto lead = [](const std::string& t) { return t.empty() ? t : t.substr(1); };  // less the blank line before it
        std::size_t pending_from = 0;  // the first of them, counted from 1
        for (std::size_t i = 0; i < items.size(); number += items[i].size(), ++i) {
            const auto& group = items[i];
            std::string heading;
            std::string text = item_text(s.trace, group, number, opt, &heading);
            // the same step, with the same numbers, as in an earlier part
            std::size_t earlier = 0;
            if (group.size() == 1)
                for (const auto& [a, part] : shown_before) {
                    const Step& b = *group[0];
                    if (!earlier && a->id == b.id && a->tensor.shape == b.tensor.shape && a->tensor.data == b.tensor.data &&
                        a->tensor.integers == b.tensor.integers)
                        earlier = part + 1;
                }
            if (earlier)  // paged: in a line or two, to go below the step before it rather than alone on a screen
                text = !page ? heading + "    the same numbers as in part " + std::to_string(earlier) + "\n"
                             : "\n" + [&] {
                                   std::vector<std::string> words = words_of("[" + std::to_string(number + 1) + "] " + group[0]->title + " (" + group[0]->id + "):");
                                   words.push_back("the same numbers as in part " + std::to_string(earlier));  // kept on one line
                                   return wrap_words(words, opt.columns, "", "    ");
                               }();
            // where it goes: below what is on the screen, or on a fresh one; with its heatmap
            // wherever that fits, else without it. A step named, not printed again, that does
            // not fit below goes on the next step's screen, not alone on one.
            bool below = true;
            if (page) {
                const std::size_t fresh = rows_of(again, opt.columns);
                const auto fits_below = [&](const std::string& t) { return pending.empty() && used + rows_of(t, opt.columns) <= page; };
                // steps named only open the next screen right under its header, without their blank line
                const auto fits_fresh = [&](const std::string& t) { return fresh + rows_of(lead(pending) + t, opt.columns) <= page; };
                if (earlier && !fits_below(text) && i + 1 < items.size()) {
                    pending += text;
                    if (pending_from == 0) pending_from = i + 1;
                    for (const Step* st : group) shown_before.emplace_back(st, n);
                    continue;
                }
                if (!pending.empty() && !fits_fresh(item_text(s.trace, group, number, bare) + "\n")) {
                    // too tall with this step even without its heatmap: the steps named go on a screen of their own
                    const PauseAnswer answer = pause("Part " + std::to_string(n + 1) + ", step" + (pending_from < i ? "s " + std::to_string(pending_from) + "–" : " ") +
                                                         std::to_string(i) + " of " + std::to_string(items.size()),
                                                     true);
                    if (answer == PauseAnswer::stop) return;
                    if (answer == PauseAnswer::next_screen) out << again;
                    out << pending;
                    used = rows_of(again + pending, opt.columns);
                    pending.clear();
                    pending_from = 0;
                }
                if (!fits_below(text)) {
                    if (!fits_fresh(text)) {
                        const std::string bare_text = item_text(s.trace, group, number, bare);
                        if (bare_text != text) text = bare_text + "    (its heatmap left out to fit the screen; run the part alone to see it)\n";
                    }
                    below = fits_below(text);
                }
            }
            const std::string next = "Part " + std::to_string(n + 1) + ", step" + (pending_from ? "s " + std::to_string(pending_from) + "–" : " ") +
                                     std::to_string(i + 1) + " of " + std::to_string(items.size());
            text = lead(pending) + text;
            pending.clear();
            pending_from = 0;
            if (i > 0 || !below) {
                const PauseAnswer answer = pause(next, !below || !page);  // an unknown height: a fresh screen each time
                if (answer == PauseAnswer::stop) return;
                if (answer == PauseAnswer::next_screen && (!below || !page)) {
                    out << again;
                    used = rows_of(again, opt.columns);
                }
            }
            out << text;
            used += rows_of(text, opt.columns);
            for (const Step* st : group) shown_before.emplace_back(st, n);
        }
        if (s.trace.timed) print_timing(s.trace, opt, out);
    }
}

}  // namespace attnwalk::app
