// The text view's parts that its files share (render_text.cpp, heads_grid.cpp,
// sums_text.cpp, text_header.cpp): the elision of long axes, which steps are heatmaps, the model view's
// grid, a written-out sum. Internal to app/render/.
#pragma once

#include <cstddef>
#include <ostream>
#include <string>
#include <vector>

#include "attnwalk/trace.hpp"
#include "style.hpp"

namespace attnwalk::app {

// Long axes are elided like PyTorch's print: the first and last three entries around a
// gap (npos), unless --full.
inline constexpr std::size_t elide_above = 16;
inline constexpr std::size_t edge_items = 3;
inline constexpr std::size_t gap = static_cast<std::size_t>(-1);

inline std::vector<std::size_t> shown(std::size_t n, const TextOptions& opt) {
    std::vector<std::size_t> idx;
    const bool elide = !opt.full && n > elide_above;
    for (std::size_t i = 0; i < n; ++i) {
        if (elide && i == edge_items) {
            idx.push_back(gap);
            i = n - edge_items;
        }
        idx.push_back(i);
    }
    return idx;
}

// A token×token step (its last two axes).
bool is_token_matrix(const Step& step);
// What the text view and --svg-step draw as a heatmap: a token×token matrix, or one number
// per layer and head (the heads' roles and statistics: a layers × heads grid).
bool is_heat_matrix(const Step& step);
// The model view's grid (Step::heads_grid, layer × head × T × T) as text: one small
// heatmap per head, side by side as the terminal allows (heads_grid.cpp).
void print_grid(const Step& step, const TextOptions& opt, std::ostream& out);
// The header: the tokens and the options in effect, a model in one line (text_header.cpp).
std::string header_text(const Trace& trace, const TextOptions& opt);
// One written-out sum, its continuation lines aligned under the '=' (sums_text.cpp).
std::string expansion_line(const Expansion& e, std::size_t label_width, const std::string& indent, const TextOptions& opt);

}  // namespace attnwalk::app
