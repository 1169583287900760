// What every subcommand shares: the input and output options, turning them into values
// for the library (the input embeddings, the weights, the random streams), and the
// defaults that belong to the command line. Each subcommand (app/commands/) adds its own
// options and one call into lib/.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>

#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/lessons/lessons.hpp"
#include "options.hpp"
#include "render/render_text.hpp"

namespace attnwalk::app {

// Options every command has, and what the chosen command leaves for cli.cpp to run.
struct Shell {
    // input
    std::string input;  // empty = the built-in example
    std::optional<std::string> sentence;
    std::optional<std::string> vocab;
    std::optional<std::size_t> batch;  // --batch N; given (even 1), every tensor keeps its batch axis
    std::string max_memory = "4G";
    double max_work = 1e12;  // multiply-adds (an exp counts 16): about half a minute here
    // output
    bool json = false;
    std::string json_nonfinite = "string";
    TextOptions text;
    std::string format = "text";
    std::string color = "auto";
    std::string color_scale = "auto";  // --color-scale: TextOptions::color_scale
    bool no_heatmap = false;
    std::optional<std::string> svg;
    std::string svg_step;            // --svg-step: the step drawn (default: the final weights)
    std::optional<std::string> html; // --html FILE: the whole trace as one self-contained page
    std::optional<std::string> npy;  // --npy DIR: each step's tensor as DIR/ID.npy
    std::vector<std::string> steps;  // --steps: the steps shown (ids, globs, ranges, last)
    bool compact = false;            // --compact: the command's headline steps only
    Recording recording;
    // walkthrough
    bool step = false;
    bool beyond = false;  // walkthrough --beyond
    const Embeddings* preloaded = nullptr;  // walkthrough sections reuse the input it read once

    // Set by the chosen subcommand: builds its trace (none for walkthrough), and names the
    // steps its lesson is about (--compact).
    std::function<Trace()> walk;
    std::vector<std::string> headline;
    bool walkthrough = false;
    // attnwalk explore COMMAND [OPTIONS]: the command line explored (the walk's trace goes
    // to the explorer instead of a renderer); empty otherwise.
    std::vector<std::string> explore;
    // The options the command line names, when only those are built (options.hpp); null:
    // every option.
    NamedOptions* named = nullptr;
};

// Checks of option values, in the type used: a whole number ≥ min (no sign, no
// overflow), a non-empty text.
CLI::Validator whole_number(std::uint64_t min);
CLI::Validator non_empty();
// A check of a number option: `ok` on the value read as a double, else `expected`.
CLI::Validator number_check(const char* name, bool (*ok)(double), const std::string& expected);
// The library's checks of values the trace keeps as float32 (lessons.hpp) as option checks:
// is_positive_float32 (--scale, --temperature), is_dropout_rate (--dropout, --dropout-p).
CLI::Validator positive_float32(const char* name);
CLI::Validator dropout_rate();

// -i, --text, --vocab, --json, --precision, --format, --color, --no-heatmap, --full,
// --max-memory; for the walks also --batch, --svg, --summary, --timing.
// What a command reads: token embeddings (-i, or --text looked up in --vocab; --batch), or
// a prompt for a real tokenizer (--text only: the model commands and tokenize).
enum class InputKind { embeddings, prompt };
void add_shell_options(OptionBuilder sub, Shell& shell, bool walk, InputKind input = InputKind::embeddings);

// "4G", "512M", "100000": --max-memory's bytes (K, M, G, T are powers of 1024).
double parse_bytes(const std::string& text);
// Bytes for a message: "384 GiB", "1 KiB".
std::string bytes_text(double bytes);

// Refuses a walk whose estimate is over --max-memory or --max-work (UsageError naming the
// estimate and the option to raise).
void check_cost(const Shell& shell, const Cost& need);

// The input's shape before --batch stacks it: B, T, d_in.
struct InputShape {
    std::size_t batch, tokens, d_in;
};

// Reads the input (built-in, -i, or --text/--vocab), refuses it when its `cost` (after
// --batch) exceeds --max-memory or --max-work or it is longer than `context_length`, and
// stacks the batch.
// The file -i names, as it is read (a data/NAME path found where data_files looks); "-"
// for standard input, empty for none.
std::string input_file(const Shell& shell);

Embeddings prepare_input(const Shell& shell, const std::function<Cost(const InputShape&)>& cost,
                         std::optional<std::size_t> context_length = std::nullopt);

// A token named on the command line: its position counted from 1, or its text. `option` names
// the option in errors.
std::size_t resolve_token(const std::string& name, const std::vector<std::string>& tokens, const std::string& option);
// --explain I,J
Cell parse_cell(const std::string& text, const std::vector<std::string>& tokens);
// Every piece of `text` between commas, as written: "1,,2," -> "1", "", "2", "" (an option's list).
std::vector<std::string> comma_items(const std::string& text);

// --weights, --seed, --init, --d-out, --qkv-bias, --show-weights.
constexpr std::size_t default_d_out = 2;  // the textbook's
struct WeightsOptions {
    std::optional<std::string> file;
    std::optional<std::uint64_t> seed;
    std::optional<std::string> init;
    std::optional<std::size_t> d_out;
    bool qkv_bias = false;

    // The width the weights will have, for memory estimates (a file's is not known yet).
    std::size_t width() const { return d_out.value_or(default_d_out); }
};
// `default_seed`: the command draws weights without --seed too (mha), so --init, --d-out
// and --qkv-bias do not need it.
void add_weights_options(OptionBuilder sub, WeightsOptions& options, Shell& shell, bool default_seed = false);

// --scale S: a positive number that stays finite and non-zero in float32.
void add_scale_option(OptionBuilder sub, std::optional<double>& scale);
// --explain I,J
MaybeOption add_explain_option(OptionBuilder sub, std::optional<std::string>& explain);
// An option naming a head or a layer: typed counting from 1 (head 1 … H), stored as the
// 0-based index the library takes.
MaybeOption add_counted_option(OptionBuilder sub, const std::string& name, std::size_t& index, const std::string& description);
MaybeOption add_counted_option(OptionBuilder sub, const std::string& name, std::optional<std::size_t>& index, const std::string& description);
// --context-length N
void add_context_length_option(OptionBuilder sub, std::optional<std::size_t>& context_length);

// --dropout P (the command's default), --dropout-seed S, --eval, --causal/--no-causal.
struct DropoutOptions {
    double p = 0.0;
    std::optional<std::uint64_t> seed;
    bool eval = false;
    bool causal = true;
};
// `causal_flag`: also --causal/--no-causal (dropout and mha; causal is always causal).
void add_dropout_options(OptionBuilder sub, DropoutOptions& options, bool causal_flag = true);

// The seeding policy, in one place. The weights come from --weights, or are drawn from
// the --seed stream (or the command's default seed); the dropout draw continues that
// stream, unless --dropout-seed reseeds it right before the draw, or there is no stream,
// when it starts one from default_dropout_seed.
constexpr std::uint64_t default_dropout_seed = 123;  // the textbook's torch.manual_seed(123)
// The seed of mha's (and kvcache's, rope's) weights without --seed or --weights: the
// textbook's torch.manual_seed(123) before MultiHeadAttention.
constexpr std::uint64_t default_layer_seed = 123;
// Said after the one head-shape rule's message (ops/shapes.hpp) when options gave the shapes.
inline const char* const heads_options = " (see --d-out, --heads and --kv-heads)";
// The same for seeded weights of width `width` split into `heads`: the --d-out that fits
// (the next multiple of the heads), or the options when the width already divides.
inline std::string heads_hint(std::optional<std::size_t> width, std::size_t heads) {
    if (!width || heads == 0 || *width % heads == 0) return heads_options;
    return " (give --d-out " + std::to_string((*width + heads - 1) / heads * heads) + ", a multiple of " + std::to_string(heads) +
           ", or fewer --heads)";
}
class Randomness {
public:
    Randomness(std::optional<std::uint64_t> seed, std::optional<std::uint64_t> dropout_seed);
    Generator* weights_stream() { return gen_ ? &*gen_ : nullptr; }
    // The draw of dropout rate p (train) or none (eval). A --dropout-seed with nothing to
    // seed is an error, but in eval for a walk that shows eval's dropout (`shows_eval`: the
    // dropout command), where it becomes the draw's note.
    DropoutDraw dropout(double p, bool train, bool shows_eval = false);

private:
    std::optional<Generator> gen_;
    std::optional<Generator> dropout_gen_;
    std::optional<std::uint64_t> dropout_seed_;
};

// The weights of `options` for this shape (d_out from --d-out), or none without --weights
// and a seed stream.
Weights make_weights(const WeightsOptions& options, WeightsShape shape, Randomness& random);

// The input and the one-head weights of scores, softmax, context, causal and dropout:
// the input read and checked against the budget (one query row, or all; `square_tensors`
// T×T tensors kept at once, see walk_cost), then the weights of `options` for its d_in.
struct OneHead {
    Embeddings input;
    Weights weights;
};
OneHead prepare_one_head(const Shell& shell, const WeightsOptions& options, Randomness& random, bool one_row = false,
                         std::optional<std::size_t> context_length = std::nullopt, double square_tensors = forward_square_tensors);

}  // namespace attnwalk::app
