// GPT-2 from a safetensors checkpoint: the Hugging Face names (wte.weight, h.N.attn.c_attn
// in x·W layout, ...) or nanoGPT's (transformer. prefix, nn.Linear [out, in] layout), the
// layout told by the shape of c_attn. The forward pass is a walk like the others: token
// and position embeddings, per layer LayerNorm → the one attention forward (mha's step
// ids) → residual → LayerNorm → MLP (GELU, tanh form) → residual, the final LayerNorm, the
// logits of the last token and the most likely next tokens. Light header: no xtensor.
#pragma once

#include <cstddef>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "attnwalk/trace.hpp"
#include "attnwalk/walk.hpp"

namespace attnwalk {

class Bpe;

struct Gpt2Config {
    std::size_t vocab = 0, context = 0, width = 0, layers = 0, heads = 0;  // width = C
    std::string naming;  // "huggingface" or "nanogpt"
    std::string layout;  // "x·W (Conv1D)" or "nn.Linear [out, in]"
    std::string dtype;   // of the weights in the file
    bool heads_inferred = true;
};

struct Gpt2Model;
using Model = std::shared_ptr<const Gpt2Model>;

// Reads and checks the checkpoint; the number of heads is C/64 (every GPT-2 size) unless
// given. Throws InputError (the file) or UsageError (the heads).
Model load_gpt2(const std::string& path, std::optional<std::size_t> heads = std::nullopt);
const Gpt2Config& config_of(const Gpt2Model& model);

struct Gpt2Spec {
    std::size_t layer = 0;            // the layer whose attention is shown in full
    std::optional<std::size_t> head;  // only this head's T×T matrices (default: every head)
    std::size_t top_k = 5;            // next-token candidates shown
    double temperature = 1.0;         // logits / temperature before the softmax
    std::optional<double> top_p;      // nucleus: the smallest set with probability ≥ p
    bool all_layers = false;          // every layer's steps in full (else summaries)
    bool view = false;                // every layer's and head's weights, and numbers per head
    std::string sort;                 // rank the heads by: entropy, max_weight, first_token, previous_token, diagonal
    std::size_t generate = 0;         // then this many tokens, greedily, each through a KV cache
    const Bpe* tokenizer = nullptr;   // labels for the generated tokens (else #id)
};
// The per-head numbers the model view can rank by.
const std::vector<std::string>& head_stat_names();
// Labels for GPT-2 token ids: each token's text with a space shown as ␣ (GPT-2's tokens
// carry their leading space), or "#id" without a tokenizer.
std::vector<std::string> token_labels(const std::vector<std::size_t>& ids, const Bpe* bpe);

// The tokenizer's work on `text`: the pre-tokenised pieces and the ids.
Trace walk_tokenize(const Bpe& bpe, const std::string& text);

// `ids` are token ids; `tokens` their text (labels). Throws UsageError for ids ≥ vocab,
// more tokens than the context, a layer out of range.
Trace walk_gpt2(const Model& model, const std::vector<std::size_t>& ids, const std::vector<std::string>& tokens,
                const Gpt2Spec& spec, const Recording& rec);

}  // namespace attnwalk
