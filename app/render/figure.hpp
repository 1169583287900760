// A step as a figure: what every drawing of it shows — the text view's heatmap, the
// explorer, the SVG and the page — computed once from the trace: its panels and their
// names (and a model layer's kind), the names of its axes and the labels along them, the
// cells its mask hides, the colour scale and its ends, block averages that respect the
// mask, and which attention cell each entry is (for the explanation engine and the
// cell's path). The renderers draw a Figure; none of them works any of this out again.
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "attnwalk/lessons/explainer.hpp"
#include "attnwalk/trace.hpp"
#include "style.hpp"

namespace attnwalk::app {

struct Rgb {
    int r, g, b;
};
// The sequential scale, t in [0, 1]: dark violet (low) through teal to yellow (high), like viridis.
Rgb heat_rgb(double t);
// The diverging scale for signed values: blue (t = 0, the most negative) through white
// (t = 0.5, zero) to red (t = 1).
Rgb diverging_rgb(double t);
// The nearest colour of the 256-colour palette's 6×6×6 cube.
int xterm256(Rgb c);

// The label of entry i along axis `axis` ("journey", "head 2", "d3", "layer 1", "2."):
// tokens by their text, heads and layers counted from 1.
std::string axis_label(const Trace& trace, Axis axis, std::size_t i);
// The label of entry i along axis a of a step: token axes that start later (a cache, a
// block of keys, the last queries) shifted by first_row / first_key; the last axis by the
// step's own labels when it has them.
std::string label_at(const Trace& trace, const Step& step, std::size_t a, std::size_t i);

// Whether the panels of a figure share one colour scale (the SVG, the page) or each has
// its own (the heatmap under each head's table, the explorer's one panel on screen).
enum class PanelScale { together, apart };

struct Figure {
    const Step* step = nullptr;
    std::size_t index = 0;                  // in trace.steps
    std::size_t panels = 1, rows = 0, cols = 0;
    std::vector<std::size_t> offsets;       // where each panel's values start in step->tensor.data
    std::vector<std::string> panel_names;   // "layer 2, head 3", counted from 1 (batches left out); "" for a single panel
    std::vector<std::size_t> panel_batch;   // each panel's batch element (pictures draw batch 0's)
    std::vector<std::size_t> panel_layer, panel_head;  // each panel's layer (a model's shown layer, or 0) and head
    std::vector<std::string> panel_marks;   // each panel's layer kind ("sliding window, W = 4", "no RoPE"), or ""
    std::string row_axis, col_axis;         // "query" and "key", "token" and "feature", "head" and "key", …
    std::vector<std::string> row_labels, col_labels;
    bool attention = false;                 // each entry is an attention cell (query, key): the engine can write it out
    bool token_rows = false;                // rows are tokens of a tokens × features step (Q, K, V, outputs): a chosen cell's rows are there
    std::vector<unsigned char> masked;      // rows×cols: 1 where the step's mask hides the cell (every panel alike); empty: none
    bool weights = false;                   // attention weights: rows sum to 1
    std::vector<ColorScale> scales;         // each panel's scale, resolved, never automatic (apart, panels may differ)
    std::vector<float> lo, hi;              // each panel's scale ends
    std::vector<std::vector<float>> row_top;  // ColorScale::row: each panel's rows' largest shown value

    ColorScale scale(std::size_t panel = 0) const { return scales[panel]; }
    // Values of both signs are drawn on a scale centred at 0, blue to red.
    bool diverging(std::size_t panel = 0) const { return scales[panel] == ColorScale::symmetric; }

    float value(std::size_t panel, std::size_t r, std::size_t c) const;
    // Hidden by the mask, or −∞ (what a masked score is): drawn as masked.
    bool hidden(std::size_t panel, std::size_t r, std::size_t c) const;
    // A value's place on the colour scale, 0…1, for rows r0 … r0 + kr − 1 (a block).
    double at(std::size_t panel, std::size_t r0, std::size_t kr, float v) const;
    Rgb colour(std::size_t panel, double t) const { return diverging(panel) ? diverging_rgb(t) : heat_rgb(t); }
    // Whether panel p has any shown (finite, unmasked) value to colour.
    bool any_shown(std::size_t panel) const;
    // The attention cell an entry shows, or none (a token × feature step).
    std::optional<CellRef> cell(const Trace& trace, std::size_t panel, std::size_t r, std::size_t c) const;
    // The panels of batch element 0, in order: what a picture draws.
    std::vector<std::size_t> first_batch() const;
};

// Steps a figure can show: a result of rank 2 or more with its values.
bool drawable(const Step& step);
// The figure of trace.steps[index] with `asked` (--color-scale) resolved.
Figure figure_of(const Trace& trace, std::size_t index, ColorScale asked, PanelScale panels = PanelScale::together);
// The same for one of trace.steps.
Figure figure_of(const Trace& trace, const Step& step, ColorScale asked, PanelScale panels = PanelScale::together);

// The step a drawing opens on (--svg without --svg-step, the explorer, the page): the model
// view's grid of every head; else the last step its lesson declares the opening one (the
// final weights, after dropout if there was one: Step::opens); else the last token×token step. None when the trace has no token×token step.
std::optional<std::size_t> opening_step(const Trace& trace);

// One drawn cell standing for a kr × kc block of a panel: the mean of its shown values;
// masked when every value of the block is hidden, invalid when it holds NaN.
struct Block {
    enum Kind { value, masked, invalid } kind;
    float mean;
};
Block average(const Figure& figure, std::size_t panel, std::size_t r0, std::size_t c0, std::size_t kr, std::size_t kc);

// Where one attention cell appears: each drawable step holding the same (layer, head,
// query, key), at its own panel, row and column.
struct PathEntry {
    std::size_t step, panel, row, col;
    float value;
};
std::vector<PathEntry> cell_path(const Trace& trace, const CellRef& cell);

}  // namespace attnwalk::app
