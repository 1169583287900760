// The text view of a trace (tables, heatmaps) and its --svg picture. They format; they
// never compute.
#pragma once

#include <cstddef>
#include <functional>
#include <ostream>
#include <string>
#include <vector>

#include "attnwalk/trace.hpp"
#include "section.hpp"

namespace attnwalk::app {

enum class Palette { none, ansi256, truecolor };  // none: Unicode shade blocks
// How heatmap values map to colours (--color-scale), in the terminal and the SVG alike:
// automatic picks per figure (weights on 0…1, or each row on its own scale when cells are
// too many to print numbers in; values of both signs symmetric about 0; else min…max).
enum class ColorScale { automatic, range, each, unit, symmetric, row };

struct TextOptions {
    int precision = 4;
    bool show_weights = false;  // parameter steps (W_query, ...) are hidden unless asked for
    bool torch = false;         // --format torch: tensors as PyTorch prints them
    bool full = false;          // --full: no elision of long axes
    bool heatmap = true;        // draw token×token steps as heatmaps under their numbers
    std::size_t fit_rows = 0;   // --compact: the rows the view fits (two screens), by leaving out, in turn, the heatmaps
                                // before the last token×token step's, that one, the notes past their first sentence, the notes
    Palette palette = Palette::none;
    ColorScale color_scale = ColorScale::automatic;
    std::size_t columns = 80;   // terminal width the heatmaps fit into
    std::size_t lines = 0;      // terminal height the heatmaps fit into (0: unknown, 40 rows at most)
};

// Called before each item of the text view (a step, or steps shown side by side): its
// index and how many there are. Returning false stops the output there.
using BeforeItem = std::function<bool(std::size_t item, std::size_t items)>;
void render_text(const Trace& trace, const TextOptions& options, std::ostream& out, const BeforeItem& before_item = {});
// --svg: the heatmap of a token×token step, one panel per head of batch element 0: the
// step `step_id` (--svg-step), or the final weights (weights_dropped, else weights, else
// the last token×token step). Throws UsageError when there is none (e.g. with --query).
std::string svg_of_weights(const Trace& trace, const TextOptions& options, const std::string& step_id = "");

// `attnwalk walkthrough`: every section with a banner, its paragraph and the command that
// reruns it. `rerun_suffix` is appended to each rerun command (the input options).
// `pause` runs before every step but the first, with a few words on what comes next
// (--step): it stops the output, lets it go on, or asks for a fresh screen, on which the
// part's header and paragraph are printed again before the step. `paged`: each page fits
// options.lines (a step too tall loses its heatmap there). A step with the same numbers as
// one of an earlier part is named, not printed again.
enum class PauseAnswer { go_on, next_screen, stop };
using Pause = std::function<PauseAnswer(const std::string& next)>;
void render_text(const std::vector<Section>& sections, const TextOptions& options, const std::string& rerun_suffix,
                 const Pause& pause, std::ostream& out, bool paged = false);

}  // namespace attnwalk::app
