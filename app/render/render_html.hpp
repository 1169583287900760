// --html FILE: the trace as one self-contained page (no network: inline style, inline
// script, the trace itself as the JSON --json prints). The page lists the steps; shows a
// step as heatmaps (one per head, values on hover; the layers × heads grid of a model
// view, a click opens a head); a head view in bertviz's manner (tokens in two columns,
// lines as strong as the weights, hover a token to light its lines, heads by colour); and
// the path of a clicked cell: its value in every token×token step, its row, the query and
// key it came from. The script reads the numbers; it computes none.
#pragma once

#include <string>

#include "attnwalk/trace.hpp"
#include "render_text.hpp"

namespace attnwalk::app {

// The page; `scale` is --color-scale (automatic: as the SVG and the terminal choose).
std::string html_of(const Trace& trace, ColorScale scale = ColorScale::automatic);

}  // namespace attnwalk::app
