// The walkthrough's parts: what each teaches and the command line that computes it.
#pragma once

#include <string>
#include <vector>

namespace attnwalk::app {

struct SectionPlan {
    const char* id;
    const char* title;
    const char* explanation;
    const char* formula;
    const char* args;  // the subcommand and its options, without the input
};

const std::vector<SectionPlan>& walkthrough_plan();
// The optional part beyond the chapter (walkthrough --beyond).
const std::vector<SectionPlan>& beyond_plan();

}  // namespace attnwalk::app
