// config.json read for a model, each field noted as it is read (the trace's header lists
// them), and the files beside it: the weights (one file or the shards an index names)
// and generation_config.json's end ids. Internal to lib/src/model/.
#pragma once

#include <filesystem>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnwalk/io/json_input.hpp"
#include "reader.hpp"

namespace attnwalk::model_detail {

// The JSON text of a value, for the header and messages; `quoted`: a string in quotes (a
// message's "got": the string "false" is not the flag false).
std::string value_text(const json_input::Value& v, bool quoted = false);

class ConfigFile {
public:
    // `root`: where the object lies in the file ("$", or "$.text_config" for a multimodal
    // checkpoint's text model); messages name fields from it.
    ConfigFile(std::string file, json_input::Value doc, std::string root = "$");
    const std::string& file() const { return file_; }
    const std::string& root() const { return root_; }
    // A field's path, for messages: where it lies, here or in the object this one falls back on
    // (a plain key; a path inside a field, "rope_scaling.factor" or "layer_types[2]", is here).
    std::string at(const std::string& key) const;
    // The object `key` as a ConfigFile of its own (its fields noted as key.field), or null
    // when absent. A field it lacks is looked up here (a multimodal checkpoint keeps
    // tie_word_embeddings at the top).
    std::unique_ptr<ConfigFile> nested(const std::string& key);
    // The field, or null when absent or null; noted as read.
    const json_input::Value* get(const std::string& key);
    std::string text(const std::string& key);
    double number(const std::string& key, std::optional<double> fallback = std::nullopt);
    double number_of(const json_input::Value& v, const std::string& path) const;
    // `value`, read from `path`, when `ok`; else InputError naming this file, the field,
    // what was expected and the value.
    double require(double value, bool ok, const std::string& path, const std::string& expected) const;
    // A whole number from `least` to `most` (by default count_most, 10^9).
    static constexpr std::size_t count_most = 1000000000;
    std::size_t count(const std::string& key, std::optional<std::size_t> fallback = std::nullopt, std::size_t least = 1, std::size_t most = count_most);
    bool flag(const std::string& key, bool fallback);
    const std::vector<std::pair<std::string, std::string>>& used() const { return used_; }

private:
    std::string file_;
    json_input::Value doc_;
    std::string root_;
    ConfigFile* parent_ = nullptr;
    std::vector<std::pair<std::string, std::string>> used_;
};

// model.safetensors, or the shards model.safetensors.index.json names (each of its tensors
// checked to be in the shard it names); `described` says which. UsageError when the index
// or a header would take more than `memory_budget` bytes to parse.
Files open_weights(const std::filesystem::path& dir, std::string& described, double memory_budget);
// The one loader (loader.cpp) on config.json's fields and the family's spec, the weights
// from `open` (which says in `described` what they are).
using OpenWeights = std::function<Files(std::string& described)>;
Model load_spec(ConfigFile& cfg, const FamilySpec& f, const OpenWeights& open);
// A GGUF file's model (gguf_model.cpp): its metadata as config.json's fields, its tensors
// dequantized under Hugging Face's names, then the one loader.
Model load_gguf(const std::string& path, double memory_budget);
// generation_config.json's eos_token_id (a number or a list), when the folder has one.
std::vector<std::size_t> end_ids(const std::filesystem::path& dir, std::size_t vocab);

}  // namespace attnwalk::model_detail
