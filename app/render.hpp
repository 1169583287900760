// Renderers: views of one trace. They format; they never compute.
#pragma once

#include <ostream>
#include <string>

#include <functional>
#include <vector>

#include "attnwalk/trace.hpp"

namespace attnwalk::app {

// One part of `attnwalk walkthrough`: a command line of the chapter, its trace, and what
// it teaches.
struct Section {
    std::string id;           // scores, softmax, context, projections, causal, dropout, mha
    std::string title;
    std::string explanation;  // one paragraph
    std::string formula;      // the section's math in one line
    std::string args;         // the subcommand and options that rerun this section alone
    Trace trace;
};

enum class Palette { none, ansi256, truecolor };  // none: Unicode shade blocks

struct TextOptions {
    int precision = 4;
    bool show_weights = false;  // parameter steps (W_query, ...) are hidden unless asked for
    bool torch = false;         // --format torch: tensors as PyTorch prints them
    bool full = false;          // --full: no elision of long axes
    bool heatmap = true;        // draw token×token steps as heatmaps under their numbers
    Palette palette = Palette::none;
    std::size_t columns = 80;   // terminal width the heatmaps fit into
    std::size_t lines = 0;      // terminal height the heatmaps fit into (0: unknown, 40 rows at most)
};

// Called before each item of the text view (a step, or steps shown side by side): its
// index and how many there are. Returning false stops the output there.
using BeforeItem = std::function<bool(std::size_t item, std::size_t items)>;
void render_text(const Trace& trace, const TextOptions& options, std::ostream& out, const BeforeItem& before_item = {});
// How --json writes inf, −∞ and NaN: as the strings "inf", "-inf", "nan" (the default),
// as null, or as Python's literals Infinity, -Infinity, NaN (not JSON, but what
// json.loads reads, so that torch.tensor(json.loads(...)) works).
enum class NonFinite { string, null, literal };

void render_json(const Trace& trace, std::ostream& out, NonFinite non_finite = NonFinite::string);

// --svg: the heatmap of a token×token step, one panel per head of batch element 0: the
// step `step_id` (--svg-step), or the final weights (weights_dropped, else weights, else
// the last token×token step). Throws UsageError when there is none (e.g. with --query).
std::string svg_of_weights(const Trace& trace, const TextOptions& options, const std::string& step_id = "");

// `attnwalk walkthrough`: every section with a banner, its paragraph and the command that
// reruns it. `rerun_suffix` is appended to each rerun command (the input options).
// `pause` runs before every step but the first, with a few words on what comes next
// (--step): it stops the output, lets it go on, or asks for a fresh screen, on which the
// part's banner and paragraph are printed again before the step.
enum class PauseAnswer { go_on, next_screen, stop };
using Pause = std::function<PauseAnswer(const std::string& next)>;
void render_text(const std::vector<Section>& sections, const TextOptions& options, const std::string& rerun_suffix,
                 const Pause& pause, std::ostream& out);
void render_json(const std::vector<Section>& sections, std::ostream& out, NonFinite non_finite = NonFinite::string);

// A tensor the way PyTorch 1.13 prints it (`repr(t)` of a float32 CPU tensor, default
// print options): "tensor([[0.2098, 0.2006, ...]])".
std::string torch_repr(const Tensor& tensor);

}  // namespace attnwalk::app
