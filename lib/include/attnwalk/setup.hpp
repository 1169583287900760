// What every walk does first: check the options against the input, stack the batch,
// record the parameters, and build the query/key/value projections.
#pragma once

#include <optional>
#include <string>

#include "attnwalk/embeddings.hpp"
#include "attnwalk/projection.hpp"
#include "attnwalk/recorder.hpp"
#include "attnwalk/rng.hpp"
#include "attnwalk/walk.hpp"

namespace attnwalk {

struct Setup {
    Trace trace;
    Cube x;                        // (B,T,d_in)
    std::optional<Generator> gen;  // started by --seed; later draws continue its stream
    std::size_t d_in = 0;
};

// Starts a trace for `command`: validates and records the common options.
Setup start_walk(const std::string& command, const Embeddings& input, const WalkOptions& options);

// Resolves --query (an index or a token's text) to a row index; `option` names the
// option in the error. Throws UsageError.
std::size_t resolve_query(const std::string& query, const std::vector<std::string>& tokens,
                          const std::string& option = "--query");

// The projections for single-head walks: from --weights, drawn from --seed, or none.
std::optional<QKV> build_qkv(Setup& setup, const WalkOptions& options);

// Records W_query, W_key, W_value (and biases) as parameter steps, `prefix` before the
// ids (e.g. "head0." for the wrapper's heads).
void record_qkv_parameters(Recorder& rec, const QKV& qkv, const std::string& prefix, const std::string& title_suffix);

// Ends every walk: checks that nothing overflowed (check_finite), then applies
// --summary and --timing.
Trace finish(Trace trace, const WalkOptions& options);

// The text of a float for titles and notes ("0.5", "1.4142").
std::string format_number(double value);

}  // namespace attnwalk
