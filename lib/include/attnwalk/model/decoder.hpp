// One decoder-only transformer, configured by each model family: the block is written
// once, in decoder.cpp, and every family (GPT-2 today) is a DecoderConfig and a mapping
// from its checkpoint's names into DecoderWeights. The forward writes no text: it hands
// each intermediate to a tap (an observer), which a lesson turns into steps.
//
//   ids (T) -> x = embed[ids] + positions[p0 : p0+T]                      (1,T,C)
//   per block:  a = norm_1(x); x = x + attention(a)       (the one forward, ops/attention.hpp)
//               m = norm_2(x); x = x + down(act(up(m)))   (the MLP)
//   final norm (1,T,C); logits of the last position = head·x_T           (1,V)
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "attnwalk/ops/activations.hpp"
#include "attnwalk/ops/attention.hpp"
#include "attnwalk/ops/kv_cache.hpp"
#include "attnwalk/ops/linear.hpp"
#include "attnwalk/ops/norms.hpp"
#include "attnwalk/model/model.hpp"

namespace attnwalk {

// What a family chooses. Each kind has the one value GPT-2 needs today (NormKind:
// ops/norms.hpp, MlpKind: ops/activations.hpp); a family adds its own value and the
// branch (docs/architecture.md: how to add a family).
enum class PositionKind { learned };       // a table of position embeddings added to the tokens

struct DecoderConfig {
    std::string family;  // "gpt2"
    std::size_t vocab = 0, context = 0, width = 0, layers = 0;  // width = C
    std::size_t heads = 0, kv_heads = 0;                        // H; G (0 = H)
    NormKind norm = NormKind::layer_norm;
    float norm_eps = 1e-5f;
    MlpKind mlp = MlpKind::gelu_tanh;
    PositionKind positions = PositionKind::learned;
    bool tied_head = true;  // the logits use the token embeddings (else DecoderWeights::head)

    std::size_t head_size() const { return heads ? width / heads : 0; }  // d_h
};

struct BlockWeights {
    Norm norm_1, norm_2;     // before the attention, before the MLP
    AttentionWeights attn;   // fused heads, out_proj
    Linear up, down;         // C -> hidden, hidden -> C
};

struct DecoderWeights {
    DecoderConfig config;
    Linear embed;          // the token embeddings in nn.Linear's layout: row id = out_row(id) (V×C)
    Mat positions;         // learned: (context, C)
    std::vector<BlockWeights> blocks;
    Norm final_norm;
    Linear head;           // untied head (V×C, nn.Linear's layout); unused when tied
    const Linear& output_head() const { return config.tied_head ? embed : head; }
};

class SafeTensors;

// A model read from its checkpoint (model.hpp's Model points at one): what it says of
// itself, its decoder weights, and the mapped file the weights may point into.
struct LoadedModel {
    ModelInfo info;
    DecoderWeights weights;
    std::shared_ptr<const SafeTensors> file;  // keeps the weights read in place valid
};

// Where in a block the forward hands a tensor (1,T,C) to the tap.
enum class BlockPoint { norm_1, attention, residual_1, norm_2, mlp_hidden, mlp, residual_2 };

// The observer of the forward. Every method has a default that ignores what it is handed.
class DecoderTap {
public:
    virtual ~DecoderTap() = default;
    // Whether layer l keeps every intermediate of its attention (the T×T tensors), handed
    // to attention(); otherwise a layer without a cache so far takes the blocked path,
    // which keeps none (ops/blocked_attention.hpp).
    virtual bool keeps_attention(std::size_t /*layer*/) const { return false; }
    virtual void embeddings(const Cube& /*tokens*/, const Cube& /*positions*/, const Cube& /*x*/) {}
    virtual void attention(std::size_t /*layer*/, const Forward& /*f*/) {}
    virtual void block(std::size_t /*layer*/, BlockPoint /*point*/, const Cube& /*t*/) {}
};

// Each layer's keys and values, for decoding token by token.
struct DecoderCache {
    std::vector<KvCache> layers;
    std::size_t tokens() const { return layers.empty() ? 0 : layers.front().seen(); }
    double bytes(std::size_t bytes_per_value) const;
};
DecoderCache make_cache(const DecoderConfig& config);

// The ids fit: at least one, each < vocab, positions position0… within the context.
// Throws UsageError.
void check_prompt(const DecoderConfig& config, const std::vector<std::size_t>& ids, std::size_t position0);

// Runs `ids` through every block at positions cache->tokens()… (0 without a cache),
// appending their keys and values to the cache when one is given. Returns the final
// norm's output (1,T,C). Throws UsageError for ids ≥ vocab or beyond the context.
Cube decoder_forward(const DecoderWeights& w, const std::vector<std::size_t>& ids, DecoderCache* cache, DecoderTap* tap);
// The logits of row `row` of the final norm's output: (1,V).
Mat decoder_logits(const DecoderWeights& w, const Cube& final_x, std::size_t row);

}  // namespace attnwalk
