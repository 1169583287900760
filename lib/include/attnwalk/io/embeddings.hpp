// Input: tokens and their embeddings, from JSON (or a .npy file of the embeddings alone).
//
//   {"tokens": ["Your", ...], "embeddings": [[0.43, 0.15, 0.89], ...]}
//
// `embeddings` is T×d, or B×T×d for a batch; `tokens` is optional.
#pragma once

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

#include "attnwalk/trace.hpp"

namespace attnwalk {

constexpr std::size_t max_input_bytes = std::size_t{512} << 20;  // input files up to 512 MiB
constexpr std::size_t max_token_bytes = 256;                       // one token's text

struct Embeddings {
    std::string source;               // file name, "-" for stdin, "<built-in>" for the example
    std::vector<std::string> tokens;  // T labels (given or generated)
    bool batched = false;             // the input was B×T×d
    Tensor x;                         // always B×T×d (B = 1 when not batched)

    std::size_t batch() const { return x.shape[0]; }
    std::size_t tokens_count() const { return x.shape[1]; }
    std::size_t dim() const { return x.shape[2]; }
};

// Parses JSON text; `source` names it in error messages. Throws InputError.
Embeddings parse_embeddings(const std::string& text, const std::string& source);
// Where -i PATH reads: a safetensors file (PATH itself, or FILE of "FILE:NAME") and the
// tensor named (empty: its only one), or any other file read whole ("-": stdin). A name may
// hold colons: FILE is the longest part of PATH before a colon that is a safetensors file,
// so "f.safetensors:y:z" is tensor "y:z" of f.safetensors unless "f.safetensors:y" is one.
// A PATH that names a file is that file, colons and all.
struct InputSource {
    std::string file;
    std::string tensor;
    bool safetensors = false;
};
InputSource input_source(const std::string& path);
// Reads a file ("-" = stdin) and parses it: JSON, NumPy's .npy (T×d or B×T×d, told by its
// first bytes; the tokens are then t1…tT), or a safetensors file's tensor (input_source;
// mapped, not read whole: its header parsed and the tensor counted against `memory_budget`
// before its numbers are read; every number finite, else the element is named). Throws
// InputError; MemoryBudgetError.
Embeddings load_embeddings(const std::string& path, double memory_budget = std::numeric_limits<double>::infinity());
// Embeddings of a tensor read from a .npy file.
Embeddings embeddings_of_npy(Tensor x, const std::string& source);
// "Your journey starts with one step": 6 tokens, 3-d, the textbook's example.
Embeddings builtin_embeddings();
// The same example as JSON text (what data/your_journey.json holds).
const std::string& builtin_embeddings_json();

// Stacks the input n times along the batch axis (the textbook's torch.stack((x, x))).
Embeddings stack_batch(const Embeddings& input, std::size_t n);

// How a path is named in messages and params: "<stdin>" for "-", else the path.
std::string source_name(const std::string& path);
// Reads a whole file ("-" = stdin; a pipe, as `-i <(…)` gives, is read to its end).
// `regular_only`: a file of a model folder or a tokenizer, which must be a regular file
// (a FIFO is refused without waiting for a writer). Throws InputError naming the file.
std::string read_text_file(const std::string& path, bool regular_only = false);

// An attention mask (queries × keys) from its JSON text: [[1, 0, ...], ...], true/false
// read as 1/0; `is_bool`: every value 0 or 1. `name` names it in errors (InputError).
Tensor parse_attn_mask(std::string text, const std::string& name, bool is_bool);

}  // namespace attnwalk
