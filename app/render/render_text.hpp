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
#include "style.hpp"

namespace attnwalk::app {

// Called before each item of the text view (a step, or steps shown side by side): its
// index and how many there are. Returning false stops the output there.
using BeforeItem = std::function<bool(std::size_t item, std::size_t items)>;
void render_text(const Trace& trace, const TextOptions& options, std::ostream& out, const BeforeItem& before_item = {});
// A step's numbers as the text view prints them, without its heading and note: its
// written-out sums and its tensor, or its statistics when it is a summary (what the page
// shows of a step it draws no heatmap of, and of a written-out cell's steps).
std::string step_numbers_text(const Trace& trace, const Step& step, const TextOptions& options);
// --svg: the heatmap of a token×token step, one panel per head of batch element 0: the
// step `step_id` (--svg-step), or the final weights (weights_dropped, else weights, else
// the last token×token step). Throws UsageError when there is none (e.g. with --query).
std::string svg_of_weights(const Trace& trace, const TextOptions& options, const std::string& step_id = "");

// `attnwalk walkthrough`: every section with a banner, its paragraph and the command that
// reruns it. `rerun_suffix` is appended to each rerun command (the input options).
// `pause` runs before every step but the first, with a few words on what comes next
// (--step): it stops the output, lets it go on, or waits and readies the screen: a fresh one
// when `clear` (on which the part's header is printed again before the step), else the same
// one, the step going below the last (the prompt's line taken back). `paged`: each screen
// fits options.lines: a part opens on a fresh screen with its paragraph, once; a step goes
// below the steps before it while it fits, else on a fresh screen; it loses its heatmap
// only when too tall even there. A step with the same numbers as one of an earlier part is
// named, not printed again.
enum class PauseAnswer { go_on, next_screen, stop };
using Pause = std::function<PauseAnswer(const std::string& next, bool clear)>;
void render_text(const std::vector<Section>& sections, const TextOptions& options, const std::string& rerun_suffix,
                 const Pause& pause, std::ostream& out, bool paged = false);

}  // namespace attnwalk::app
