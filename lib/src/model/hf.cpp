// A Hugging Face model folder: config.json says the family and its sizes, the weights are
// model.safetensors or the shards model.safetensors.index.json names. Each family is a
// configuration of the one decoder (model/decoder.hpp) and a mapping of its names:
//
//   llama        RMSNorm, SwiGLU, RoPE (rope_theta, rope_scaling llama3 or linear), GQA
//   qwen2        llama with biases on q, k, v
//   qwen3        llama with QK-norm (RMSNorm on each head's q and k before RoPE), head_dim
//   gemma3_text  embeddings × √C, RMSNorm with (1 + w), norms after the attention and the
//                MLP too, GeGLU (tanh GELU), scores / √query_pre_attn_scalar, QK-norm,
//                sliding-window layers with their own rope base, and global ones
//   gpt2         the GPT-2 mapping (model/gpt2.cpp) with config.json's n_head
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/io/json_input.hpp"
#include "attnwalk/io/safetensors.hpp"
#include "attnwalk/model/decoder.hpp"
#include "reader.hpp"

namespace attnwalk {

namespace {

using json_input::Value;
using model_detail::Files;
using model_detail::Reader;
namespace fs = std::filesystem;

const char* const supported = "gpt2, llama (Llama 3, SmolLM2), qwen2, qwen3, gemma3_text (Gemma 3 270M and 1B)";

// The JSON text of a value, for the header.
std::string value_text(const Value& v) {
    switch (v.type) {
        case Value::Type::null: return "null";
        case Value::Type::boolean: return v.boolean ? "true" : "false";
        case Value::Type::number: return json_input::number_text(v.number);
        case Value::Type::string: return v.string;
        case Value::Type::array: {
            std::string out = "[";
            for (std::size_t i = 0; i < v.array.size(); ++i) out += (i ? ", " : "") + value_text(v.array[i]);
            return out + "]";
        }
        case Value::Type::object: {
            std::string out = "{";
            for (std::size_t i = 0; i < v.object.size(); ++i)
                out += (i ? ", " : "") + v.object[i].first + ": " + value_text(v.object[i].second);
            return out + "}";
        }
        case Value::Type::tensor: return "[…]";
    }
    return "";
}

// config.json, each field read noted for the header.
class Config {
public:
    Config(const std::string& file, Value doc) : file_(file), doc_(std::move(doc)) {
        if (!doc_.is_object()) throw InputError(file_, "$", "expected a JSON object, got " + json_input::type_name(doc_));
    }
    const std::string& file() const { return file_; }
    const Value* get(const std::string& key) {
        const Value* v = doc_.find(key);
        if (v && v->type != Value::Type::null && std::none_of(used_.begin(), used_.end(), [&](const auto& u) { return u.first == key; }))
            used_.emplace_back(key, value_text(*v));
        return v && v->type != Value::Type::null ? v : nullptr;
    }
    std::string text(const std::string& key) {
        const Value* v = get(key);
        if (!v) throw InputError(file_, "$", "missing \"" + key + "\"");
        if (v->type != Value::Type::string) throw InputError(file_, "$." + key, "expected a string, got " + json_input::type_name(*v));
        return v->string;
    }
    double number(const std::string& key, std::optional<double> fallback = std::nullopt) {
        const Value* v = get(key);
        if (!v) {
            if (fallback) return *fallback;
            throw InputError(file_, "$", "missing \"" + key + "\"");
        }
        return number_of(*v, "$." + key);
    }
    double number_of(const Value& v, const std::string& path) const {
        if (v.type != Value::Type::number || !std::isfinite(v.number)) throw InputError(file_, path, "expected a number, got " + json_input::type_name(v));
        return v.number;
    }
    std::size_t count(const std::string& key, std::optional<std::size_t> fallback = std::nullopt, std::size_t least = 1) {
        const Value* v = get(key);
        if (!v) {
            if (fallback) return *fallback;
            throw InputError(file_, "$", "missing \"" + key + "\"");
        }
        if (v->type != Value::Type::number || v->number != std::floor(v->number) || v->number < static_cast<double>(least) || v->number > 1e9)
            throw InputError(file_, "$." + key, "expected a whole number from " + std::to_string(least) + " to 10^9, got " + value_text(*v));
        return static_cast<std::size_t>(v->number);
    }
    bool flag(const std::string& key, bool fallback) {
        const Value* v = get(key);
        if (!v) return fallback;
        if (v->type != Value::Type::boolean) throw InputError(file_, "$." + key, "expected true or false, got " + value_text(*v));
        return v->boolean;
    }
    const std::vector<std::pair<std::string, std::string>>& used() const { return used_; }

private:
    std::string file_;
    Value doc_;
    std::vector<std::pair<std::string, std::string>> used_;
};

// The weights: model.safetensors, or the shards model.safetensors.index.json names, each
// of its tensors checked to be in the shard it names.
Files open_weights(const fs::path& dir, std::string& described) {
    const fs::path single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
    if (fs::exists(single)) {
        described = single.string();
        return {std::make_shared<const SafeTensors>(single.string())};
    }
    if (!fs::exists(index))
        throw InputError(dir.string(), "", "no model.safetensors or model.safetensors.index.json in the folder (a Hugging Face model folder holds one)");
    const std::string file = index.string();
    const Value doc = json_input::parse_plain(read_text_file(file, true), file);
    const Value* map = doc.is_object() ? doc.find("weight_map") : nullptr;
    if (!map || !map->is_object()) throw InputError(file, "$.weight_map", "expected {\"tensor name\": \"shard file\", ...}");
    std::map<std::string, std::shared_ptr<const SafeTensors>> shards;
    for (const auto& [name, shard] : map->object) {
        const std::string at = json_input::member_path("$.weight_map", name);
        if (shard.type != Value::Type::string || shard.string.empty() || shard.string.find('/') != std::string::npos || shard.string == ".." ||
            shard.string == ".")
            throw InputError(file, at, "expected the name of a shard file in the same folder");
        auto& st = shards[shard.string];
        if (!st) st = std::make_shared<const SafeTensors>((dir / shard.string).string());
        if (!st->find(name)) throw InputError(st->file(), "$", "missing tensor \"" + name + "\", which " + file + " places in this shard");
    }
    if (shards.empty()) throw InputError(file, "$.weight_map", "names no tensor");
    Files files;
    std::map<std::string, std::string> seen;
    for (const auto& [shard, st] : shards) {
        for (const auto& [name, e] : st->entries()) {
            auto [it, fresh] = seen.emplace(name, shard);
            if (!fresh) throw InputError(st->file(), json_input::member_path("$", name), "also in " + it->second + ": a tensor lies in one shard");
        }
        files.push_back(st);
    }
    described = file + " (" + std::to_string(files.size()) + " shards)";
    return files;
}

// No layer beyond the config's count: the largest N of "model.layers.N." is below num_hidden_layers.
void check_layer_names(const Files& files, const std::string& prefix, std::size_t layers, const std::string& config) {
    std::size_t found = 0;
    for (const auto& f : files)
        for (const auto& [name, e] : f->entries()) {
            if (name.compare(0, prefix.size(), prefix) != 0) continue;
            const std::string n = name.substr(prefix.size(), name.find('.', prefix.size()) - prefix.size());
            if (n.empty() || n.size() > 6 || n.find_first_not_of("0123456789") != std::string::npos) continue;
            found = std::max(found, static_cast<std::size_t>(std::stoul(n)) + 1);
        }
    if (found > layers)
        throw InputError(files.front()->file(), "$", "holds layer " + std::to_string(found - 1) + " (\"" + prefix + std::to_string(found - 1) +
                                                         ".…\"), but " + config + " says num_hidden_layers = " + std::to_string(layers));
}

RopeParams rope_params(Config& cfg, double base, const Value* scaling) {
    RopeParams p;
    p.base = base;
    if (!scaling) return p;
    if (!scaling->is_object()) throw InputError(cfg.file(), "$.rope_scaling", "expected an object or null");
    const Value* type = scaling->find("rope_type");
    if (!type) type = scaling->find("type");
    const std::string kind = type && type->type == Value::Type::string ? type->string : "";
    auto num = [&](const char* key, std::optional<double> fallback) {
        const Value* v = scaling->find(key);
        if (!v) {
            if (fallback) return *fallback;
            throw InputError(cfg.file(), "$.rope_scaling", std::string("missing \"") + key + "\" for rope_type " + kind);
        }
        return cfg.number_of(*v, std::string("$.rope_scaling.") + key);
    };
    if (kind == "default") return p;
    if (kind == "linear") {
        p.scaling.kind = RopeScaling::Kind::linear;
        p.scaling.factor = num("factor", std::nullopt);
    } else if (kind == "llama3") {
        p.scaling.kind = RopeScaling::Kind::llama3;
        p.scaling.factor = num("factor", std::nullopt);
        p.scaling.low_freq_factor = num("low_freq_factor", std::nullopt);
        p.scaling.high_freq_factor = num("high_freq_factor", std::nullopt);
        p.scaling.original_context = num("original_max_position_embeddings", std::nullopt);
    } else {
        throw InputError(cfg.file(), "$.rope_scaling", "rope_type \"" + kind + "\" is not supported (default, linear and llama3 are)");
    }
    return p;
}

Model load_hf_decoder(const fs::path& dir, Config& cfg, const std::string& family) {
    auto m = std::make_shared<LoadedModel>();
    ModelInfo& info = m->info;
    DecoderConfig& c = m->weights.config;
    const bool gemma = family == "gemma3_text", qwen3 = family == "qwen3", qwen2 = family == "qwen2";
    c.family = info.family = family;
    c.vocab = info.vocab = cfg.count("vocab_size");
    c.width = info.width = cfg.count("hidden_size");
    c.layers = info.layers = cfg.count("num_hidden_layers");
    c.heads = info.heads = cfg.count("num_attention_heads");
    c.kv_heads = cfg.count("num_key_value_heads", c.heads);
    if (c.heads % c.kv_heads != 0)
        throw InputError(cfg.file(), "$.num_key_value_heads",
                         std::to_string(c.kv_heads) + " key/value heads do not divide " + std::to_string(c.heads) + " query heads");
    const bool explicit_head_dim = cfg.get("head_dim") != nullptr;
    if (!explicit_head_dim && c.width % c.heads != 0)
        throw InputError(cfg.file(), "$", "hidden_size " + std::to_string(c.width) + " is not a multiple of num_attention_heads: give head_dim");
    c.head_dim = cfg.count("head_dim", c.width / c.heads);
    const std::size_t hidden = cfg.count("intermediate_size");
    c.context = info.context = cfg.count("max_position_embeddings");
    c.norm = NormKind::rms_norm;
    c.norm_eps = static_cast<float>(cfg.number("rms_norm_eps", 1e-6));
    c.positions = PositionKind::rope;
    c.tied_head = cfg.flag("tie_word_embeddings", gemma);
    const std::string act = gemma ? (cfg.get("hidden_activation") ? cfg.text("hidden_activation") : cfg.text("hidden_act")) : cfg.text("hidden_act");
    if (gemma) {
        if (act != "gelu_pytorch_tanh" && act != "gelu_tanh")
            throw InputError(cfg.file(), "$.hidden_activation", "Gemma 3's MLP is gelu_pytorch_tanh; \"" + act + "\" is not supported");
        c.mlp = MlpKind::geglu_tanh;
    } else {
        if (act != "silu") throw InputError(cfg.file(), "$.hidden_act", family + "'s MLP is silu (SwiGLU); \"" + act + "\" is not supported");
        c.mlp = MlpKind::swiglu;
    }
    const bool attention_bias = qwen2 || cfg.flag("attention_bias", false);
    if (cfg.flag("mlp_bias", false)) throw InputError(cfg.file(), "$.mlp_bias", "MLP biases are not supported");
    for (const char* capped : {"final_logit_softcapping", "attn_logit_softcapping"})
        if (cfg.get(capped)) throw InputError(cfg.file(), std::string("$.") + capped, "soft-capping (Gemma 2) is not supported: expected null");
    if ((qwen2 || qwen3) && cfg.flag("use_sliding_window", false))
        throw InputError(cfg.file(), "$.use_sliding_window", "Qwen's sliding window is not supported: expected false");

    // Each layer's attention: RoPE with the config's base; Gemma's sliding layers their own.
    const double theta = cfg.number("rope_theta", gemma ? 1e6 : 10000.0);
    const RopeParams global = rope_params(cfg, theta, cfg.get("rope_scaling"));
    c.layer_attention.assign(c.layers, LayerAttention{std::nullopt, global});
    if (gemma) {
        c.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.width)));
        c.attention_scale = static_cast<float>(std::sqrt(cfg.number("query_pre_attn_scalar", static_cast<double>(c.head_dim))));
        const std::size_t window = cfg.count("sliding_window");
        const RopeParams local{cfg.number("rope_local_base_freq", 10000.0), {}};
        std::vector<bool> sliding(c.layers);
        if (const Value* types = cfg.get("layer_types")) {
            if (types->type != Value::Type::array || types->array.size() != c.layers)
                throw InputError(cfg.file(), "$.layer_types", "expected one entry per layer (" + std::to_string(c.layers) + ")");
            for (std::size_t l = 0; l < c.layers; ++l) {
                const Value& t = types->array[l];
                if (t.type != Value::Type::string || (t.string != "sliding_attention" && t.string != "full_attention"))
                    throw InputError(cfg.file(), "$.layer_types[" + std::to_string(l) + "]", "expected \"sliding_attention\" or \"full_attention\"");
                sliding[l] = t.string == "sliding_attention";
            }
        } else {  // every sliding_window_pattern-th layer is global
            const std::size_t pattern = cfg.count("sliding_window_pattern", 6);
            for (std::size_t l = 0; l < c.layers; ++l) sliding[l] = (l + 1) % pattern != 0;
        }
        for (std::size_t l = 0; l < c.layers; ++l)
            if (sliding[l]) c.layer_attention[l] = LayerAttention{window, local};
    }

    std::string described;
    const Files files = open_weights(dir, described);
    m->files = files;
    info.file = described;
    info.naming = "huggingface";
    info.layout = "nn.Linear [out, in]";
    info.heads_inferred = false;
    const Reader r(files, "model.");
    const SafeTensors::Entry* embed = r.find("embed_tokens.weight");
    if (!embed) throw InputError(files.front()->file(), "$", "missing tensor \"model.embed_tokens.weight\": not a " + family + " checkpoint");
    info.dtype = embed->dtype;
    check_layer_names(files, "model.layers.", c.layers, cfg.file());  // fewer than it says: the first missing tensor is named below

    const std::size_t C = c.width, H = c.heads, G = c.kv_heads, d = c.head_dim;
    DecoderWeights& w = m->weights;
    w.embed = r.linear("embed_tokens.weight", C, c.vocab, true);  // [vocab, C]
    // Gemma stores its norms' scales around 0 and multiplies by (1 + w): read as 1 + w, in float32
    auto norm = [&](const std::string& name, std::size_t n) {
        Norm nm = r.norm(name, n, NormKind::rms_norm);
        if (gemma)
            for (float& v : nm.scale) v = 1.0f + v;
        return nm;
    };
    for (std::size_t l = 0; l < c.layers; ++l) {
        const std::string p = "layers." + std::to_string(l) + ".";
        BlockWeights b;
        b.norm_1 = norm(p + "input_layernorm", C);
        if (gemma) {
            b.attention_norm = norm(p + "post_attention_layernorm", C);
            b.norm_2 = norm(p + "pre_feedforward_layernorm", C);
            b.mlp_norm = norm(p + "post_feedforward_layernorm", C);
        } else {
            b.norm_2 = norm(p + "post_attention_layernorm", C);
        }
        AttentionWeights& a = b.attn;
        a.query = r.linear(p + "self_attn.q_proj.weight", C, H * d, true);
        a.key = r.linear(p + "self_attn.k_proj.weight", C, G * d, true);
        a.value = r.linear(p + "self_attn.v_proj.weight", C, G * d, true);
        a.out_proj = r.linear(p + "self_attn.o_proj.weight", H * d, C, true);
        if (attention_bias) {
            a.query.b = r.vec(p + "self_attn.q_proj.bias", H * d);
            a.key.b = r.vec(p + "self_attn.k_proj.bias", G * d);
            a.value.b = r.vec(p + "self_attn.v_proj.bias", G * d);
            if (!qwen2) a.out_proj->b = r.vec(p + "self_attn.o_proj.bias", C);
        }
        a.heads = H;
        a.kv_heads = G;
        if (qwen3 || gemma) {
            a.q_norm = norm(p + "self_attn.q_norm", d).scale;
            a.k_norm = norm(p + "self_attn.k_norm", d).scale;
            a.qk_norm_eps = c.norm_eps;
        }
        b.gate = r.linear(p + "mlp.gate_proj.weight", C, hidden, true);
        b.up = r.linear(p + "mlp.up_proj.weight", C, hidden, true);
        b.down = r.linear(p + "mlp.down_proj.weight", hidden, C, true);
        w.blocks.push_back(std::move(b));
    }
    w.final_norm = norm("norm", C);
    if (!c.tied_head) w.head = r.with_prefix("").linear("lm_head.weight", C, c.vocab, true);
    info.unused = r.unused();
    r.touch_in_background();
    info.kv_heads = G;
    info.head_dim = d;
    info.config = cfg.used();
    return m;
}

// generation_config.json's eos_token_id (a number or a list), when the folder has one.
std::vector<std::size_t> end_ids(const fs::path& dir, std::size_t vocab) {
    const fs::path file = dir / "generation_config.json";
    if (!fs::exists(file)) return {};
    const Value doc = json_input::parse_plain(read_text_file(file.string(), true), file.string());
    const Value* eos = doc.is_object() ? doc.find("eos_token_id") : nullptr;
    std::vector<std::size_t> ids;
    if (!eos || eos->type == Value::Type::null) return ids;
    const std::vector<Value> items = eos->type == Value::Type::array ? eos->array : std::vector<Value>{*eos};
    for (const Value& v : items) {
        if (v.type != Value::Type::number || v.number < 0 || v.number != std::floor(v.number) || v.number >= static_cast<double>(vocab))
            throw InputError(file.string(), "$.eos_token_id", "expected token ids below the vocabulary's " + std::to_string(vocab));
        ids.push_back(static_cast<std::size_t>(v.number));
    }
    return ids;
}

}  // namespace

Model load_model(const std::string& path) {
    const fs::path dir(path);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        if (fs::exists(dir, ec)) throw InputError(path, "", "not a folder: a model is read from a Hugging Face model folder (config.json and the weights)");
        throw InputError(path, "", "no such folder");
    }
    const std::string config_file = (dir / "config.json").string();
    if (!fs::exists(dir / "config.json")) throw InputError(path, "", "no config.json in the folder: a Hugging Face model folder has one");
    Config cfg(config_file, json_input::parse_plain(read_text_file(config_file, true), config_file));
    const std::string family = cfg.text("model_type");
    cfg.get("architectures");
    if (family == "gpt2") {
        const std::size_t heads = cfg.count("n_head");
        std::string described;
        const Files files = open_weights(dir, described);
        if (files.size() != 1) throw InputError(described, "", "a sharded GPT-2 checkpoint is not supported: one model.safetensors");
        Model m = load_gpt2(files.front()->file(), heads);
        auto copy = std::make_shared<LoadedModel>(*m);
        copy->info.config = cfg.used();
        copy->info.end_ids = end_ids(dir, copy->info.vocab);
        return copy;
    }
    if (family == "llama" || family == "qwen2" || family == "qwen3" || family == "gemma3_text") {
        Model m = load_hf_decoder(dir, cfg, family);
        std::const_pointer_cast<LoadedModel>(m)->info.end_ids = end_ids(dir, m->info.vocab);
        return m;
    }
    if (family == "gemma3")
        throw InputError(config_file, "$.model_type",
                         "\"gemma3\" is Gemma 3's image-and-text model (4B and up); its text part is not supported yet. Supported: " + std::string(supported));
    throw InputError(config_file, "$.model_type", "\"" + family + "\" is not supported. Supported: " + std::string(supported));
}

}  // namespace attnwalk
