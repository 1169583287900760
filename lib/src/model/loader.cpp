// The one loader: a Hugging Face model folder read through its family's spec
// (model/family.hpp). config.json says the family (model_type) and the sizes; the
// weights are model.safetensors or the shards model.safetensors.index.json names; each
// tensor is found by the spec's names and read where it lies (F32) or widened as used
// (BF16, F16). No family is named here, nor any kind's own field or tensor (the decoder's
// fields are read here: sizes, norms, biases, the tied head): everything that differs is in
// the spec, and each kind of block reads its own part (blocks/).
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/io/gguf.hpp"
#include "attnwalk/io/json_input.hpp"
#include "attnwalk/io/safetensors.hpp"
#include "attnwalk/model/decoder.hpp"
#include "kinds.hpp"
#include "config.hpp"

namespace attnwalk {

namespace model_detail {

using json_input::Value;
namespace fs = std::filesystem;

std::string value_text(const Value& v, bool quoted) {
    if (quoted && v.type == Value::Type::string) return json_input::quote(v.string);
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

ConfigFile::ConfigFile(std::string file, Value doc, std::string root) : file_(std::move(file)), doc_(std::move(doc)), root_(std::move(root)) {
    if (!doc_.is_object()) throw InputError(file_, root_, "expected a JSON object, got " + json_input::type_name(doc_));
}

std::unique_ptr<ConfigFile> ConfigFile::nested(const std::string& key) {
    const Value* v = doc_.find(key);  // not noted: its fields are, one by one
    if (!v || v->type == Value::Type::null) return nullptr;
    if (!v->is_object()) throw InputError(file_, at(key), "expected an object, got " + json_input::type_name(*v));
    auto inner = std::make_unique<ConfigFile>(file_, *v, at(key));
    inner->parent_ = this;
    return inner;
}

const Value* ConfigFile::get(const std::string& key) {
    const Value* v = doc_.find(key);
    if ((!v || v->type == Value::Type::null) && parent_) return parent_->get(key);
    const std::string name = root_ == "$" ? key : root_.substr(2) + "." + key;  // "text_config.hidden_size"
    if (v && v->type != Value::Type::null && std::none_of(used_.begin(), used_.end(), [&](const auto& u) { return u.first == name; }))
        used_.emplace_back(name, value_text(*v));
    return v && v->type != Value::Type::null ? v : nullptr;
}

std::string ConfigFile::at(const std::string& key) const {
    const bool plain = key.find_first_of(".[") == std::string::npos;
    const Value* v = plain ? doc_.find(key) : nullptr;
    if (plain && (!v || v->type == Value::Type::null) && parent_ && parent_->doc_.find(key)) return parent_->at(key);
    return root_ + "." + key;
}

std::string ConfigFile::text(const std::string& key) {
    const Value* v = get(key);
    if (!v) throw InputError(file_, root_, "missing \"" + key + "\"");
    if (v->type != Value::Type::string) throw InputError(file_, at(key), "expected a string, got " + json_input::type_name(*v));
    return v->string;
}

double ConfigFile::number(const std::string& key, std::optional<double> fallback) {
    const Value* v = get(key);
    if (!v) {
        if (fallback) return *fallback;
        throw InputError(file_, root_, "missing \"" + key + "\"");
    }
    return number_of(*v, at(key));
}

double ConfigFile::number_of(const Value& v, const std::string& path) const {
    if (v.type != Value::Type::number) throw InputError(file_, path, "expected a number, got " + json_input::type_name(v));
    if (!std::isfinite(v.number)) throw InputError(file_, path, "expected a finite number, got " + value_text(v));
    return v.number;
}

double ConfigFile::require(double value, bool ok, const std::string& path, const std::string& expected) const {
    if (!ok) throw InputError(file_, path, "expected " + expected + ", got " + json_input::number_text(value));
    return value;
}

std::size_t ConfigFile::count(const std::string& key, std::optional<std::size_t> fallback, std::size_t least, std::size_t most) {
    const Value* v = get(key);
    if (!v) {
        if (fallback) return *fallback;
        throw InputError(file_, root_, "missing \"" + key + "\"");
    }
    if (v->type != Value::Type::number || v->number != std::floor(v->number) || v->number < static_cast<double>(least) || v->number > static_cast<double>(most))
        throw InputError(file_, at(key), "expected a whole number from " + std::to_string(least) + " to " +
                                             (most == count_most ? std::string("10^9") : std::to_string(most)) + ", got " + value_text(*v, true));
    return static_cast<std::size_t>(v->number);
}

bool ConfigFile::flag(const std::string& key, bool fallback) {
    const Value* v = get(key);
    if (!v) return fallback;
    if (v->type != Value::Type::boolean) throw InputError(file_, at(key), "expected true or false, got " + value_text(*v, true));
    return v->boolean;
}

// Whether a name is there, a link counting as there even when it leads nowhere (opening it
// then says why), and whether it leads to something: never a filesystem_error.
bool present(const fs::path& p) {
    std::error_code ec;
    return fs::exists(fs::symlink_status(p, ec));
}
bool reachable(const fs::path& p) {
    std::error_code ec;
    return fs::exists(p, ec);
}

Files open_weights(const fs::path& dir, std::string& described, double memory_budget) {
    const fs::path single = dir / "model.safetensors", index = dir / "model.safetensors.index.json";
    // a model.safetensors that leads nowhere stands aside for an index that is there
    if (reachable(single) || (present(single) && !reachable(index))) {
        described = single.string();
        return {std::make_shared<const SafeTensors>(single.string(), memory_budget)};
    }
    if (!present(index))
        throw InputError(dir.string(), "", "no model.safetensors or model.safetensors.index.json in the folder (a Hugging Face model folder holds one)");
    const std::string file = index.string();
    const std::string text = read_text_file(file, true);
    json_input::check_parse_budget(file, "index", static_cast<double>(text.size()), memory_budget);
    const Value doc = json_input::parse_plain(text, file);
    const Value* map = doc.is_object() ? doc.find("weight_map") : nullptr;
    if (!map || !map->is_object()) throw InputError(file, "$.weight_map", "expected {\"tensor name\": \"shard file\", ...}");
    std::map<std::string, std::shared_ptr<const SafeTensors>> shards;
    for (const auto& [name, shard] : map->object) {
        const std::string at = json_input::member_path("$.weight_map", name);
        if (shard.type != Value::Type::string || shard.string.empty() || shard.string.find_first_of(std::string("/\0", 2)) != std::string::npos ||
            shard.string == ".." || shard.string == ".")
            throw InputError(file, at, "expected the name of a shard file in the same folder, got " +
                                           (shard.type == Value::Type::string ? json_input::quote(shard.string) : json_input::type_name(shard)));
        auto& st = shards[shard.string];
        if (!st) st = std::make_shared<const SafeTensors>((dir / shard.string).string(), memory_budget);
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

std::vector<std::size_t> end_ids(const fs::path& dir, std::size_t vocab) {
    const fs::path file = dir / "generation_config.json";
    if (!reachable(file)) return {};  // optional: a link to nowhere is as good as none
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

}  // namespace model_detail

namespace {

using json_input::Value;
using model_detail::ConfigFile;
using model_detail::Files;
using model_detail::Reader;
namespace fs = std::filesystem;

// The most layers a checkpoint may have: far above the deepest published (Llama 3.1 405B, 126),
// and low enough that planning them costs little (about a megabyte).
constexpr std::size_t max_layers = 4096;

// No layer beyond the config's count: the largest N of "<prefix>N." is below num_hidden_layers.
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

Model load_with_spec(ConfigFile& cfg, const FamilySpec& f, const model_detail::OpenWeights& open) {
    auto m = std::make_shared<LoadedModel>();
    ModelInfo& info = m->info;
    DecoderConfig& c = m->weights.config;
    c.family = &f;
    c.vocab = info.vocab = cfg.count("vocab_size");
    c.width = info.width = cfg.count("hidden_size");
    // each layer is planned (its window, RoPE, kind) before any tensor is read: bounded first (max_layers)
    c.layers = info.layers = cfg.count("num_hidden_layers", std::nullopt, 1, max_layers);
    c.heads = info.heads = cfg.count("num_attention_heads");
    c.kv_heads = cfg.count("num_key_value_heads", c.heads);
    if (c.heads % c.kv_heads != 0)
        throw InputError(cfg.file(), cfg.at("num_key_value_heads"),
                         std::to_string(c.kv_heads) + " key/value heads do not divide " + std::to_string(c.heads) + " query heads");
    const std::string& head_dim = f.fields.head_dim;  // empty: the family takes d_h = C/H whatever config.json says
    const bool explicit_head_dim = !head_dim.empty() && cfg.get(head_dim) != nullptr;
    if (!explicit_head_dim && c.width % c.heads != 0)
        throw InputError(cfg.file(), cfg.root(), "hidden_size " + std::to_string(c.width) + " is not a multiple of num_attention_heads" +
                                                     (head_dim.empty() ? std::string() : ": give " + head_dim));
    c.head_dim = explicit_head_dim ? cfg.count(head_dim) : c.width / c.heads;
    const std::size_t hidden = cfg.count("intermediate_size");
    c.context = info.context = cfg.count("max_position_embeddings");
    c.norm = f.norm;
    const double eps = cfg.number(f.fields.norm_eps, f.fields.norm_eps_default);
    c.norm_eps = static_cast<float>(cfg.require(eps, eps >= 0.0, cfg.at(f.fields.norm_eps), "a number of at least 0 (added to the variance)"));
    c.positions = f.positions;
    c.mlp = f.mlp;
    c.tied_head = cfg.flag("tie_word_embeddings", f.fields.tied_default);
    if (!f.fields.logit_scale.empty()) {
        const double scale = cfg.number(f.fields.logit_scale, f.fields.logit_scale_default);
        c.logit_scale = static_cast<float>(cfg.require(scale, std::isfinite(scale) && scale != 0.0 && std::fabs(scale) < 1e30, cfg.at(f.fields.logit_scale),
                                                       "a finite number other than 0 (the logits are multiplied by it)"));
    }
    c.parallel = f.placement == NormPlacement::parallel;
    model_detail::check_activation(cfg, f);
    const bool attention_bias = cfg.flag("attention_bias", false);
    if (cfg.flag("mlp_bias", false)) throw InputError(cfg.file(), cfg.at("mlp_bias"), "MLP biases are not supported");
    const std::string& softcap = f.fields.logit_softcap;
    if (!softcap.empty() && cfg.get(softcap)) {  // the logits soft-capped, tanh(z / cap)·cap
        const double cap = cfg.number(softcap);
        c.logit_softcap = static_cast<float>(cfg.require(cap, cap > 0.0 && cap < 1e30, cfg.at(softcap), "a number above 0 (the logits' soft cap), or null"));
    }
    for (const char* capped : {"final_logit_softcapping", "attn_logit_softcapping"})
        if (capped != softcap && cfg.get(capped)) throw InputError(cfg.file(), cfg.at(capped), "soft-capping (Gemma 2) is not supported: expected null");
    for (const auto& [field, what] : f.fields.refused_nonzero)
        if (!cfg.get(field) || cfg.number(field) != 0.0)
            throw InputError(cfg.file(), cfg.get(field) ? cfg.at(field) : cfg.root(),
                             f.model_type + " with " + what + " is not supported: expected " + field + " 0" + (cfg.get(field) ? "" : ", which is not given (its default is not 0)"));
    for (const std::string& refused : f.fields.refused_true)
        if (cfg.flag(refused, false))
            throw InputError(cfg.file(), cfg.at(refused), f.model_type + " with " + refused + " true is not supported: expected false");
    // each layer's kinds, window and RoPE; then each kind's own fields, read once
    model_detail::plan_layers(cfg, f, c);
    const auto experts = model_detail::experts_reader(cfg, f, c, hidden);
    const auto deltanet = model_detail::deltanet_reader(cfg, f, c);
    const auto latent = model_detail::latent_reader(cfg, f, c, attention_bias);
    if (f.embed_scale_sqrt_width) c.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.width)));
    const auto heads = model_detail::heads_reader(cfg, f, c, attention_bias);
    const auto mlp = model_detail::mlp_reader(cfg, f, c, hidden);
    const auto per_layer = model_detail::per_layer_reader(cfg, f, c);

    std::string described;
    const Files files = open(described);
    m->files = files;
    info.file = described;
    info.naming = "huggingface";
    info.layout = "nn.Linear [out, in]";
    info.heads_inferred = false;
    const TensorNames& n = f.names;
    const Reader r(files, n.prefix);
    const SafeTensors::Entry* embed = r.find(n.embed);
    if (!embed) throw InputError(files.front()->file(), "$", "missing tensor \"" + n.prefix + n.embed + "\": not a " + f.model_type + " checkpoint");
    info.dtype = embed->dtype;
    // fewer: the first missing tensor is named below; more only as the family's extra layers (DeepSeek's multi-token prediction)
    const std::size_t extra = f.fields.extra_layers.empty() ? 0 : cfg.count(f.fields.extra_layers, 0, 0);
    check_layer_names(files, n.prefix + n.layer.substr(0, n.layer.find("{L}")), c.layers + extra, cfg.file());

    const std::size_t C = c.width;
    DecoderWeights& w = m->weights;
    w.embed = r.linear(n.embed, C, c.vocab, true);  // [vocab, C]
    const bool pre = f.placement != NormPlacement::post;
    const bool post = f.placement == NormPlacement::post || f.placement == NormPlacement::both;
    const model_detail::KindReader* attention_readers[] = {heads.get(), latent.get(), deltanet.get()};  // by AttentionKind
    for (std::size_t l = 0; l < c.layers; ++l) {
        const std::string p = model_detail::indexed(n.layer, l);
        const LayerSpec& ls = c.layer_specs[l];
        BlockWeights b;
        if (pre) b.norm_1 = model_detail::read_norm(r, f, p + n.pre_attention_norm, C);
        if (post) b.attention_norm = model_detail::read_norm(r, f, p + n.post_attention_norm, C);
        if (pre && !c.parallel) b.norm_2 = model_detail::read_norm(r, f, p + n.pre_mlp_norm, C);
        if (post) b.mlp_norm = model_detail::read_norm(r, f, p + n.post_mlp_norm, C);
        if (!n.layer_scalar.empty()) b.layer_scalar = r.vec(p + n.layer_scalar, 1)(0);
        attention_readers[static_cast<std::size_t>(ls.attention)]->read(r, p, l, b);
        (ls.feed_forward == FeedForwardKind::experts ? *experts : *mlp).read(r, p, l, b);
        w.blocks.push_back(std::move(b));
    }
    if (per_layer) per_layer->read(r, w);
    w.final_norm = model_detail::read_norm(r, f, n.final_norm, C);
    if (!c.tied_head) w.head = r.with_prefix("").linear(n.head, C, c.vocab, true);
    info.unused = r.unused();
    r.touch_in_background();
    info.kv_heads = c.kv_heads;
    info.head_dim = c.head_dim;
    info.config = cfg.used();
    return m;
}

}  // namespace

Model model_detail::load_spec(ConfigFile& cfg, const FamilySpec& f, const OpenWeights& open) { return load_with_spec(cfg, f, open); }

Model load_model(const std::string& path, double memory_budget) {
    const fs::path dir(path);
    std::error_code ec;
    if (GgufFile::is_gguf(path)) return model_detail::load_gguf(path, memory_budget);  // a file: llama.cpp's, Ollama's blob, LM Studio's
    if (!fs::is_directory(dir, ec)) {
        if (fs::exists(dir, ec)) throw InputError(path, "", "not a folder: a model is read from a Hugging Face model folder (config.json and the weights) or a GGUF file");
        throw InputError(path, "", "no such folder");
    }
    const std::string config_file = (dir / "config.json").string();
    if (!model_detail::present(dir / "config.json")) throw InputError(path, "", "no config.json in the folder: a Hugging Face model folder has one");
    const std::string config_text = read_text_file(config_file, true);
    json_input::check_parse_budget(config_file, "text", static_cast<double>(config_text.size()), memory_budget);
    ConfigFile cfg(config_file, json_input::parse_plain(config_text, config_file));
    const std::string type = cfg.text("model_type");
    cfg.get("architectures");
    const FamilySpec* family = find_family(type);
    if (!family) {
        for (const FamilySpec* f : families())
            for (const auto& [refused, why] : f->refused_types)
                if (refused == type)
                    throw InputError(config_file, "$.model_type", "\"" + type + "\" is " + why + ". Supported: " + supported_families());
        throw InputError(config_file, "$.model_type", "\"" + type + "\" is not supported. Supported: " + supported_families());
    }
    // a multimodal checkpoint (Qwen3.5): the text model's fields in text_config, read from there
    const std::unique_ptr<ConfigFile> text = family->fields.nested.empty() ? nullptr : cfg.nested(family->fields.nested);
    ConfigFile& fields = text ? *text : cfg;
    const model_detail::OpenWeights open = [&](std::string& described) { return model_detail::open_weights(dir, described, memory_budget); };
    Model m = family->read_weights ? family->read_weights(fields, open, memory_budget) : load_with_spec(fields, *family, open);
    auto loaded = std::const_pointer_cast<LoadedModel>(m);
    if (text) loaded->info.config.insert(loaded->info.config.begin(), cfg.used().begin(), cfg.used().end());
    loaded->info.end_ids = model_detail::end_ids(dir, loaded->info.vocab);
    return m;
}

}  // namespace attnwalk
