// The explanation engine's face: any cell of any attention step a walk recorded, written
// out as explain_* steps (docs/json.md) after the walk, in the process. A cell asked for on
// the command line, the explorer and the page all take their written-out cells from here.
// Light: trace.hpp only (app/ includes it).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnwalk/trace.hpp"

namespace attnwalk {

// One cell of an attention: a layer's head (layer 0 outside a model), a query and a key
// (positions among the trace's tokens, from 0).
struct CellRef {
    std::size_t layer = 0, head = 0, query = 0, key = 0;
    bool operator==(const CellRef& o) const { return layer == o.layer && head == o.head && query == o.query && key == o.key; }
};

class Explainer {
public:
    virtual ~Explainer() = default;
    // The cell written out as explain_* steps, or nothing when this explainer does not hold
    // it (another layer or head). `tokens` label the steps.
    virtual std::vector<Step> explain(const CellRef& cell, const std::vector<std::string>& tokens) const = 0;
    // The (layer, head) pairs it holds.
    virtual std::vector<std::pair<std::size_t, std::size_t>> covered() const = 0;
};

// The cell of the attention that a step's entry shows: panel `panel` (the index over the
// axes before the last two, as renderers count panels), row `row`, column `col`. None when
// the step is not about queries and keys (a token × feature step, a parameter).
std::optional<CellRef> cell_of(const Trace& trace, const Step& step, std::size_t panel, std::size_t row, std::size_t col);

// The cell written out (trace.explainer), or nothing.
std::vector<Step> explain(const Trace& trace, const CellRef& cell);

}  // namespace attnwalk
