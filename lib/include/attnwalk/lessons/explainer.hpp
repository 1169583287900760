// The explanation engine's face: any cell of any attention step a walk recorded, and any
// entry of a step with arithmetic of its own (a patching grid's cell, an attribution term),
// written out as explain_* steps (docs/json.md) after the walk, in the process. A cell asked
// for on the command line, the explorer and the page all take their written-out cells from here.
// Light: trace.hpp only (app/ includes it).
#pragma once

#include <cstddef>
#include <memory>
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

// One entry of a step that is no attention's cell but has arithmetic of its own to write
// out (a patching grid's cell, a direct logit attribution term): the step's id and the
// entry's place in its tensor (row-major, from 0).
struct EntryRef {
    std::string step;
    std::size_t index = 0;
};

class Explainer {
public:
    virtual ~Explainer() = default;
    // The cell written out as explain_* steps, or nothing when this explainer does not hold
    // it (another layer or head). `tokens` label the steps.
    virtual std::vector<Step> explain(const CellRef& cell, const std::vector<std::string>& tokens) const = 0;
    // The (layer, head) pairs it holds.
    virtual std::vector<std::pair<std::size_t, std::size_t>> covered() const = 0;
    // An entry written out, or nothing when this explainer does not hold it.
    virtual std::vector<Step> explain_entry(const EntryRef& /*entry*/, const std::vector<std::string>& /*tokens*/) const { return {}; }
    // Whether it writes out entries of the step with this id (the page asks it before it writes them all).
    virtual bool writes_out(const std::string& /*step*/) const { return false; }
};

// Two explainers as one (either may be null): each cell and entry is asked of the first, then
// of the second.
std::shared_ptr<const Explainer> combined(std::shared_ptr<const Explainer> first, std::shared_ptr<const Explainer> second);

// The cell of the attention that a step's entry shows: panel `panel` (the index over the
// axes before the last two, as renderers count panels), row `row`, column `col`. None when
// the step is not about queries and keys (a token × feature step, a parameter).
std::optional<CellRef> cell_of(const Trace& trace, const Step& step, std::size_t panel, std::size_t row, std::size_t col);

// The cell written out (trace.explainer), or nothing.
std::vector<Step> explain(const Trace& trace, const CellRef& cell);
// What entry (panel, row, col) of a step writes out, as renderers count them: its attention's
// cell (cell_of), else the entry's own arithmetic; nothing when neither is held.
std::vector<Step> explain_at(const Trace& trace, const Step& step, std::size_t panel, std::size_t row, std::size_t col);

}  // namespace attnwalk
