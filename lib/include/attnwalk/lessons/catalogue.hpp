// The step catalogue: every step id a trace can hold, and what it means. This list is
// the JSON contract (docs/json.md documents exactly these ids; a test holds the two
// together), and the Recorder refuses an id that is not in it. Titles and formulas are
// written by the walks, with the numbers they show.
#pragma once

#include <string>
#include <vector>

namespace attnwalk {

struct StepInfo {
    const char* id;
    const char* meaning;
};

const std::vector<StepInfo>& step_catalogue();

// The entry for `id`; ids of the wrapper's per-head weights ("head1.W_query") are
// found under "headN.W_query". Null when the id is not in the catalogue.
const StepInfo* find_step(const std::string& id);

}  // namespace attnwalk
