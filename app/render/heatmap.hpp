// Heatmaps of token×token steps: in the terminal (colour backgrounds or shade blocks)
// and as SVG for slides. One colour scale for both.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "figure.hpp"
#include "render_text.hpp"

namespace attnwalk::app {

// The colour scale of a figure when none is asked for: attention weights on 0…1 up to 16
// tokens and each row on 0…its max beyond; values of both signs symmetric about 0; else
// min…max. And the legend's words for a scale (never automatic).
ColorScale automatic_scale(bool weights, std::size_t longest, bool any_finite, float min, float max);
std::string scale_words(ColorScale kind);

// Draws panel `panel` of a figure fitted to options.columns and options.lines; long axes
// are averaged in blocks (figure.hpp's average). Masked cells (the figure's mask, or −∞)
// and NaN have glyphs of their own, named in the legend.
void print_heatmap(const Figure& figure, std::size_t panel, const TextOptions& options, std::ostream& out);

// A self-contained SVG document: the figure's panels (in `order`, each titled by `titles`)
// in a grid, each with its token labels and query/key axes, masked cells hatched, one
// shared colour bar with min and max, and the title wrapped to the drawing's width.
std::string heatmap_svg(const Figure& figure, const std::vector<std::size_t>& order, const std::vector<std::string>& titles,
                        const std::string& title, int precision);

// One SVG draws at most this many cells (about 75 bytes each: 75 MB); more is no picture
// anyone can read, and a 1000-token model view would be gigabytes.
constexpr double svg_max_cells = 1e6;
// Refuses (UsageError) a picture of `cells` cells over the limit; `what` says what they
// are (e.g. "12 heads × 1000 × 1000 tokens"), `instead` how to draw fewer.
void check_svg_cells(double cells, const std::string& what, const std::string& instead);

}  // namespace attnwalk::app
