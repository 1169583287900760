// How a trace is drawn, for every view (the text view, its heatmaps, the SVG, the
// explorer, the page): the palette, the colour scale, the text view's options, and the
// one way a number is written.
#pragma once

#include <charconv>
#include <cmath>
#include <cstddef>
#include <string>

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
    bool show_config = false;   // --show-config: a loaded model's every field in the header (else one line of it)
    std::size_t fit_rows = 0;   // --compact: the rows the view fits (two screens), by leaving out, in turn, the heatmaps
                                // before the last token×token step's, that one, the notes past their first sentence, the notes
    Palette palette = Palette::none;
    ColorScale color_scale = ColorScale::automatic;
    std::size_t columns = 80;   // terminal width the heatmaps fit into
    std::size_t lines = 0;      // terminal height the heatmaps fit into (0: unknown, 40 rows at most)
};

// The one way a value is written, in the text view, the explorer, the SVG and the page
// alike: `precision` decimals in fixed point, or beyond 1e10 (an overflow's aftermath)
// scientific, as PyTorch would; "nan", "inf", "-inf". to_chars rounds the exact value as
// printf's %.*f and %.*e do, without parsing a format.
inline std::string value_text(float v, int precision) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    char buf[64];
    const auto r = std::to_chars(buf, buf + sizeof buf, static_cast<double>(v),
                                 std::fabs(v) < 1e10f ? std::chars_format::fixed : std::chars_format::scientific, precision);
    return std::string(buf, r.ptr);
}

}  // namespace attnwalk::app
