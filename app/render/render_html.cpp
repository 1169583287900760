// --html FILE: see render_html.hpp. The page is page_template.cpp's template with three JSON
// documents inside, all written by the --json writer (json_writer.hpp): the --json document
// (its large tensors packed, render_json.hpp), every step as the page shows it (a figure's
// cells, figure.hpp, or the text view's numbers), and the written-out cells of the
// explanation engine.
#include "render_html.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <map>
#include <optional>
#include <sstream>

#include "../output_file.hpp"
#include "attnwalk/lessons/explainer.hpp"
#include "figure.hpp"
#include "heatmap.hpp"
#include "json_writer.hpp"
#include "page_template.hpp"
#include "render_json.hpp"
#include "render_text.hpp"

namespace attnwalk::app {

namespace {

// The page's colours: the sequential scale's levels, the diverging scale's, then NaN's and
// inf's (as the SVG draws them). A cell's colour is its index here; −1: masked.
constexpr int levels = 64;
constexpr int nan_colour = 2 * levels, inf_colour = 2 * levels + 1;

std::string hex(Rgb c) {
    char buf[8];
    std::snprintf(buf, sizeof buf, "#%02x%02x%02x", c.r, c.g, c.b);
    return buf;
}

int colour_of(const Figure& f, std::size_t p, std::size_t r, std::size_t c) {
    const float v = f.value(p, r, c);
    if (f.hidden(p, r, c)) return -1;
    if (std::isnan(v)) return nan_colour;
    if (std::isinf(v)) return inf_colour;
    const double t = std::clamp(f.at(p, r, 1, v), 0.0, 1.0);
    return (f.diverging(p) ? levels : 0) + static_cast<int>(std::lround(t * (levels - 1)));
}

template <class T, class F>
void array(JsonWriter& w, const std::vector<T>& items, F each) {
    w.raw('[');
    for (std::size_t i = 0; i < items.size(); ++i) {
        if (i) w.raw(',');
        each(items[i]);
    }
    w.raw(']');
}
void strings(JsonWriter& w, const std::vector<std::string>& items) {
    array(w, items, [&](const std::string& s) { w.string(s); });
}
void wholes(JsonWriter& w, const std::vector<std::size_t>& items) {
    array(w, items, [&](std::size_t x) { w.integer(x); });
}

using CellKey = std::array<std::size_t, 4>;  // layer, head, query, key
CellKey key_of(const CellRef& c) { return {c.layer, c.head, c.query, c.key}; }

// The written-out cells (the "cells" document) and where each cell is in its list.
struct Written {
    std::string json;
    std::map<CellKey, std::size_t> index;
    std::map<std::pair<std::size_t, std::size_t>, std::size_t> entries;  // (a step's index, an entry's place in its tensor) -> its place in the list
};

// A written-out step as the page shows it: title, formula, its numbers as the text view
// prints them, its note.
std::string written_step_json(const Trace& trace, const Step& step, const TextOptions& text) {
    std::ostringstream out;
    {
        JsonWriter w(out, NonFinite::string);
        w.raw('{').key("title").string(step.title).raw(',').key("formula").string(step.formula);
        w.raw(',').key("text").string(step_numbers_text(trace, step, text)).raw(',').key("note").string(step.note).raw('}');
    }
    return out.str();
}

// The written-out cells: the engine's steps and the cell's path, for every (layer, head)
// the run kept, in order — the shown head first — while they fit the budget. A step that
// several cells share (a query's row through the norm, its projection, its row's softmax)
// is written once: `steps` holds each distinct step, a cell lists its steps' indices.
// Before them, the entries with arithmetic of their own (a patching grid's cells, the
// attribution terms), with an empty path.
Written written_cells(const Trace& trace, const TextOptions& text, std::size_t budget) {
    Written out;
    std::vector<std::string> steps, cells;  // each a JSON value the writer wrote
    std::string note;
    std::map<std::string, std::size_t> known;  // a step's JSON -> its place in `steps`
    std::size_t used = 0;
    if (trace.explainer) {
        for (std::size_t si = 0; si < trace.steps.size() && used < budget; ++si) {
            const Step& s = trace.steps[si];
            if (!trace.explainer->writes_out(s.id) || s.tensor.shape.size() != 2) continue;
            const std::size_t rows = s.tensor.shape[0], cols = s.tensor.shape[1];
            for (std::size_t k = 0; k < rows * cols && used < budget; ++k) {
                const std::vector<Step> explained = explain_at(trace, s, 0, k / cols, k % cols);
                if (explained.empty()) continue;
                std::ostringstream one;
                {
                    JsonWriter w(one, NonFinite::string);
                    w.raw('{').key("s").raw('[');
                    for (std::size_t n = 0; n < explained.size(); ++n) {
                        std::string json = written_step_json(trace, explained[n], text);
                        auto at = known.find(json);
                        if (at == known.end()) {
                            used += json.size() + 1;
                            at = known.emplace(std::move(json), steps.size()).first;
                            steps.push_back(at->first);
                        }
                        (n ? w.raw(',') : w).integer(at->second);
                    }
                    w.raw(']').raw(',').key("path").raw("[]").raw('}');
                }
                used += one.str().size() + 1;
                out.entries.emplace(std::make_pair(si, k), cells.size());
                cells.push_back(one.str());
            }
        }
        auto heads = trace.explainer->covered();
        std::optional<std::size_t> chosen;  // --head: that head first
        for (const auto& [name, value] : trace.params)
            if (name == "head_index")
                if (const Index* at = std::get_if<Index>(&value); at && !at->at.empty()) chosen = static_cast<std::size_t>(at->at[0]);
        if (chosen) std::stable_partition(heads.begin(), heads.end(), [&](const auto& lh) { return lh.second == *chosen; });
        const std::size_t T = trace.tokens.size();
        std::size_t whole = 0, rows_of_last = 0;  // heads written whole; query rows of a head written in part
        bool full = false;
        for (const auto& [layer, head] : heads) {
            for (std::size_t i = 0; i < T && !full; ++i) {  // a query row at a time: what a row adds, or nothing
                std::vector<std::string> new_steps, new_cells;
                std::vector<CellKey> new_keys;
                std::map<std::string, std::size_t> added;
                std::size_t bytes = 0;
                for (std::size_t j = 0; j < T; ++j) {
                    const CellRef cell{layer, head, i, j};
                    const std::vector<Step> explained = explain(trace, cell);
                    if (explained.empty()) continue;
                    std::vector<std::size_t> list;
                    for (const Step& step : explained) {
                        std::string json = written_step_json(trace, step, text);
                        std::size_t k;
                        if (auto at = known.find(json); at != known.end()) k = at->second;
                        else if (auto here = added.find(json); here != added.end()) k = here->second;
                        else {
                            k = steps.size() + new_steps.size();
                            bytes += json.size() + 1;
                            added.emplace(json, k);
                            new_steps.push_back(std::move(json));
                        }
                        list.push_back(k);
                    }
                    std::ostringstream one;
                    {
                        JsonWriter w(one, NonFinite::string);
                        w.raw('{').key("s");
                        wholes(w, list);
                        w.raw(',').key("path");
                        array(w, cell_path(trace, cell), [&](const PathEntry& e) {
                            w.raw('[').integer(e.step).raw(',').string(value_text(e.value, text.precision)).raw(']');
                        });
                        w.raw('}');
                    }
                    bytes += one.str().size() + 1;
                    new_cells.push_back(one.str());
                    new_keys.push_back(key_of(cell));
                }
                if (used + bytes > budget) {
                    full = true;
                    break;
                }
                used += bytes;
                for (std::size_t n = 0; n < new_keys.size(); ++n) out.index.emplace(new_keys[n], cells.size() + n);
                for (std::string& c : new_cells) cells.push_back(std::move(c));
                for (std::string& s : new_steps) steps.push_back(std::move(s));
                for (auto& [json, k] : added) known.emplace(json, k);
                rows_of_last = i + 1;
            }
            if (full) break;
            ++whole;
            rows_of_last = 0;
        }
        if (full) {
            std::string what = whole ? std::to_string(whole) + " head" + (whole == 1 ? "" : "s") : std::string();
            if (rows_of_last)
                what += (whole ? " and " : "") + std::string("query rows 1–") + std::to_string(rows_of_last) + " of " + (whole ? "the next head" : "the first head");
            if (what.empty()) what = "no head";
            note = "Cells of " + what + " are written out in this page (all of them would make it too large): run with --head H (and --layer L) " +
                   "for another head first, or --explain I,J for one cell.";
        }
    }
    std::ostringstream doc;
    {
        JsonWriter w(doc, NonFinite::string);
        w.raw('{').key("steps");
        array(w, steps, [&](const std::string& s) { w.raw(s); });
        w.raw(',').key("cells");
        array(w, cells, [&](const std::string& c) { w.raw(c); });
        if (!note.empty()) w.raw(',').key("note").string(note);
        w.raw('}');
    }
    out.json = doc.str();
    return out;
}

// One drawable step as the page draws it: the Figure's labels, names and panels, and each
// cell's value as text, its colour and the written-out cell it is (figure.hpp does the
// working out; this writes it down).
void figure_json(JsonWriter& w, const Trace& trace, std::size_t index, const TextOptions& text, const Written& written) {
    const Figure f = figure_of(trace, index, text.color_scale, PanelScale::together);
    const Step& s = *f.step;
    const std::vector<std::size_t> drawn = f.first_batch();
    std::vector<unsigned char> is_drawn(f.panels, 0);
    for (std::size_t p : drawn) is_drawn[p] = 1;
    std::vector<std::string> titles, row_names, col_names;
    for (std::size_t p = 0; p < f.panels; ++p) titles.push_back(f.panel_names[p] + (f.panel_marks[p].empty() ? "" : " · " + f.panel_marks[p]));
    // a cell named in the explanation: "query 3 “starts”, key 1 “Your”" (one query's row per head: by its label alone);
    // other axes by their label, which may name its axis already ("layer 2, head 3")
    const auto named = [](const std::string& axis, const std::string& label) { return axis.empty() || label.rfind(axis + " ", 0) == 0 ? label : axis + " " + label; };
    const std::size_t rank = s.axes.size();
    const bool token_rows = rank >= 2 && s.axes[rank - 2] == Axis::token, token_cols = rank >= 1 && s.axes.back() == Axis::token;
    for (std::size_t r = 0; r < f.rows; ++r)
        row_names.push_back(token_rows ? f.row_axis + " " + std::to_string(s.first_row + r + 1) + " “" + f.row_labels[r] + "”" : named(f.row_axis, f.row_labels[r]));
    const bool own_keys = token_cols && !s.labels.empty();
    for (std::size_t c = 0; c < f.cols; ++c)
        col_names.push_back(token_cols ? f.col_axis + " " + (own_keys ? "" : std::to_string(s.first_key + c + 1) + " ") + "“" + f.col_labels[c] + "”"
                                       : s.labels.empty() ? named(f.col_axis, f.col_labels[c]) : f.col_labels[c]);  // a column the step names ("MLP")
    bool any_hidden = !f.masked.empty();
    for (std::size_t p : drawn)
        for (std::size_t r = 0; r < f.rows && !any_hidden; ++r)
            for (std::size_t c = 0; c < f.cols && !any_hidden; ++c) any_hidden = f.hidden(p, r, c);

    w.raw('{').key("step").integer(index).raw(',').key("panels").integer(f.panels).raw(',').key("rows").integer(f.rows);
    w.raw(',').key("cols").integer(f.cols).raw(',').key("drawn");
    wholes(w, drawn);
    w.raw(',').key("titles");
    strings(w, titles);
    w.raw(',').key("names");  // the titles without the layer's kind: the captions of the panels at a glance
    strings(w, f.panel_names);
    w.raw(',').key("row_axis").string(f.row_axis).raw(',').key("col_axis").string(f.col_axis).raw(',').key("row_labels");
    strings(w, f.row_labels);
    w.raw(',').key("col_labels");
    strings(w, f.col_labels);
    w.raw(',').key("row_names");
    strings(w, row_names);
    w.raw(',').key("col_names");
    strings(w, col_names);
    w.raw(',').key("attention").boolean(f.attention).raw(',').key("masked").boolean(any_hidden);
    if (!s.legend.empty()) w.raw(',').key("meaning").string(s.legend);  // what its values mean (a mask's 1 and 0), as the terminal writes it
    if (f.attention) {  // the query and key positions of each row and column (the cell outlined in Q, K, V)
        const std::size_t p0 = drawn.empty() ? 0 : drawn.front();
        std::vector<std::size_t> query_at, key_at;
        for (std::size_t r = 0; r < f.rows; ++r) query_at.push_back(f.cell(trace, p0, r, 0).value_or(CellRef{}).query);
        for (std::size_t c = 0; c < f.cols; ++c) key_at.push_back(f.cell(trace, p0, 0, c).value_or(CellRef{}).key);
        w.raw(',').key("query_at");
        wholes(w, query_at);
        w.raw(',').key("key_at");
        wholes(w, key_at);
    }
    if (f.token_rows) {
        std::vector<std::size_t> token_at;
        for (std::size_t r = 0; r < f.rows; ++r) token_at.push_back(s.first_row + r);
        w.raw(',').key("token_at");
        wholes(w, token_at);
    }
    w.raw(',').key("legend").raw('[');
    for (std::size_t p = 0; p < f.panels; ++p) {
        const ColorScale kind = f.scale(p);
        std::vector<std::size_t> bar;
        for (int k = 0; k < levels; ++k) bar.push_back(static_cast<std::size_t>((f.diverging(p) ? levels : 0) + k));
        (p ? w.raw(',') : w).raw('{').key("words").string(scale_words(kind)).raw(',').key("lo");
        w.string(kind == ColorScale::row || kind == ColorScale::unit ? "0" : value_text(f.lo[p], text.precision)).raw(',').key("hi");
        w.string(kind == ColorScale::row ? "row max" : kind == ColorScale::unit ? "1" : value_text(f.hi[p], text.precision)).raw(',').key("bar");
        wholes(w, bar);
        w.raw('}');
    }
    w.raw(']').raw(',').key("cells").raw('[');
    for (std::size_t p = 0; p < f.panels; ++p) {
        if (p) w.raw(',');
        if (!is_drawn[p]) {  // another batch element: no picture draws it
            w.raw("null");
            continue;
        }
        w.raw('{').key("text").raw('[');
        for (std::size_t k = 0; k < f.rows * f.cols; ++k) (k ? w.raw(',') : w).string(value_text(f.value(p, k / f.cols, k % f.cols), text.precision));
        w.raw(']').raw(',').key("colour").raw('[');
        for (std::size_t k = 0; k < f.rows * f.cols; ++k) {
            if (k) w.raw(',');
            const int colour = colour_of(f, p, k / f.cols, k % f.cols);
            if (colour < 0) w.raw("-1");
            else w.integer(static_cast<unsigned long long>(colour));
        }
        w.raw(']');
        if (!written.index.empty() || !written.entries.empty()) {  // the written-out cell each entry is, or −1
            std::vector<long long> at(f.rows * f.cols, -1);
            bool any = false;
            for (std::size_t k = 0; k < at.size(); ++k)
                if (const auto cell = f.cell(trace, p, k / f.cols, k % f.cols)) {
                    if (const auto it = written.index.find(key_of(*cell)); it != written.index.end()) {
                        at[k] = static_cast<long long>(it->second);
                        any = true;
                    }
                } else if (const auto it = written.entries.find({index, (p * f.rows + k / f.cols) * f.cols + k % f.cols}); it != written.entries.end()) {
                    at[k] = static_cast<long long>(it->second);
                    any = true;
                }
            if (any) {
                w.raw(',').key("written");
                array(w, at, [&](long long x) { x < 0 ? w.raw("-1") : w.integer(static_cast<unsigned long long>(x)); });
            }
        }
        w.raw('}');
    }
    w.raw(']');
    if (f.attention && f.weights && !s.query && f.rows <= 64 && !drawn.empty()) {  // the head view: a line per weight worth drawing
        w.raw(',').key("head_view").raw('[');
        for (std::size_t p = 0; p < f.panels; ++p) {
            if (p) w.raw(',');
            if (!is_drawn[p]) {
                w.raw("null");
                continue;
            }
            w.raw('[');
            bool first = true;
            for (std::size_t r = 0; r < f.rows; ++r)
                for (std::size_t c = 0; c < f.cols; ++c) {
                    const float v = f.value(p, r, c);
                    if (!std::isfinite(v) || v < 0.02f) continue;
                    (first ? w : w.raw(',')).raw('[').integer(r).raw(',').integer(c).raw(',').number(std::min(v, 1.0f)).raw(']');
                    first = false;
                }
            w.raw(']');
        }
        w.raw(']');
    }
    if (s.heads_grid) {  // the model view: a layer a row, a head a column
        const std::size_t L = s.tensor.shape[0], H = s.tensor.shape[1];
        w.raw(',').key("grid").raw('{').key("layers").raw('[');
        for (std::size_t l = 0; l < L; ++l)
            (l ? w.raw(',') : w).raw('[').string(label_at(trace, s, 0, l)).raw(',').string(f.panel_marks[l * H]).raw(']');
        std::vector<std::string> heads;
        for (std::size_t h = 0; h < H; ++h) heads.push_back(label_at(trace, s, 1, h));
        w.raw(']').raw(',').key("head_names");
        strings(w, heads);
        w.raw('}');
    }
    w.raw('}');
}

// Every step as the page shows it: a drawable step's figure (figure_json), any other its
// numbers as the text view prints them (and either, what its values mean: `meaning`, the
// step's legend); the colours; the step the page opens on.
std::string figures_json(const Trace& trace, const TextOptions& text, const Written& written) {
    std::ostringstream out;
    {
        JsonWriter w(out, NonFinite::string);
        w.raw('{').key("colours").raw('[');
        for (int k = 0; k < levels; ++k) (k ? w.raw(',') : w).string(hex(heat_rgb(k / (levels - 1.0))));
        for (int k = 0; k < levels; ++k) w.raw(',').string(hex(diverging_rgb(k / (levels - 1.0))));
        w.raw(',').string("#d62728").raw(',').string("#e6e6e6").raw(']');  // NaN, inf
        const std::optional<std::size_t> opening = opening_step(trace);
        w.raw(',').key("start").integer(opening && drawable(trace.steps[*opening]) ? *opening : 0).raw(',').key("steps").raw('[');
        for (std::size_t i = 0; i < trace.steps.size(); ++i) {
            if (i) w.raw(',');
            const Step& s = trace.steps[i];
            if (drawable(s)) figure_json(w, trace, i, text, written);
            else {
                w.raw('{').key("text").string(s.summarised || s.tensor.data.size() == s.tensor.size() ? step_numbers_text(trace, s, text) : "");
                if (!s.legend.empty()) w.raw(',').key("meaning").string(s.legend);
                w.raw('}');
            }
        }
        w.raw("]}");
    }
    return out.str();
}

// '<' appears only inside JSON strings: as \u003c no "</script" or "<!--" can end the element.
std::string script_safe(const std::string& json) {
    std::string safe;
    safe.reserve(json.size() + 64);
    for (char c : json) {
        if (c == '<') safe += "\\u003c";
        else safe += c;
    }
    return safe;
}

}  // namespace

std::string html_of(const Trace& trace, ColorScale scale, int precision, std::size_t explain_budget) {
    std::ostringstream json;
    render_json(trace, json, NonFinite::string, /*packed=*/true);
    TextOptions text;  // the text view's rule for every number; its own heatmaps left out (the page draws them)
    text.precision = precision;
    text.color_scale = scale;
    text.heatmap = false;
    text.columns = 60;  // about what the explanation's panel (at most 31em wide) holds of its smaller monospace font
    TextOptions panel = text;  // the written-out cells' tables: what the panel holds at 1024×768 (narrower ones leave columns out, wider ones are shrunk to fit)
    panel.columns = 48;
    const Written written = written_cells(trace, panel, explain_budget);
    return page_doctype + std::string(html_generator) + page_head + script_safe(json.str()) +
           "</script>\n<script type=\"application/json\" id=\"figures\">" + script_safe(figures_json(trace, text, written)) +
           "</script>\n<script type=\"application/json\" id=\"cells\">" + script_safe(written.json) + page_tail;
}

namespace {

// Text for HTML: in an element, or in a double-quoted attribute.
std::string html_text(const std::string& s) {
    std::string out;
    for (char c : s) {
        switch (c) {
            case '&': out += "&amp;"; break;
            case '<': out += "&lt;"; break;
            case '>': out += "&gt;"; break;
            case '"': out += "&quot;"; break;
            default: out += c;
        }
    }
    return out;
}

}  // namespace

std::string html_of(const std::vector<Section>& sections, ColorScale scale, int precision) {
    std::string parts, list;
    const std::size_t budget = (4u << 20) / std::max<std::size_t>(sections.size(), 1);  // the parts share one page's budget
    for (std::size_t n = 0; n < sections.size(); ++n) {
        const Section& s = sections[n];
        const std::string id = html_text(s.id), title = html_text(s.title);
        list += "<a href=\"#" + id + "\">" + std::to_string(n + 1) + ". " + title + "</a>\n";
        parts += "<section id=\"" + id + "\"><h2>Part " + std::to_string(n + 1) + " of " + std::to_string(sections.size()) + ": " + title +
                 "</h2>\n<p>" + html_text(s.explanation) + "</p>\n<div class=\"formula\">" + html_text(s.formula) +
                 "</div>\n<div class=\"run\">run alone: attnwalk " + html_text(s.args) + "</div>\n<iframe title=\"" + title +
                 "\" loading=\"lazy\" srcdoc=\"" + html_text(html_of(s.trace, scale, precision, budget)) + "\"></iframe></section>\n";
    }
    return page_doctype + std::string(html_generator) +
           "<meta name=\"viewport\" content=\"width=device-width\"><title>attnwalk walkthrough</title>\n<style>"
           "body{margin:0;font:16px/1.45 system-ui,sans-serif;color:#1b1b1b}header{padding:10px 20px;border-bottom:1px solid #ccc;"
           "position:sticky;top:0;background:#fff;z-index:1}header h1{font-size:1.3em;margin:0 0 4px}nav a{margin-right:1.2em;color:#1f5fa8}"
           "section{padding:10px 20px 24px;border-bottom:2px solid #ddd;scroll-margin-top:6em}section p{max-width:60em}.formula,.run{font-family:monospace}"
           ".run{color:#555;margin:4px 0 8px}iframe{width:100%;height:86vh;border:1px solid #ccc}</style></head><body>\n"
           "<header><h1>attnwalk walkthrough: the chapter in " + std::to_string(sections.size()) + " parts</h1><nav>\n" + list +
           "</nav></header>\n" + parts + "</body></html>\n";
}

}  // namespace attnwalk::app
