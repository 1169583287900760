// --html FILE: the trace as one self-contained page (no network: inline style, inline
// script, the trace itself as the JSON --json prints). The page lists the steps; shows a
// step as heatmaps (one per head: labels, axis names, values in the cells that are big
// enough, hatched masked cells, a colour bar; the layers × heads grid of a model view with
// each layer's kind, a click opens a head); a head view in bertviz's manner (one colour a
// head); and, for a clicked attention cell, the cell written out by the library's
// explanation engine and its value in every step that holds it.
//
// Everything the page shows is computed here, in C++, and handed to the page through the
// --json writer: each step's Figure (figure.hpp: labels, panel names, the mask, the colour
// scale and its ends) as its cells (each value's text, its colour, the written-out cell it
// is), a step with no figure as the text view prints its numbers, and the engine's
// written-out cells, as many as fit a budget (every cell of a chapter-sized trace; for a
// model the heads in order until the budget is spent, which the page says). Every number is
// written as the text view writes it (value_text, at `precision`). The script draws and
// handles input; it computes nothing.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attnwalk/trace.hpp"
#include "section.hpp"
#include "style.hpp"

namespace attnwalk::app {

// The page; `scale` is --color-scale (automatic: as the SVG and the terminal choose),
// `precision` --precision. `explain_budget`: at most this many bytes of written-out cells.
std::string html_of(const Trace& trace, ColorScale scale = ColorScale::automatic, int precision = TextOptions{}.precision,
                    std::size_t explain_budget = 4u << 20);

// The walkthrough as one page: each part's title, paragraph, formula and the command line
// that reruns it, then that part's own page (html_of) in a frame; a list of the parts on top.
std::string html_of(const std::vector<Section>& sections, ColorScale scale = ColorScale::automatic, int precision = TextOptions{}.precision);

}  // namespace attnwalk::app
