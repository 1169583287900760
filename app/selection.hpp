// --steps and --compact: which steps of a trace are shown.
#pragma once

#include <string>
#include <vector>

#include "attnwalk/trace.hpp"

namespace attnwalk::app {

// Keeps the steps `patterns` name, in trace order. A pattern is an id, a glob with '*'
// (explain_*), a range A..B of ids in trace order (either end may be left out), or `last`
// (the final step). A pattern that names no step is a UsageError listing the trace's ids.
Trace select_steps(Trace trace, const std::vector<std::string>& patterns);

// --compact: the steps whose ids are in `headline`, and any explain_* steps (a cell that
// was asked for).
Trace compact(Trace trace, const std::vector<std::string>& headline);

}  // namespace attnwalk::app
