// The text view: every step, labelled with tokens, aligned, N decimals.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "render.hpp"

namespace attnwalk::app {

namespace {

std::string fmt(float v, int precision) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.*f", precision, static_cast<double>(v));
    return buf;
}

// Display width of UTF-8 text: count code points, not bytes.
std::size_t width(const std::string& s) {
    return static_cast<std::size_t>(std::count_if(s.begin(), s.end(), [](char c) { return (static_cast<unsigned char>(c) & 0xC0) != 0x80; }));
}

std::string pad_left(const std::string& s, std::size_t w) { return std::string(w > width(s) ? w - width(s) : 0, ' ') + s; }
std::string pad_right(const std::string& s, std::size_t w) { return s + std::string(w > width(s) ? w - width(s) : 0, ' '); }

std::string label(const Trace& trace, Axis axis, std::size_t i) {
    switch (axis) {
        case Axis::token: return i < trace.tokens.size() ? trace.tokens[i] : std::to_string(i);
        case Axis::batch: return "batch " + std::to_string(i);
        case Axis::head: return "head " + std::to_string(i);
        case Axis::feature: return "d" + std::to_string(i);
    }
    return std::to_string(i);
}

struct Table {
    std::vector<std::string> header;            // first cell is the corner
    std::vector<std::vector<std::string>> rows;  // first cell is the row label

    void print(std::ostream& out, const std::string& indent) const {
        std::vector<std::size_t> w(header.size(), 0);
        auto fit = [&](const std::vector<std::string>& r) {
            for (std::size_t c = 0; c < r.size() && c < w.size(); ++c) w[c] = std::max(w[c], width(r[c]));
        };
        fit(header);
        for (const auto& r : rows) fit(r);
        auto line = [&](const std::vector<std::string>& r) {
            std::string s = indent + pad_right(r[0], w[0]);
            for (std::size_t c = 1; c < r.size(); ++c) s += "  " + pad_left(r[c], w[c]);
            while (!s.empty() && s.back() == ' ') s.pop_back();
            out << s << '\n';
        };
        line(header);
        for (const auto& r : rows) line(r);
    }
};

// One 2-D slice (or a 1-D tensor as a single row) starting at `offset`.
void print_matrix(const Trace& trace, const Step& step, std::size_t offset, std::size_t sum_offset,
                  const TextOptions& opt, std::ostream& out) {
    const auto& shape = step.tensor.shape;
    const std::size_t rank = shape.size();
    const std::size_t cols = shape[rank - 1];
    const std::size_t rows = rank >= 2 ? shape[rank - 2] : 1;
    const bool sums = !step.row_sum.data.empty();
    Table t;
    t.header.push_back("");
    for (std::size_t c = 0; c < cols; ++c) t.header.push_back(label(trace, step.axes[rank - 1], c));
    if (sums) {
        t.header.push_back("|");
        t.header.push_back("row sum");
    }
    for (std::size_t r = 0; r < rows; ++r) {
        std::vector<std::string> row{rank >= 2 ? label(trace, step.axes[rank - 2], r) : ""};
        for (std::size_t c = 0; c < cols; ++c) row.push_back(fmt(step.tensor.data[offset + r * cols + c], opt.precision));
        if (sums) {
            row.push_back("|");
            row.push_back(fmt(step.row_sum.data[sum_offset + r], opt.precision));
        }
        t.rows.push_back(std::move(row));
    }
    t.print(out, "    ");
}

void print_tensor(const Trace& trace, const Step& step, const TextOptions& opt, std::ostream& out) {
    const auto& shape = step.tensor.shape;
    if (shape.empty()) {
        out << "    = " << fmt(step.tensor.data.at(0), opt.precision >= 4 ? std::max(opt.precision, 8) : opt.precision) << '\n';
        return;
    }
    const std::size_t rank = shape.size();
    const std::size_t inner = rank >= 2 ? shape[rank - 1] * shape[rank - 2] : shape[0];
    const std::size_t inner_rows = rank >= 2 ? shape[rank - 2] : 1;
    const std::size_t slices = step.tensor.size() / std::max<std::size_t>(inner, 1);
    for (std::size_t s = 0; s < slices; ++s) {
        if (rank > 2) {  // name the slice by its leading indices: "batch 0, head 1"
            std::string name;
            std::size_t rest = s;
            std::vector<std::string> parts(rank - 2);
            for (std::size_t a = rank - 2; a-- > 0;) {
                parts[a] = label(trace, step.axes[a], rest % shape[a]);
                rest /= shape[a];
            }
            for (std::size_t a = 0; a < parts.size(); ++a) name += (a ? ", " : "") + parts[a];
            out << "  " << name << ":\n";
        }
        print_matrix(trace, step, s * inner, s * inner_rows, opt, out);
    }
}

std::string expansion_line(const Expansion& e, std::size_t label_width, int precision) {
    const bool scalar = !e.terms.empty() && e.terms[0].value.size() == 1;
    auto vec = [&](const std::vector<float>& v) {
        std::string s = "[";
        for (std::size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + fmt(v[i], precision);
        return s + "]";
    };
    std::string s = pad_right(e.label, label_width) + " = ";
    for (std::size_t i = 0; i < e.terms.size(); ++i) {
        const auto& t = e.terms[i];
        if (i) s += scalar ? " + " : "\n" + std::string(label_width + 1, ' ') + "+ ";
        s += fmt(t.coef, precision) + "·" + (scalar ? fmt(t.value[0], precision) : vec(t.value));
    }
    s += scalar ? " = " : "\n" + std::string(label_width + 1, ' ') + "= ";
    s += scalar ? fmt(e.result.at(0), precision) : vec(e.result);
    return s;
}

// Consecutive 1-D steps of one group, shown as the columns of one table.
void print_group(const Trace& trace, const std::vector<const Step*>& group, const TextOptions& opt, std::ostream& out) {
    const Step& first = *group.front();
    const std::size_t n = first.tensor.shape[0];
    Table t;
    t.header.push_back("");
    for (const Step* s : group) t.header.push_back(s->id);
    for (std::size_t i = 0; i < n; ++i) {
        std::vector<std::string> row{label(trace, first.axes[0], i)};
        for (const Step* s : group) row.push_back(fmt(s->tensor.data[i], opt.precision));
        t.rows.push_back(std::move(row));
    }
    std::vector<std::string> sums{"row sum"};
    for (const Step* s : group) sums.push_back(s->row_sum.data.empty() ? "" : fmt(s->row_sum.data[0], opt.precision));
    t.rows.push_back(std::move(sums));
    t.print(out, "    ");
}

void print_heading(const Step& step, std::size_t number, std::ostream& out) {
    std::string shape;
    for (std::size_t i = 0; i < step.tensor.shape.size(); ++i) shape += (i ? "×" : "") + std::to_string(step.tensor.shape[i]);
    out << "\n[" << number << "] " << step.title << "   (" << step.id << (shape.empty() ? "" : ", " + shape) << ")\n";
    out << "    " << step.formula << '\n';
}

std::string param_text(const ParamValue& v) {
    return std::visit([](const auto& x) -> std::string {
        using V = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<V, bool>) return x ? "yes" : "no";
        else if constexpr (std::is_same_v<V, std::string>) return x;
        else if constexpr (std::is_same_v<V, double>) { char b[32]; std::snprintf(b, sizeof b, "%g", x); return b; }
        else return std::to_string(x);
    }, v);
}

}  // namespace

void render_text(const Trace& trace, const TextOptions& opt, std::ostream& out) {
    out << "attnwalk " << trace.command << ":";
    for (const auto& tok : trace.tokens) out << ' ' << tok;
    out << '\n';
    std::string params;
    for (const auto& [name, value] : trace.params) params += (params.empty() ? "" : ", ") + name + " " + param_text(value);
    out << "  " << params << '\n';

    std::size_t number = 0;
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        const Step& step = trace.steps[i];
        if (step.kind == StepKind::parameter && !opt.show_weights) continue;
        if (!step.group.empty() && step.tensor.shape.size() == 1) {
            std::vector<const Step*> group{&step};
            while (i + 1 < trace.steps.size() && trace.steps[i + 1].group == step.group &&
                   trace.steps[i + 1].tensor.shape == step.tensor.shape)
                group.push_back(&trace.steps[++i]);
            if (group.size() > 1) {
                out << "\n[" << number + 1 << "-" << number + group.size() << "] Side by side\n";
                for (const Step* s : group) out << "    " << s->id << ": " << s->title << ", " << s->formula << '\n';
                number += group.size();
                print_group(trace, group, opt, out);
                for (const Step* s : group)
                    if (!s->note.empty()) out << "    note (" << s->id << "): " << s->note << '\n';
                continue;
            }
        }
        print_heading(step, ++number, out);
        std::size_t label_width = 0;
        for (const auto& e : step.expansion) label_width = std::max(label_width, width(e.label));
        for (const auto& e : step.expansion) out << "    " << expansion_line(e, label_width, opt.precision) << '\n';
        print_tensor(trace, step, opt, out);
        if (!step.note.empty()) out << "    note: " << step.note << '\n';
    }
}

}  // namespace attnwalk::app
