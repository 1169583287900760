// A part of `attnwalk walkthrough`, as its renderers read it.
#pragma once

#include <string>

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

}  // namespace attnwalk::app
