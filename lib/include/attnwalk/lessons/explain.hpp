// One cell of the attention written out: every number that goes into it, so that a
// student can redo it by hand. Everything is read from the forward pass that computed
// the matrices (the projections, the score, the row's max and sum, the weight, the
// context); only the exponentials of the one row are evaluated again for display,
// with the same float operation as the softmax, so each number equals the matrices'
// bit for bit.
#pragma once

#include <string>

#include "attnwalk/ops/attention.hpp"
#include "attnwalk/lessons/recorder.hpp"
#include "attnwalk/lessons/lessons.hpp"

namespace attnwalk {

// What the scores are divided by, as the lessons write it.
struct Scale {
    float value = 1.0f;
    std::string symbol;  // in formulas: "√d_k", or the number given
    std::string words;   // in titles: "√d_k = √2", or the number given
};

enum class ExplainDepth { score, weight, context };

// Appends the explain_* steps (documented in docs/json.md) down to `depth`, for batch
// element 0 and head `head` of a forward over every query row. `x` is the input (B,T,d_in).
void explain_cell(Recorder& rec, const Cell& cell, const Cube& x, const AttentionWeights* weights, const Forward& f,
                  const Scale& scale, ExplainDepth depth, std::size_t head = 0);

}  // namespace attnwalk
