// attnwalk explore COMMAND [OPTIONS]: a full-screen view of one panel (a head, a layer's
// head) of one step of COMMAND's trace, with a cursor. Arrows move the cell; a panel
// beside it names the cell, lists it in every step that holds the same attention cell,
// and writes it out with the library's explanation engine (lessons/explainer.hpp), in
// the process. Keys switch the step, the head and the layer; ? lists those that act on
// the step shown (? or Esc closes the list); w shows the explanation over the whole width;
// q quits.
//
// What is drawn comes from the step's Figure (figure.hpp): labels, panel names, the
// layer's kind, the mask, the colour scale. The view is a plain value (ExploreView) that
// `press` moves, which the tests drive without a screen; the screen (ncurses) only draws.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attnwalk/trace.hpp"
#include "figure.hpp"

namespace attnwalk::app {

// The steps one can explore: tensors of rank ≥ 2 with their numbers (no parameters).
std::vector<std::size_t> explorable_steps(const Trace& trace);

// What `press` needs to know of a step: its panels (every index of the axes before the
// last two), how many of them are heads of one layer, and the rows and columns of each.
// first_layer: the model layer its first panel shows (a model's shown layer for a step of
// one layer; 0 for the grid of every layer), so that a new step keeps the layer.
struct ExploreShape {
    std::size_t panels = 1, heads = 1, rows = 1, cols = 1;
    std::size_t first_layer = 0;
};
ExploreShape explore_shape(const Step& step);
ExploreShape explore_shape(const Figure& figure);

// The panel the explorer opens on: the layer and head the command named (--layer, --head:
// the trace's layer_index and head_index) where the figure has them, else the first.
std::size_t opening_panel(const Trace& trace, const Figure& figure);

// escape: Esc alone, which closes the list of keys where it is shown and quits elsewhere.
enum class ExploreKey { up, down, left, right, home, end, next_step, previous_step, next_head, previous_head, next_layer, previous_layer,
                        scroll_down, scroll_up, wide, help, escape, quit, other };

struct ExploreView {
    std::size_t step = 0;   // index into the explorable steps
    std::size_t panel = 0;  // layer · heads + head
    std::size_t row = 0, col = 0;
    std::size_t scroll = 0; // pages the explanation panel is scrolled down (back to 0 on another cell)
    bool wide = false;      // the explanation over the whole width, the heatmap hidden (w)
    bool help = false;      // the list of keys is shown
    bool quit = false;
};

// The view after a key. Moves stay inside the step; a new step keeps the head, layer and
// cell where they still exist. Home and End go to the row's first and last column. With
// the list of keys shown, ? and Esc close it; a key that acts closes it too (the screen
// then shows what the key did), q still quits.
ExploreView press(ExploreView view, ExploreKey key, const std::vector<ExploreShape>& shapes);

// The lines of the panel beside the heatmap, each at most `width` columns: the cell named
// (its axes' names, counted from 1), its panel, the cell in every step that holds the same
// attention cell (at that step's own coordinates; a mask's value with its meaning, the
// step's legend), its row's sum, then the cell written
// out by the explanation engine; every number as the text view writes it at `precision`.
std::vector<std::string> panel_lines(const Trace& trace, const Figure& figure, const ExploreView& view, std::size_t width,
                                     int precision = TextOptions{}.precision);

// A line of text wrapped to `width` columns: at spaces where it can, the continuation
// lines indented two more than the line itself.
std::vector<std::string> wrap_line(const std::string& line, std::size_t width);

// The keys of the status line that do something on this step: "arrows cell · s/S step ·
// h/H head · l/L layer · PgDn more · ? keys · q quit", without those that do nothing here.
std::string key_bar(const ExploreShape& shape, std::size_t steps, bool more_pages);

// The list ? shows: each key that acts on this step with what it does, and how to close
// the list, each line at most 42 columns (the box is 46 wide).
std::vector<std::string> key_list(const ExploreShape& shape, std::size_t steps, bool more_pages);

// Where the explorer draws on a screen `columns` × `lines`: rows 0 and 1 the title (the
// step's id, its place, its layer and head; then its title and formula), row 2 the axes,
// then the key labels and the cells; at the bottom the colour bar, two rows and
// `extra_lines` more of notes (the scroll's place, the step's legend) and the keys. The heatmap takes the left half (34
// columns at least), its cells as wide and as tall as that allows (a cell about square),
// each with its value where 4 characters fit; every key is labelled, abbreviated, on two
// alternating rows when a cell is too narrow for a label. The panel takes the rest.
struct ExploreLayout {
    std::size_t label_w = 3;                // the row labels' width
    std::size_t cell_w = 2, cell_h = 1;     // a cell's width (with its one column of gap) and height
    bool numbers = false;                   // values written in the cells
    std::size_t label_rows = 1;             // rows of key labels: 2 when they alternate
    int top = 4, bottom = 20;               // the first row of cells; the colour bar's row
    std::size_t rows_fit = 1, cols_fit = 1; // cells on screen at once
    int panel_x = 40, panel_w = 39;         // the panel beside the heatmap
};
ExploreLayout explore_layout(const Figure& figure, int columns, int lines, std::size_t extra_lines = 0);
// The label of key column `c` as the explorer writes it in `room` columns ("head 12" as
// "h12", a token abbreviated: "<|be…").
std::string key_label(const Figure& figure, std::size_t c, std::size_t room);

// Runs the explorer on `trace` (COMMAND [OPTIONS] names it in the title), its numbers at
// `precision` (--precision), as the text view's. Throws UsageError without a terminal. Returns the exit code: 0, or 128 + N after signal N.
int explore(const Trace& trace, const std::vector<std::string>& command_line, int precision = TextOptions{}.precision);

}  // namespace attnwalk::app
