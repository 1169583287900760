// The lessons: one function per lesson. Each takes values (the input, the weights or the
// model, a small spec of its own) and returns the whole trace. This is the library's
// face for app/ (light: no xtensor here). Nothing here knows the command line. A lesson
// may keep its call in a header of its own (mla.hpp), so that adding one edits no shared file.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>

#include <vector>

#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/io/weights.hpp"
#include "attnwalk/model/model.hpp"
#include "attnwalk/ops/rng.hpp"
#include "attnwalk/ops/shapes.hpp"
#include "attnwalk/trace.hpp"

namespace attnwalk {

// How the trace keeps its steps.
struct Recording {
    bool summary = false;      // statistics per step instead of tensors (big inputs)
    bool timing = false;       // step times are part of the output
    bool explainable = false;  // keep the attention so that any cell can be written out after the walk (trace.explainer)
};

// One cell of the attention matrix: query row i, key column j (0-based).
struct Cell {
    std::size_t i = 0, j = 0;
};

// Values the trace keeps as float32, checked once for the command line and the walks alike: a
// dropout rate (0, or one whose 1 − p is below 1 and whose float32 is below 1) and a positive
// number float32 holds from its smallest normal, 1.2e-38, to 3.4e38 (a scale, a temperature).
bool is_dropout_rate(double p);
bool is_positive_float32(double v);
// is_dropout_rate's range as a message says it.
inline constexpr const char* dropout_rate_range = "0 or in [1.2e-16, 0.99999994]";

// The random draw of dropout: rate p (training mode) from `gen`. `note` says where the
// generator's state came from; `reseeded` records its seed in the trace's params.
struct DropoutDraw {
    double p = 0.0;
    bool train = true;             // false: eval mode, dropout is the identity
    Generator* gen = nullptr;      // needed when p > 0 in training mode
    bool reseeded = false;
    std::string note;
};

// scores, softmax, context: one head, every query or one (`query`), one cell written out.
struct SingleHeadSpec {
    std::optional<double> scale;      // divide the scores by this (default 1, or √d_k with weights)
    std::optional<std::size_t> query;  // one query row only
    std::optional<Cell> explain;
};
Trace walk_scores(const Embeddings& input, const Weights& weights, const SingleHeadSpec& spec, const Recording& rec);
Trace walk_softmax(const Embeddings& input, const Weights& weights, const SingleHeadSpec& spec, const Recording& rec);
Trace walk_context(const Embeddings& input, const Weights& weights, const SingleHeadSpec& spec, const Recording& rec);

struct CausalSpec {
    std::optional<double> scale;
    std::optional<std::size_t> query;  // one query row only
    std::optional<Cell> explain;
    DropoutDraw dropout;  // CausalAttention's dropout on the weights (none by default)
};
Trace walk_causal(const Embeddings& input, const Weights& weights, const CausalSpec& spec, const Recording& rec);

struct DropoutSpec {
    std::optional<double> scale;
    bool causal = true;
    DropoutDraw draw;
};
Trace walk_dropout(const Embeddings& input, const Weights& weights, const DropoutSpec& spec, const Recording& rec);
// Dropout on an n×n matrix of ones (the textbook's demonstration).
Trace walk_dropout_ones(std::size_t n, const DropoutDraw& draw, const Recording& rec);

// Multi-head attention; the heads and their layout come with the weights.
struct MhaSpec {
    bool causal = true;
    std::optional<std::size_t> window;  // sliding window of W keys (with causal: itself and the W − 1 before)
    bool show_einsum = false;           // each operation also in einsum notation (in its note)
    DropoutDraw dropout;
    std::optional<std::size_t> query;  // one query row, in every head
    std::optional<Cell> explain;       // one cell of one head, written out
    std::size_t explain_head = 0;
    // Head roles on the input itself: its rows run twice, and per head the induction,
    // previous-token and duplicate scores, each mean written out term by term.
    bool head_roles = false;
};
Trace walk_mha(const Embeddings& input, const Weights& weights, const MhaSpec& spec, const Recording& rec);

// ---- beyond the chapter ----------------------------------------------------------------

// Decoding token by token with a KV cache, on mha's fused weights (G key/value heads).
struct KvCacheSpec {
    std::optional<std::size_t> window;  // sliding window: the cache keeps the last W keys and values
    std::size_t layers = 1;             // for the cache's size in bytes
    std::size_t bytes_per_value = 4;    // float32; 2 for bfloat16/float16
    std::size_t context_tokens = 0;     // the size for this many tokens (0: the input's)
    std::optional<Cell> explain;        // one cell of one head, written out (from the whole-sequence pass)
    std::size_t explain_head = 0;
};
Trace walk_kvcache(const Embeddings& input, const Weights& weights, const KvCacheSpec& spec, const Recording& rec);

// Rotary position embeddings on the queries and keys of fused weights (no out_proj needed).
struct RopeSpec {
    double base = 10000.0;   // θ_i = base^(−2i/d_h)
    std::size_t shift = 3;   // the check: every position + shift gives the same scores
    std::optional<Cell> explain;
    std::size_t explain_head = 0;
};
Trace walk_rope(const Embeddings& input, const Weights& weights, const RopeSpec& spec, const Recording& rec);

// Gated DeltaNet on weights drawn as the textbook's GatedDeltaNet class draws them
// (ch04/08_deltanet, torch.manual_seed(seed)), with one write strength β per head as
// Qwen3-Next has it; d_k = d_v = d_out / H.
struct DeltaNetSpec {
    std::size_t heads = 2, d_out = 4;
    std::size_t chunk = 2;       // tokens per chunk of the chunked form
    std::uint64_t seed = 123;
    // A = exp(A_log) for every head instead of the drawn one (the draw still happens, so
    // the later weights are the same): small A, slow decay, a state that remembers.
    std::optional<double> decay_rate;
    // The memory of a layer: layers, tokens (0: the input's), bytes per number.
    std::size_t layers = 1, context_tokens = 0, bytes_per_value = 4;
};
Trace walk_deltanet(const Embeddings& input, const DeltaNetSpec& spec, const Recording& rec);
Cost deltanet_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, const DeltaNetSpec& spec);

// FlashAttention's online softmax over blocks of keys, one head.
struct FlashSpec {
    std::size_t block = 2;
    bool causal = false;
    std::optional<std::size_t> window;
    std::optional<double> scale;
    std::optional<Cell> explain;  // one cell, from the whole score matrix
};
Trace walk_flash(const Embeddings& input, const Weights& weights, const FlashSpec& spec, const Recording& rec);

// torch.nn.functional.scaled_dot_product_attention's arguments, one head.
struct SdpaSpec {
    std::optional<std::size_t> queries;  // L: the last L tokens are the queries (default: all)
    std::optional<Tensor> attn_mask;     // L×S: bool (values 0/1) or float
    bool mask_is_bool = true;
    std::string mask_source;             // where the mask came from, for the params
    bool is_causal = false;
    std::optional<double> scale;         // SDPA's scale: a multiplier (default 1/√d)
    DropoutDraw dropout;                 // dropout_p: torch.dropout(attn_weight, p, train=True)
    double large_fill = -3.4028234663852886e38;  // torch.finfo(torch.float32).min
};
Trace walk_sdpa(const Embeddings& input, const Weights& weights, const SdpaSpec& spec, const Recording& rec);

// The parameters of one attention layer with these sizes (the chapter's exercise).
struct ParamsSpec {
    std::size_t d_in = 768, d_out = 768, heads = 12, kv_heads = 0;  // kv_heads 0: H
    bool qkv_bias = false;
    bool out_proj = true;
    std::size_t layers = 1, context_length = 1024, bytes_per_value = 4;
    // One way to shrink the cache, counted as the textbook's estimators count it (at most one):
    std::size_t window = 0;                  // sliding window W (ch04/06_swa) on `swa_layers`:`full_layers` of every block
    std::size_t swa_layers = 1, full_layers = 0;
    std::size_t kv_producing_layers = 0;     // cross-layer KV sharing (ch04/10_kv-sharing): only these layers cache
    std::size_t kv_lora_rank = 0, qk_rope_head_dim = 0;  // MLA (ch04/05_mla): r + d_rope numbers per token and layer
};
Trace walk_params(const ParamsSpec& spec);

// What a walk will cost (Cost: ops/shapes.hpp), from the shapes alone.
// `rows` query rows of a B×T×d_in input with `heads` heads of total width `width`
// (d_in without weights).
// `square_tensors`: how many heads×rows×T tensors the walk keeps at once, the forward's
// and the trace's together (forward_square_tensors for most walks; causal's two masks and
// flash's blocks keep more).
Cost walk_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, std::size_t width, std::size_t heads,
               std::size_t rows, double square_tensors = forward_square_tensors);
// The cost of walk_kvcache: the whole-sequence walk, and every step's caches and new row
// of attention, which its trace keeps (Σ_t 2·t·width floats: width·T² in all).
Cost kvcache_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, std::size_t width, std::size_t heads);
// The cost of walk_dropout_ones(n).
Cost dropout_ones_cost(std::size_t n);
// Whether walk_mha takes the blocked path: a summary of fused heads with out_proj, one
// key/value head per query head (kv_heads 0 or H), no output gate, no learned sinks
// (`gate_or_sinks`) and no dropout draw. It holds no T×T tensor then.
bool mha_blocked(HeadLayout layout, const MhaSpec& spec, const Recording& rec, std::size_t heads, std::size_t kv_heads, bool gate_or_sinks);
// The cost of walk_mha, on either path.
Cost mha_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, std::size_t width, std::size_t heads, HeadLayout layout,
              const MhaSpec& spec, const Recording& rec, std::size_t kv_heads = 0, bool gate_or_sinks = false);

// ---- a pretrained model -------------------------------------------------------------------

class Tokenizer;

struct ModelSpec {
    std::size_t layer = 0;            // the layer whose attention is shown in full
    std::optional<std::size_t> head;  // only this head's T×T matrices (default: every head)
    std::size_t top_k = 5;            // next-token candidates shown
    double temperature = 1.0;         // logits / temperature before the softmax
    std::optional<double> top_p;      // nucleus: the smallest set with probability ≥ p
    bool all_layers = false;          // every layer's steps in full (else summaries)
    bool view = false;                // every layer's and head's weights, and numbers per head
    std::string sort;                 // rank the heads by: entropy, max_weight, first_token, previous_token, diagonal
    std::size_t generate = 0;         // then this many tokens, greedily, each through a KV cache
    // StreamingLLM's cache for the generation: the first tokens and the most recent (start,
    // recent), keys rotated at their place in the cache; each next token's distribution
    // against a cache that keeps everything.
    std::optional<std::pair<std::size_t, std::size_t>> start_recent;
    bool logit_lens = false;          // every layer's residual stream through the final norm and the unembedding
    // Ablation: these heads' outputs zeroed before the output projection (layer, head; no
    // head: every head of the layer), and the change of the next token and of the loss.
    std::vector<std::pair<std::size_t, std::optional<std::size_t>>> ablate;
    std::optional<std::size_t> ablate_each;  // a layer: each of its heads ablated alone, a table
    // Head roles as TransformerLens scores them: `roles` random ids (torch.manual_seed(roles_seed),
    // torch.randint over the vocabulary, 1000…9999 when it is that large), no BOS, run twice in a
    // row; per layer and head the mean of the induction stripe, the previous token and the duplicate.
    std::size_t roles = 0;
    std::uint64_t roles_seed = 0;
    bool rollout = false;             // attention rollout (Abnar & Zuidema): heads averaged, + I, rows normalised, multiplied through the layers
    std::optional<Cell> explain;      // one cell of the layer shown written out (of `head`, else head 0)
    // Circuits (lessons/model/circuits.cpp). The metric: the logit of `answer` at the last
    // position (default: the model's top token), or the logit difference answer − wrong.
    std::optional<std::size_t> answer, wrong;
    bool attribution = false;          // direct logit attribution of the metric: every head, MLP, embedding and bias term
    std::vector<std::size_t> corrupt;  // activation patching: the corrupted prompt's ids (as many as the prompt's); the metric
                                       // without `wrong` is the answer's log-probability
    // A head's circuits (`layer`, `head`): its QK and OV tables over the prompt's tokens, the
    // OV circuit's eigenvalues and copying score; with RoPE, the QK table again with the
    // query `circuit_offset` positions after the key.
    bool circuits = false;
    std::size_t circuit_offset = 1;
    const Tokenizer* tokenizer = nullptr;  // labels for the generated tokens (else #id)
};
// The per-head numbers the model view can rank by.
const std::vector<std::string>& head_stat_names();
// Labels for GPT-2 token ids: each token's text with a space shown as ␣ (GPT-2's tokens
// carry their leading space), or "#id" without a tokenizer.
std::vector<std::string> token_labels(const std::vector<std::size_t>& ids, const Tokenizer* tokenizer);

// The tokenizer's work on `text`: the pre-tokenised pieces and the ids.
Trace walk_tokenize(const Tokenizer& tokenizer, const std::string& text);

// What walk_model will hold (the tensors it keeps and records) and compute (multiply-adds,
// an exponential counted as 16) for a prompt of T tokens, from the sizes alone: the layers'
// products, the attention of every layer, the layer(s) shown in full, the view, the
// logits, generation with the cache and the recomputation that checks it, and the tables
// of spec.tokenizer.
// `recording`: a summary only sums the shown layer's T×T steps where nothing else reads
// them; an explainable recording (not a summary) keeps the shown layer's (with the view every
// layer's) attention for writing cells out after the walk.
Cost model_walk_cost(const Model& model, std::size_t T, const ModelSpec& spec, const Recording& recording = {});
// The same for the tokenizer on a text of n bytes (the merges take n log n), its tables
// included.
Cost tokenize_cost(std::size_t n, const Tokenizer* tokenizer);

// The model on token ids (`tokens`: their text, for labels): the embeddings, every layer
// (the one shown in full with mha's ids), the next token's candidates, and generation.
// Throws UsageError for ids ≥ vocab, more tokens than the context, a layer out of range.
Trace walk_model(const Model& model, const std::vector<std::size_t>& ids, const std::vector<std::string>& tokens,
                 const ModelSpec& spec, const Recording& rec);

// The text of a float for titles and notes ("0.5", "1.4142").
std::string format_number(double value);

}  // namespace attnwalk
