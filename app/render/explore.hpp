// attnwalk explore COMMAND [OPTIONS]: a full-screen view of one head's heatmap of one step
// of COMMAND's trace, with a cursor. Arrows move the cell; a panel shows the cell's path
// through the steps and, where COMMAND has --explain, the cell written out as --explain
// writes it. Keys switch the step, the head and the layer; ? lists them; q quits.
//
// The view is a plain value (ExploreView) that `press` moves, which the tests drive
// without a screen; the screen (ncurses) only draws it.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "attnwalk/trace.hpp"

namespace attnwalk::app {

// The steps one can explore: tensors of rank ≥ 2 with their numbers (no parameters).
std::vector<std::size_t> explorable_steps(const Trace& trace);

// What `press` needs to know of a step: its panels (every index of the axes before the
// last two), how many of them are heads of one layer, and the rows and columns of each.
struct ExploreShape {
    std::size_t panels = 1, heads = 1, rows = 1, cols = 1;
};
ExploreShape explore_shape(const Step& step);

enum class ExploreKey { up, down, left, right, next_step, previous_step, next_head, previous_head, next_layer, previous_layer,
                        scroll_down, scroll_up, help, quit, other };

struct ExploreView {
    std::size_t step = 0;   // index into the explorable steps
    std::size_t panel = 0;  // layer · heads + head
    std::size_t row = 0, col = 0;
    std::size_t scroll = 0; // pages the explanation panel is scrolled down (back to 0 on another cell)
    bool help = false;      // the list of keys is shown
    bool quit = false;
};

// The view after a key. Moves stay inside the step; a new step keeps the head, layer and
// cell where they still exist.
ExploreView press(ExploreView view, ExploreKey key, const std::vector<ExploreShape>& shapes);

// The lines of the panel beside the heatmap: the cell named, its value in every step of the
// same shape, its row. (The written-out explanation is added by the screen.)
std::vector<std::string> cell_path(const Trace& trace, const std::vector<std::size_t>& steps, const ExploreView& view);

// Runs the explorer on `trace`; `command_line` is COMMAND [OPTIONS] as given (rerun with
// --explain for the written-out cell). Throws UsageError without a terminal.
int explore(const Trace& trace, const std::vector<std::string>& command_line);

}  // namespace attnwalk::app
