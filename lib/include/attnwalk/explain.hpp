// --explain I,J: one cell of the attention, every number that goes into it, so that a
// student can redo it by hand. The values are read from the walk's own tensors and the
// softmax is redone with the same float operations as softmax.hpp, so each number here
// equals the one in the matching step, bit for bit.
#pragma once

#include <optional>
#include <string>

#include "attnwalk/projection.hpp"
#include "attnwalk/recorder.hpp"

namespace attnwalk {

enum class ExplainDepth { score, weight, context };

// What the walk computed, batch element 0 (shapes in comments; d = d_out or d_in).
struct ExplainInputs {
    std::size_t i = 0, j = 0;   // the query row and the key column
    const Cube* x = nullptr;    // (B,T,d_in) the embeddings
    const QKV* qkv = nullptr;   // the projections, or null when Q = K = V = X
    const Cube* q = nullptr;    // (B,T,d)
    const Cube* k = nullptr;    // (B,T,d)
    const Cube* v = nullptr;    // (B,T,d)
    const Cube* scores = nullptr;   // (B,T,T) what the softmax reads: scaled, and masked with −∞ if causal
    const Cube* raw = nullptr;      // (B,T,T) ω before scaling
    const Cube* weights = nullptr;  // (B,T,T) the softmax of `scores`
    const Cube* context = nullptr;  // (B,T,d) weights·V
    float scale = 1.0f;
    std::string scale_text;
    bool causal = false;
};

// Appends the explain_* steps (documented in docs/json.md) down to `depth`.
void explain_cell(Recorder& rec, const ExplainInputs& in, ExplainDepth depth);

// Parses "I,J": each an index or a token's text. Throws UsageError.
std::pair<std::size_t, std::size_t> parse_cell(const std::string& text, const std::vector<std::string>& tokens);

}  // namespace attnwalk
