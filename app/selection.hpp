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

// When `id` is a step the trace's command declares but this run did not record (an option
// records it, as --circuits records circuit_ov, or another kind of input): a hint that says so,
// "; circuit_ov is a step of model (…) that this run did not record: …". Empty otherwise.
std::string unrecorded_hint(const Trace& trace, const std::string& id);

// --compact: the steps whose ids are in `headline`, and any explain_* steps (a cell that
// was asked for).
Trace compact(Trace trace, const std::vector<std::string>& headline);

}  // namespace attnwalk::app
