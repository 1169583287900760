// A pretrained model read from its checkpoint: the face of model/ for app/ and the
// lessons (light: no xtensor here). The weights themselves are model/decoder.hpp's
// DecoderWeights; a family's mapping reads its names and layouts into them.
#pragma once

#include <cstddef>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

namespace attnwalk {

// What the checkpoint says of itself, printed in the trace's header.
struct ModelInfo {
    std::string file;    // the weights: a file, or an index and its shards
    std::size_t vocab = 0, context = 0, width = 0, layers = 0, heads = 0;  // width = C
    std::size_t kv_heads = 0, head_dim = 0;  // G and d_h when config.json gives them (0: H and C/H)
    std::string naming;  // "huggingface" or "nanogpt"
    std::string layout;  // "x·W (Conv1D)" or "nn.Linear [out, in]"
    std::string dtype;   // of the weights in the file
    bool heads_inferred = true;
    bool biases = true;               // false: the file has none (nanoGPT's bias=False), read as zeros
    std::vector<std::string> unused;  // tensors of the file the model does not read
    std::vector<std::pair<std::string, std::string>> config;  // config.json's fields the model read, as written
    std::vector<std::size_t> end_ids;  // generation_config.json's eos_token_id: generation stops there
};

struct LoadedModel;  // model/decoder.hpp: the info, the DecoderWeights, the mapped file
using Model = std::shared_ptr<const LoadedModel>;
const ModelInfo& info_of(const LoadedModel& model);

// GPT-2 from a safetensors checkpoint: the Hugging Face names (wte.weight,
// h.N.attn.c_attn in x·W layout, ...) or nanoGPT's (transformer. prefix, nn.Linear
// [out, in] layout), the layout told by the shape of c_attn. The number of heads is C/64
// (every GPT-2 size) unless given. Throws InputError (the file) or UsageError (the heads;
// a header that would take more than `memory_budget` bytes to parse).
Model load_gpt2(const std::string& path, std::optional<std::size_t> heads = std::nullopt,
                double memory_budget = std::numeric_limits<double>::infinity());

// A Hugging Face model folder: config.json (its model_type picks the family, one of
// model/family.hpp's families()), model.safetensors or the shards of
// model.safetensors.index.json. Throws InputError naming the file and the field or tensor;
// UsageError when a file's JSON (config, index, a header) would take more than
// `memory_budget` bytes to parse.
Model load_model(const std::string& dir, double memory_budget = std::numeric_limits<double>::infinity());

// UsageError when the prompt does not fit the model: longer than its context, or an id
// outside its vocabulary. Cheap: the model commands ask it before estimating the memory.
void check_prompt(const LoadedModel& model, const std::vector<std::size_t>& ids);

// Moves every weight the model reads from its mapped file(s) into memory of the process's
// own, at the same addresses (SafeTensors::hold_in_memory): a copy of the
// files now for forwards that do not wait on mapped pages. Returns the bytes moved (0 for a
// GGUF model, whose weights are made in memory already).
std::size_t hold_weights_in_memory(const LoadedModel& model);

// Throws InputError naming the first tensor of the model's file that holds NaN or inf (and
// where); returns when every value is finite. Read only when a run went non-finite.
void check_weights_finite(const LoadedModel& model);

}  // namespace attnwalk
