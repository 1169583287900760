// Renderers: two views of one trace. They format; they never compute.
#pragma once

#include <ostream>

#include "attnwalk/trace.hpp"

namespace attnwalk::app {

struct TextOptions {
    int precision = 4;
    bool show_weights = false;  // parameter steps (W_query, ...) are hidden unless asked for
};

void render_text(const Trace& trace, const TextOptions& options, std::ostream& out);
void render_json(const Trace& trace, std::ostream& out);

}  // namespace attnwalk::app
