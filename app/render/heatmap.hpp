// Heatmaps of token×token steps: in the terminal (colour backgrounds or shade blocks)
// and as SVG for slides. One colour scale for both.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "render_text.hpp"

namespace attnwalk::app {

struct Rgb {
    int r, g, b;
};
// The colour scale, t in [0, 1]: dark violet (low) through teal to yellow (high), like viridis.
Rgb heat_rgb(double t);
// The nearest colour of the 256-colour palette's 6×6×6 cube.
int xterm256(Rgb c);

// One row-major matrix with its labels, as a renderer sees it.
struct HeatmapPanel {
    std::string title;
    const float* data;
    std::size_t rows, cols;
    std::vector<std::string> row_labels, col_labels;
    const float* mask = nullptr;  // rows×cols, 0 = masked (the trace's causal mask), or none
    bool weights = false;         // attention weights (rows sum to 1): the 0…1 scale suits them
};

// The colour scale of a figure when none is asked for: attention weights on 0…1 up to 16
// tokens and each row on 0…its max beyond; values of both signs symmetric about 0; else
// min…max. And the legend's words for a scale (never automatic).
ColorScale automatic_scale(bool weights, std::size_t longest, bool any_finite, float min, float max);
std::string scale_words(ColorScale kind);

// Draws the panel fitted to options.columns and options.lines; long axes are averaged in
// blocks. Masked cells (−∞, or 0 where the panel's mask is 0) and NaN have glyphs of their
// own, named in the legend.
void print_heatmap(const HeatmapPanel& panel, const TextOptions& options, std::ostream& out);

// A self-contained SVG document: the panels in a grid, each with its token labels and
// query/key axes, masked cells hatched, one shared colour bar with min and max, and the
// title wrapped to the drawing's width.
std::string heatmap_svg(const std::vector<HeatmapPanel>& panels, const std::string& title, int precision,
                        ColorScale scale = ColorScale::automatic);

// One SVG draws at most this many cells (about 75 bytes each: 75 MB); more is no picture
// anyone can read, and a 1000-token model view would be gigabytes.
constexpr double svg_max_cells = 1e6;
// Refuses (UsageError) a picture of `cells` cells over the limit; `what` says what they
// are (e.g. "12 heads × 1000 × 1000 tokens"), `instead` how to draw fewer.
void check_svg_cells(double cells, const std::string& what, const std::string& instead);

}  // namespace attnwalk::app
