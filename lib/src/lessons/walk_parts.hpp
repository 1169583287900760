// What the walks of walk.cpp and walk_beyond.cpp share: the axes of their steps, the
// start and finish of a trace, the parameter steps. Internal to lib/.
#pragma once

#include <string>
#include <vector>

#include "attnwalk/ops/attention.hpp"
#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/lessons/recorder.hpp"
#include "attnwalk/lessons/lessons.hpp"

namespace attnwalk::walk_parts {

extern const std::vector<Axis> tokens_features, tokens_tokens, head_tokens_features, head_tokens_tokens;

// A trace for `command` on this input: tokens, the input's params, the weights' origin.
Trace start_trace(const std::string& command, const Embeddings& input, const AttentionWeights* weights);
// Adds each phase's time to the step of `trace` that shows its result (queries, keys,
// values, scores, ..., output), for a timed trace: the walks record after the forward.
void charge_forward_time(Trace& trace, const Forward& f);
// Checks that nothing overflowed (check_finite), then keeps the trace as asked.
Trace finish(Trace trace, const Recording& recording, const Forward* f = nullptr);
std::string batch_prefix(const Trace& trace, std::size_t b);
// Head 0 of a (B,H,R,·) tensor: (B,R,·); and its row 0: (B,·).
Cube head0(const Hyper& t);
Mat row0(const Hyper& t);
// W_query, W_key, W_value (and biases) as parameter steps; `prefix` before the ids.
void record_parameters(Recorder& rec, const Linear& q, const Linear& k, const Linear& v, const std::string& prefix,
                       const std::string& title_suffix);
// "heads 0–1 → 0, heads 2–3 → 1": which query heads share each key/value head.
std::string grouping(std::size_t H, std::size_t G);
// 1 where query i may attend to key j (masked_out).
Mat band_mask(std::size_t T, bool causal, std::size_t window);

}  // namespace attnwalk::walk_parts
