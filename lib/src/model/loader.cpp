// The one loader: a Hugging Face model folder read through its family's spec
// (model/family.hpp). config.json says the family (model_type) and the sizes; the
// weights are model.safetensors or the shards model.safetensors.index.json names; each
// tensor is found by the spec's names and read where it lies (F32) or widened as used
// (BF16, F16). No family is named here: everything that differs is in the spec.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <map>
#include <set>
#include <sstream>

#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/io/json_input.hpp"
#include "attnwalk/io/safetensors.hpp"
#include "attnwalk/model/decoder.hpp"
#include "config.hpp"

namespace attnwalk {

namespace model_detail {

using json_input::Value;
namespace fs = std::filesystem;

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

std::size_t ConfigFile::count(const std::string& key, std::optional<std::size_t> fallback, std::size_t least) {
    const Value* v = get(key);
    if (!v) {
        if (fallback) return *fallback;
        throw InputError(file_, root_, "missing \"" + key + "\"");
    }
    if (v->type != Value::Type::number || v->number != std::floor(v->number) || v->number < static_cast<double>(least) || v->number > 1e9)
        throw InputError(file_, at(key), "expected a whole number from " + std::to_string(least) + " to 10^9, got " + value_text(*v));
    return static_cast<std::size_t>(v->number);
}

bool ConfigFile::flag(const std::string& key, bool fallback) {
    const Value* v = get(key);
    if (!v) return fallback;
    if (v->type != Value::Type::boolean) throw InputError(file_, at(key), "expected true or false, got " + value_text(*v));
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

// A rope_scaling object (or a rope_parameters one) read into RoPE's scaling.
RopeScaling rope_scaling(ConfigFile& cfg, const Value* scaling, const std::string& path, std::size_t context) {
    RopeScaling s;
    if (!scaling) return s;
    if (!scaling->is_object()) throw InputError(cfg.file(), path, "expected an object or null");
    const Value* type = scaling->find("rope_type");
    if (!type) type = scaling->find("type");
    const std::string kind = type && type->type == Value::Type::string ? type->string : "";
    auto num = [&](const char* key, std::optional<double> fallback) {
        const Value* v = scaling->find(key);
        if (!v || v->type == Value::Type::null) {
            if (fallback) return *fallback;
            throw InputError(cfg.file(), path, std::string("missing \"") + key + "\" for rope_type " + kind);
        }
        return cfg.number_of(*v, path + "." + key);
    };
    if (kind == "default" || kind.empty()) return s;
    if (kind == "linear") {
        s.kind = RopeScaling::Kind::linear;
        s.factor = num("factor", std::nullopt);
    } else if (kind == "llama3") {
        s.kind = RopeScaling::Kind::llama3;
        s.factor = num("factor", std::nullopt);
        s.low_freq_factor = num("low_freq_factor", std::nullopt);
        s.high_freq_factor = num("high_freq_factor", std::nullopt);
        s.original_context = num("original_max_position_embeddings", std::nullopt);
    } else if (kind == "yarn") {
        s.kind = RopeScaling::Kind::yarn;
        s.original_context = num("original_max_position_embeddings", static_cast<double>(context));
        if (!scaling->find("factor"))  // the factor it implies is context / original: name the field it comes from
            cfg.require(s.original_context, s.original_context >= 1.0 && s.original_context <= static_cast<double>(context),
                        path + ".original_max_position_embeddings",
                        "a context from 1 to max_position_embeddings (" + std::to_string(context) + ") when no factor is given");
        s.factor = num("factor", static_cast<double>(context) / s.original_context);
        s.beta_fast = num("beta_fast", 32.0);
        s.beta_slow = num("beta_slow", 1.0);
        if (const Value* a = scaling->find("attention_factor"); a && a->type != Value::Type::null) s.attention_factor = cfg.number_of(*a, path + ".attention_factor");
        const Value* m = scaling->find("mscale");
        const Value* all = scaling->find("mscale_all_dim");
        if (!s.attention_factor && m && all && m->type != Value::Type::null && all->type != Value::Type::null) {
            const double mv = cfg.number_of(*m, path + ".mscale"), av = cfg.number_of(*all, path + ".mscale_all_dim");
            if (mv != 0.0 && av != 0.0) s.attention_factor = yarn_mscale(s.factor, mv) / yarn_mscale(s.factor, av);
        }
        if (const Value* t = scaling->find("truncate"); t && t->type == Value::Type::boolean) s.truncate = t->boolean;
    } else {
        throw InputError(cfg.file(), path, "rope_type \"" + kind + "\" is not supported (default, linear, llama3 and yarn are)");
    }
    // Each value named where it stands, before the arithmetic would turn it into an overflow
    // or a NaN far from its cause.
    cfg.require(s.factor, s.factor >= 1.0, path + ".factor", "a factor of at least 1 (how many times the original context it stretches to)");
    if (s.kind == RopeScaling::Kind::llama3) {
        cfg.require(s.low_freq_factor, s.low_freq_factor > 0.0, path + ".low_freq_factor", "a number above 0");
        cfg.require(s.high_freq_factor, s.high_freq_factor > s.low_freq_factor, path + ".high_freq_factor",
                    "a number above low_freq_factor (" + json_input::number_text(s.low_freq_factor) + ")");
    }
    if (s.kind != RopeScaling::Kind::linear)
        cfg.require(s.original_context, s.original_context >= 1.0, path + ".original_max_position_embeddings", "a context of at least 1 token");
    if (s.kind == RopeScaling::Kind::yarn) {
        cfg.require(s.beta_fast, s.beta_fast > 0.0, path + ".beta_fast", "a number above 0");
        cfg.require(s.beta_slow, s.beta_slow > 0.0, path + ".beta_slow", "a number above 0");
        if (s.attention_factor) cfg.require(*s.attention_factor, *s.attention_factor > 0.0, path + ".attention_factor", "a number above 0");
    }
    return s;
}

// `pattern` with `mark` ("{L}" a layer, "{E}" an expert) replaced by the index.
std::string layer_name(const std::string& pattern, std::size_t index, const char* mark = "{L}") {
    std::string out = pattern;
    const std::size_t at = out.find(mark);
    if (at != std::string::npos) out.replace(at, 3, std::to_string(index));
    return out;
}

// "mlp.gate_proj" -> "gate_proj": a dense MLP's projection as an expert names it.
std::string last_part(const std::string& name) { return name.substr(name.find_last_of('.') + 1); }

// Which layers are sliding-window ones: config.json's layer_types, or the family's pattern.
// `linear`: which are Gated DeltaNet layers ("linear_attention"), for a family that has them.
std::vector<bool> sliding_layers(ConfigFile& cfg, const FamilySpec& f, std::size_t layers, std::vector<bool>& linear) {
    std::vector<bool> sliding(layers, false);
    linear.assign(layers, false);
    const bool has_linear = !f.names.linear_attn.empty();
    if (const Value* types = cfg.get("layer_types")) {
        if (types->type != Value::Type::array || types->array.size() != layers)
            throw InputError(cfg.file(), cfg.at("layer_types"), "expected one entry per layer (" + std::to_string(layers) + ")");
        for (std::size_t l = 0; l < layers; ++l) {
            const Value& t = types->array[l];
            const bool known = t.type == Value::Type::string &&
                               (has_linear ? t.string == "linear_attention" || t.string == "full_attention"
                                           : t.string == "sliding_attention" || t.string == "full_attention");
            if (!known)
                throw InputError(cfg.file(), cfg.at("layer_types[" + std::to_string(l) + "]"),
                                 has_linear ? "expected \"linear_attention\" or \"full_attention\"" : "expected \"sliding_attention\" or \"full_attention\"");
            sliding[l] = t.string == "sliding_attention";
            linear[l] = t.string == "linear_attention";
        }
    } else if (has_linear) {  // Qwen3NextConfig's default: every full_attention_interval-th layer full, the others linear
        const std::size_t interval = cfg.count("full_attention_interval", 4);
        for (std::size_t l = 0; l < layers; ++l) linear[l] = (l + 1) % interval != 0;
    } else if (f.window_pattern == WindowPattern::every_nth_full) {  // every pattern-th layer full
        const std::size_t pattern = cfg.count("sliding_window_pattern", f.window_pattern_default);
        for (std::size_t l = 0; l < layers; ++l) sliding[l] = (l + 1) % pattern != 0;
    }
    return sliding;
}

// Each layer's window and RoPE, as the spec and config.json say.
void layer_attention(ConfigFile& cfg, const FamilySpec& f, DecoderConfig& c) {
    const std::size_t L = c.layers;
    std::vector<bool> linear;
    const std::vector<bool> sliding = sliding_layers(cfg, f, L, linear);
    std::optional<std::size_t> window;
    if (std::find(sliding.begin(), sliding.end(), true) != sliding.end()) window = cfg.count("sliding_window");
    // rope_theta and rope_scaling, or transformers 5's rope_parameters (one, or one per layer type)
    const Value* parameters = cfg.get("rope_parameters");
    if (parameters && !parameters->is_object()) throw InputError(cfg.file(), cfg.at("rope_parameters"), "expected an object or null");
    const auto rope_of = [&](bool slide) -> RopeParams {
        const std::string type = slide ? "sliding_attention" : "full_attention";
        const Value* own = parameters ? parameters->find(type) : nullptr;
        const Value* p = own ? own : parameters && !parameters->find("full_attention") ? parameters : nullptr;
        const std::string path = own ? cfg.at("rope_parameters." + type) : cfg.at("rope_parameters");
        RopeParams r;
        const Value* theta = p ? p->find("rope_theta") : nullptr;
        std::string from = cfg.at("rope_theta");
        if (slide && !f.fields.sliding_rope_base.empty() && !own) {
            r.base = cfg.number(f.fields.sliding_rope_base, f.fields.sliding_rope_base_default);
            from = cfg.at(f.fields.sliding_rope_base);
        } else if (theta && theta->type != Value::Type::null) {
            r.base = cfg.number_of(*theta, path + ".rope_theta");
            from = path + ".rope_theta";
        } else {
            r.base = cfg.number("rope_theta", f.fields.rope_theta_default);
        }
        cfg.require(r.base, r.base > 1.0, from, "a RoPE base above 1 (the frequencies are base^(−2i/d))");
        if (!slide || f.sliding_layers_scaled || own) r.scaling = p ? rope_scaling(cfg, p, path, c.context) : rope_scaling(cfg, cfg.get("rope_scaling"), cfg.at("rope_scaling"), c.context);
        // partial_rotary_factor beside rope_theta, or inside rope_parameters (transformers 5, Qwen3.5)
        const Value* inside = p ? p->find("partial_rotary_factor") : nullptr;
        const std::string partial_at = inside && inside->type != Value::Type::null ? path + ".partial_rotary_factor" : cfg.at("partial_rotary_factor");
        const double partial = inside && inside->type != Value::Type::null ? cfg.number_of(*inside, partial_at) : cfg.number("partial_rotary_factor", 1.0);
        if (!(partial > 0.0 && partial <= 1.0)) throw InputError(cfg.file(), partial_at, "expected a number in (0, 1], got " + json_input::number_text(partial));
        if (partial < 1.0) r.rotary_dim = static_cast<std::size_t>(static_cast<double>(c.head_size()) * partial);
        return r;
    };
    std::vector<bool> rotates(L, true);
    if (!f.fields.no_rope_layers.empty())
        if (const Value* list = cfg.get(f.fields.no_rope_layers)) {
            const std::string at = cfg.at(f.fields.no_rope_layers);
            if (list->type != Value::Type::array || list->array.size() != L)
                throw InputError(cfg.file(), at, "expected one entry per layer (" + std::to_string(L) + "): 1 where it applies RoPE, 0 where not");
            for (std::size_t l = 0; l < L; ++l) {
                const Value& v = list->array[l];
                if (v.type != Value::Type::number || (v.number != 0.0 && v.number != 1.0))
                    throw InputError(cfg.file(), at + "[" + std::to_string(l) + "]", "expected 1 (RoPE) or 0 (no RoPE), got " + model_detail::value_text(v));
                rotates[l] = v.number == 1.0;
            }
        }
    const RopeParams full = rope_of(false);
    std::optional<RopeParams> local;
    if (window) local = rope_of(true);
    c.layer_attention.assign(L, LayerAttention{});
    for (std::size_t l = 0; l < L; ++l) {
        LayerAttention& la = c.layer_attention[l];
        if (sliding[l]) la.window = window;
        la.linear = linear[l];
        if (rotates[l]) la.rope = sliding[l] ? *local : full;
    }
}

Model load_with_spec(const fs::path& dir, ConfigFile& cfg, const FamilySpec& f, double memory_budget) {
    auto m = std::make_shared<LoadedModel>();
    ModelInfo& info = m->info;
    DecoderConfig& c = m->weights.config;
    c.family = &f;
    c.vocab = info.vocab = cfg.count("vocab_size");
    c.width = info.width = cfg.count("hidden_size");
    c.layers = info.layers = cfg.count("num_hidden_layers");
    c.heads = info.heads = cfg.count("num_attention_heads");
    c.kv_heads = cfg.count("num_key_value_heads", c.heads);
    if (c.heads % c.kv_heads != 0)
        throw InputError(cfg.file(), cfg.at("num_key_value_heads"),
                         std::to_string(c.kv_heads) + " key/value heads do not divide " + std::to_string(c.heads) + " query heads");
    const bool explicit_head_dim = cfg.get("head_dim") != nullptr;
    if (!explicit_head_dim && c.width % c.heads != 0)
        throw InputError(cfg.file(), cfg.root(), "hidden_size " + std::to_string(c.width) + " is not a multiple of num_attention_heads: give head_dim");
    c.head_dim = cfg.count("head_dim", c.width / c.heads);
    const std::size_t hidden = cfg.count("intermediate_size");
    c.context = info.context = cfg.count("max_position_embeddings");
    c.norm = f.norm;
    const double eps = cfg.number(f.fields.norm_eps, f.fields.norm_eps_default);
    c.norm_eps = static_cast<float>(cfg.require(eps, eps >= 0.0, cfg.at(f.fields.norm_eps), "a number of at least 0 (added to the variance)"));
    c.positions = f.positions;
    c.mlp = f.mlp;
    c.tied_head = cfg.flag("tie_word_embeddings", f.fields.tied_default);
    const auto act_field = std::find_if(f.fields.activation.begin(), f.fields.activation.end(), [&](const std::string& k) { return cfg.get(k); });
    const std::string field = act_field == f.fields.activation.end() ? f.fields.activation.front() : *act_field;
    const std::string act = cfg.text(field);
    if (std::find(f.fields.activations.begin(), f.fields.activations.end(), act) == f.fields.activations.end())
        throw InputError(cfg.file(), cfg.at(field), f.model_type + "'s MLP is " + f.fields.activations.front() + "; \"" + act + "\" is not supported");
    const bool attention_bias = cfg.flag("attention_bias", false);
    if (cfg.flag("mlp_bias", false)) throw InputError(cfg.file(), cfg.at("mlp_bias"), "MLP biases are not supported");
    for (const char* capped : {"final_logit_softcapping", "attn_logit_softcapping"})
        if (cfg.get(capped)) throw InputError(cfg.file(), cfg.at(capped), "soft-capping (Gemma 2) is not supported: expected null");
    for (const std::string& refused : f.fields.refused_true)
        if (cfg.flag(refused, false))
            throw InputError(cfg.file(), cfg.at(refused), f.model_type + " with " + refused + " true is not supported: expected false");
    layer_attention(cfg, f, c);
    // a mixture of experts (the names say whether the family has one)
    std::size_t experts = 0, expert_hidden = hidden, first_dense = 0, shared_width = 0, sparse_step = 1;
    std::vector<bool> dense_only(c.layers, false);
    MoeWeights moe_settings;  // what every layer's mixture shares: its routing and its experts' kind
    moe_settings.routing = f.routing;
    moe_settings.kind = f.expert_kind;
    if (!f.names.experts.empty()) {
        experts = cfg.count(f.fields.experts, std::nullopt, 0);  // 0: every layer a dense MLP (Qwen3-Next allows it)
    }
    if (experts) {
        moe_settings.top_k = cfg.count(f.fields.experts_per_token, std::nullopt, 1);
        if (moe_settings.top_k > experts)
            throw InputError(cfg.file(), cfg.at(f.fields.experts_per_token),
                             "each token chooses at most the " + std::to_string(experts) + " experts there are, not " + std::to_string(moe_settings.top_k));
        expert_hidden = cfg.count(f.fields.expert_hidden, hidden);
        if (!f.fields.first_dense.empty()) first_dense = cfg.count(f.fields.first_dense, 3, 0);  // DeepseekV3Config's default
        if (!f.fields.shared_experts.empty()) shared_width = cfg.count(f.fields.shared_experts, 0, 0) * expert_hidden;
        if (!f.fields.shared_expert_width.empty()) shared_width = cfg.count(f.fields.shared_expert_width, 0, 0);
        if (!f.fields.sparse_step.empty()) sparse_step = cfg.count(f.fields.sparse_step, 1);
        if (!f.fields.dense_layers.empty())
            if (const Value* list = cfg.get(f.fields.dense_layers)) {
                const std::string at = cfg.at(f.fields.dense_layers);
                if (list->type != Value::Type::array) throw InputError(cfg.file(), at, "expected a list of layer indices");
                for (std::size_t i = 0; i < list->array.size(); ++i) {
                    const Value& v = list->array[i];
                    if (v.type != Value::Type::number || v.number < 0 || v.number != std::floor(v.number) || v.number >= static_cast<double>(c.layers))
                        throw InputError(cfg.file(), at + "[" + std::to_string(i) + "]", "expected a layer index below " + std::to_string(c.layers));
                    dense_only[static_cast<std::size_t>(v.number)] = true;
                }
            }
        if (f.routing == RouterKind::softmax_all) moe_settings.normalise = cfg.flag("norm_topk_prob", moe_settings.normalise);  // MoeWeights' default when absent
        if (f.expert_kind == ExpertKind::clamped_swiglu) {
            const double limit = cfg.number(f.fields.swiglu_limit, moe_settings.limit);  // the clamp when config.json gives none (ops/moe.hpp)
            moe_settings.limit = static_cast<float>(cfg.require(limit, limit > 0.0, cfg.at(f.fields.swiglu_limit), "a number above 0 (the SwiGLU's clamp)"));
        }
        if (f.routing == RouterKind::sigmoid_grouped) {  // DeepseekV3TopkRouter's fields, with its defaults
            moe_settings.groups = cfg.count("n_group", 8);
            if (experts % moe_settings.groups != 0)
                throw InputError(cfg.file(), cfg.at("n_group"), std::to_string(moe_settings.groups) + " groups do not divide " + std::to_string(experts) + " experts");
            if (experts / moe_settings.groups < 2)
                throw InputError(cfg.file(), cfg.at("n_group"), "each group needs at least 2 experts (a group is scored by its two best), not " +
                                                              std::to_string(experts) + " experts in " + std::to_string(moe_settings.groups) + " groups");
            moe_settings.top_groups = cfg.count("topk_group", 4);
            if (moe_settings.top_groups > moe_settings.groups)
                throw InputError(cfg.file(), cfg.at("topk_group"), "at most the " + std::to_string(moe_settings.groups) + " groups there are, not " +
                                                                 std::to_string(moe_settings.top_groups));
            if (moe_settings.top_k > moe_settings.top_groups * (experts / moe_settings.groups))
                throw InputError(cfg.file(), cfg.at(f.fields.experts_per_token),
                                 "each token chooses its experts from the " + std::to_string(moe_settings.top_groups * (experts / moe_settings.groups)) +
                                     " in its best groups (topk_group × experts per group), not " + std::to_string(moe_settings.top_k));
            moe_settings.normalise = cfg.flag("norm_topk_prob", moe_settings.normalise);  // MoeWeights' default when absent
            const double scale = cfg.number("routed_scaling_factor", 2.5);
            moe_settings.routed_scale = static_cast<float>(cfg.require(scale, scale > 0.0, cfg.at("routed_scaling_factor"), "a number above 0"));
        }
    }
    // Gated DeltaNet layers: their heads and the convolution's taps, as Qwen3NextConfig names them
    std::size_t lin_k_heads = 0, lin_v_heads = 0, lin_k_dim = 0, lin_v_dim = 0, lin_kernel = 0;
    if (std::any_of(c.layer_attention.begin(), c.layer_attention.end(), [](const LayerAttention& la) { return la.linear; })) {
        lin_k_heads = cfg.count("linear_num_key_heads");
        lin_v_heads = cfg.count("linear_num_value_heads");
        if (lin_v_heads % lin_k_heads != 0)
            throw InputError(cfg.file(), cfg.at("linear_num_value_heads"), std::to_string(lin_k_heads) + " key heads do not divide " + std::to_string(lin_v_heads) + " value heads");
        lin_k_dim = cfg.count("linear_key_head_dim");
        lin_v_dim = cfg.count("linear_value_head_dim");
        lin_kernel = cfg.count("linear_conv_kernel_dim", 4);
    }
    // latent attention (MLA): its ranks and head parts, as DeepseekV3Config names them
    const bool latent = !f.names.kv_a.empty();
    std::size_t q_rank = 0, kv_rank = 0, nope = 0, rope_part = 0, value_dim = 0;
    if (latent) {
        q_rank = cfg.count("q_lora_rank", 0, 1);  // null or absent: a plain q_proj
        if (c.kv_heads != c.heads)
            throw InputError(cfg.file(), cfg.at("num_key_value_heads"), "latent attention makes a key and a value for every head: expected " + std::to_string(c.heads) +
                                                                      " (num_attention_heads), got " + std::to_string(c.kv_heads));
        kv_rank = cfg.count("kv_lora_rank");
        nope = cfg.count("qk_nope_head_dim", std::nullopt, 0);
        rope_part = cfg.count("qk_rope_head_dim", std::nullopt, 0);
        value_dim = cfg.count("v_head_dim");
        if (nope + rope_part == 0) throw InputError(cfg.file(), cfg.at("qk_nope_head_dim"), "a head needs d_nope + d_rope ≥ 1");
        if (rope_part % 2) throw InputError(cfg.file(), cfg.at("qk_rope_head_dim"), "expected an even number (RoPE turns pairs), got " + std::to_string(rope_part));
        c.head_dim = nope + rope_part;  // the query and key heads; head_dim in config.json names the rotary part
        c.latent_interleave = cfg.flag("rope_interleave", true);
        // DeepseekV3Attention: (d_nope + d_rope)^(−1/2), × mscale² when rope_scaling has mscale_all_dim
        double scaling = 1.0 / std::sqrt(static_cast<double>(c.head_dim));
        if (const Value* sc = cfg.get("rope_scaling"); sc && sc->is_object()) {
            const Value* all = sc->find("mscale_all_dim");
            const Value* factor = sc->find("factor");
            if (all && all->type != Value::Type::null && cfg.number_of(*all, cfg.at("rope_scaling.mscale_all_dim")) != 0.0 && factor) {
                const double k = cfg.number_of(*factor, cfg.at("rope_scaling.factor")), a = cfg.number_of(*all, cfg.at("rope_scaling.mscale_all_dim"));
                const double mscale = yarn_mscale(k, a);
                scaling *= mscale * mscale;
            }
        }
        c.latent_scaling = static_cast<float>(scaling);
    }
    if (f.embed_scale_sqrt_width) c.embed_scale = static_cast<float>(std::sqrt(static_cast<double>(c.width)));
    if (!f.fields.scale.empty()) {
        const double scalar = cfg.number(f.fields.scale, static_cast<double>(c.head_dim));
        cfg.require(scalar, scalar > 0.0, cfg.at(f.fields.scale), "a number above 0 (the scores are divided by its square root)");
        c.attention_scale = static_cast<float>(std::sqrt(scalar));
    }

    std::string described;
    const Files files = model_detail::open_weights(dir, described, memory_budget);
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

    const std::size_t C = c.width, H = c.heads, G = c.kv_heads, d = c.head_dim;
    DecoderWeights& w = m->weights;
    w.embed = r.linear(n.embed, C, c.vocab, true);  // [vocab, C]
    // a norm stored around 0 and multiplied by (1 + w) is read as 1 + w, in float32
    auto norm = [&](const std::string& name, std::size_t size) {
        Norm nm = r.norm(name, size, f.norm);
        if (f.norm_adds_one)
            for (float& v : nm.scale) v = 1.0f + v;
        return nm;
    };
    const bool pre = f.placement != NormPlacement::post, post = f.placement != NormPlacement::pre;
    for (std::size_t l = 0; l < c.layers; ++l) {
        const std::string p = layer_name(n.layer, l);
        BlockWeights b;
        if (pre) b.norm_1 = norm(p + n.pre_attention_norm, C);
        if (post) b.attention_norm = norm(p + n.post_attention_norm, C);
        if (pre) b.norm_2 = norm(p + n.pre_mlp_norm, C);
        if (post) b.mlp_norm = norm(p + n.post_mlp_norm, C);
        AttentionWeights& a = b.attn;
        a.heads = H;
        a.kv_heads = G;
        if (c.layer_attention[l].linear) {  // Qwen3NextGatedDeltaNet's projections, convolution, decay and gated norm
            const std::string g = p + n.linear_attn + ".";
            GatedDeltaNetWeights lw;
            lw.k_heads = lin_k_heads;
            lw.v_heads = lin_v_heads;
            lw.d_k = lin_k_dim;
            lw.d_v = lin_v_dim;
            if (r.find(g + "in_proj_qkvz.weight") || !r.find(g + "in_proj_qkv.weight")) {  // Qwen3-Next: two fused projections
                lw.in_qkvz = r.linear(g + "in_proj_qkvz.weight", C, 2 * lw.key_dim() + 2 * lw.value_dim(), true);
                lw.in_ba = r.linear(g + "in_proj_ba.weight", C, 2 * lw.v_heads, true);
            } else {  // Qwen3.5: four, in the order they are used
                lw.in_qkv = r.linear(g + "in_proj_qkv.weight", C, 2 * lw.key_dim() + lw.value_dim(), true);
                lw.in_z = r.linear(g + "in_proj_z.weight", C, lw.value_dim(), true);
                lw.in_b = r.linear(g + "in_proj_b.weight", C, lw.v_heads, true);
                lw.in_a = r.linear(g + "in_proj_a.weight", C, lw.v_heads, true);
            }
            lw.conv = r.mat(g + "conv1d.weight", {lw.conv_dim(), 1, lin_kernel}, lw.conv_dim(), lin_kernel);
            lw.a_log = r.vec(g + "A_log", lw.v_heads);
            lw.dt_bias = r.vec(g + "dt_bias", lw.v_heads);
            lw.norm = r.vec(g + "norm.weight", lw.d_v);  // multiplied as it is, not (1 + w)
            lw.out_proj = r.linear(g + "out_proj.weight", lw.value_dim(), C, true);
            lw.eps = c.norm_eps;
            b.linear = std::move(lw);
        } else if (f.query_gate) {  // Qwen3NextAttention: q_proj makes per head [query | gate]
            if (f.qkv_bias || attention_bias)
                throw InputError(cfg.file(), cfg.at("attention_bias"), "biases with a gated query are not supported: expected false");
            const Mat both = r.linear(p + n.query + ".weight", C, 2 * H * d, true).matrix();  // C × 2·H·d
            Mat query = Mat::from_shape({C, H * d}), gate = Mat::from_shape({C, H * d});
            for (std::size_t row = 0; row < C; ++row)
                for (std::size_t h = 0; h < H; ++h)
                    for (std::size_t i = 0; i < d; ++i) {
                        query(row, h * d + i) = both(row, h * 2 * d + i);
                        gate(row, h * d + i) = both(row, h * 2 * d + d + i);
                    }
            a.query = owned_linear(std::move(query));
            a.gate = owned_linear(std::move(gate));
            a.key = r.linear(p + n.key + ".weight", C, G * d, true);
            a.value = r.linear(p + n.value + ".weight", C, G * d, true);
            a.out_proj = r.linear(p + n.out + ".weight", H * d, C, true);
        } else if (latent) {  // DeepseekV3Attention's projections; its two latent norms keep RMSNorm's default eps
            LatentWeights lw;
            if (q_rank) {
                lw.q_a_proj = r.linear(p + n.q_a + ".weight", C, q_rank, true);
                if (attention_bias) lw.q_a_proj->b = r.vec(p + n.q_a + ".bias", q_rank);
                lw.q_a_norm = r.norm(p + n.q_a_norm, q_rank, NormKind::rms_norm).scale;
                lw.q_b_proj = r.linear(p + n.q_b + ".weight", q_rank, H * d, true);
            } else {
                lw.q_proj = r.linear(p + n.query + ".weight", C, H * d, true);
            }
            lw.kv_a_proj = r.linear(p + n.kv_a + ".weight", C, kv_rank + rope_part, true);
            if (attention_bias) lw.kv_a_proj.b = r.vec(p + n.kv_a + ".bias", kv_rank + rope_part);
            lw.kv_a_norm = r.norm(p + n.kv_a_norm, kv_rank, NormKind::rms_norm).scale;
            lw.kv_b_proj = r.linear(p + n.kv_b + ".weight", kv_rank, H * (nope + value_dim), true);
            lw.o_proj = r.linear(p + n.out + ".weight", H * value_dim, C, true);
            if (attention_bias) lw.o_proj.b = r.vec(p + n.out + ".bias", C);
            lw.heads = H;
            lw.nope = nope;
            lw.rope = rope_part;
            lw.value = value_dim;
            lw.eps = 1e-6f;
            b.latent = std::move(lw);
        } else {
            a.query = r.linear(p + n.query + ".weight", C, H * d, true);
            a.key = r.linear(p + n.key + ".weight", C, G * d, true);
            a.value = r.linear(p + n.value + ".weight", C, G * d, true);
            a.out_proj = r.linear(p + n.out + ".weight", H * d, C, true);
            if (f.qkv_bias || attention_bias) {
                a.query.b = r.vec(p + n.query + ".bias", H * d);
                a.key.b = r.vec(p + n.key + ".bias", G * d);
                a.value.b = r.vec(p + n.value + ".bias", G * d);
                if (attention_bias) a.out_proj->b = r.vec(p + n.out + ".bias", C);
            }
        }
        if (f.qk_norm != QkNormSpan::none && !c.layer_attention[l].linear) {
            const bool whole = f.qk_norm == QkNormSpan::whole;
            a.q_norm = norm(p + n.q_norm, whole ? H * d : d).scale;
            a.k_norm = norm(p + n.k_norm, whole ? G * d : d).scale;
            a.qk_norm_whole = whole;
            a.qk_norm_eps = c.norm_eps;
        }
        if (!n.sinks.empty()) a.sinks = r.vec(p + n.sinks, H);
        if (experts && l >= first_dense && !dense_only[l] && (l + 1) % sparse_step == 0) {
            MoeWeights moe = moe_settings;
            const std::string ex = p + n.experts + ".";
            if (!r.find(p + n.router + ".weight") && r.find(p + n.gate + ".weight") && !f.fields.first_dense.empty())
                throw InputError(cfg.file(), cfg.at(f.fields.first_dense), "layer " + std::to_string(l) + " of the checkpoint is a dense MLP (" + n.gate +
                                                                              "), not experts: expected more than " + std::to_string(first_dense) + " dense layers");
            moe.router = r.linear(p + n.router + ".weight", C, experts, true);
            moe.experts.resize(experts);
            if (f.expert_kind == ExpertKind::swiglu) {  // each expert its own gate, up and down, named as the dense MLP's
                if (f.routing == RouterKind::sigmoid_grouped) moe.correction_bias = r.vec(p + n.router + "." + n.router_bias, experts);
                for (std::size_t e = 0; e < experts; ++e) {
                    const std::string one = ex + layer_name(n.expert, e, "{E}");
                    moe.experts[e].gate = r.linear(one + last_part(n.gate) + ".weight", C, expert_hidden, true);
                    moe.experts[e].up = r.linear(one + last_part(n.up) + ".weight", C, expert_hidden, true);
                    moe.experts[e].down.dense = r.linear(one + last_part(n.down) + ".weight", expert_hidden, C, true);
                }
                if (shared_width) {
                    const std::string sh = p + n.shared_experts + ".";
                    moe.shared = SharedExpert{r.linear(sh + last_part(n.gate) + ".weight", C, shared_width, true),
                                              r.linear(sh + last_part(n.up) + ".weight", C, shared_width, true),
                                              r.linear(sh + last_part(n.down) + ".weight", shared_width, C, true), std::nullopt};
                    if (!n.shared_expert_gate.empty()) moe.shared->scale = r.linear(p + n.shared_expert_gate + ".weight", C, 1, true);
                }
            } else {
                moe.router.b = r.vec(p + n.router + "." + n.router_bias, experts);
                // each projection where it lies: MXFP4 blocks (the released checkpoints) or a stacked float tensor
                if (r.find(ex + "gate_up_proj_blocks") || r.find(ex + "gate_up_proj_scales")) {
                    const auto rows = r.mxfp4(ex + "gate_up_proj", experts, 2 * expert_hidden, C);
                    for (std::size_t e = 0; e < experts; ++e) moe.experts[e].gate_up.mxfp4 = rows[e];
                } else {
                    const auto layers = r.stacked_linears(ex + "gate_up_proj", experts, C, 2 * expert_hidden);
                    for (std::size_t e = 0; e < experts; ++e) moe.experts[e].gate_up.dense = layers[e];
                }
                if (r.find(ex + "down_proj_blocks") || r.find(ex + "down_proj_scales")) {
                    const auto rows = r.mxfp4(ex + "down_proj", experts, C, expert_hidden);
                    for (std::size_t e = 0; e < experts; ++e) moe.experts[e].down.mxfp4 = rows[e];
                } else {
                    const auto layers = r.stacked_linears(ex + "down_proj", experts, expert_hidden, C);
                    for (std::size_t e = 0; e < experts; ++e) moe.experts[e].down.dense = layers[e];
                }
                const Mat gate_up_bias = r.mat(ex + "gate_up_proj_bias", experts, 2 * expert_hidden), down_bias = r.mat(ex + "down_proj_bias", experts, C);
                for (std::size_t e = 0; e < experts; ++e) {
                    moe.experts[e].gate_up_bias = xt::view(gate_up_bias, e, xt::all());
                    moe.experts[e].down_bias = xt::view(down_bias, e, xt::all());
                }
            }
            b.moe = std::move(moe);
        } else {
            b.gate = r.linear(p + n.gate + ".weight", C, hidden, true);
            b.up = r.linear(p + n.up + ".weight", C, hidden, true);
            b.down = r.linear(p + n.down + ".weight", hidden, C, true);
        }
        w.blocks.push_back(std::move(b));
    }
    w.final_norm = norm(n.final_norm, C);
    if (!c.tied_head) w.head = r.with_prefix("").linear(n.head, C, c.vocab, true);
    info.unused = r.unused();
    r.touch_in_background();
    info.kv_heads = G;
    info.head_dim = d;
    info.config = cfg.used();
    return m;
}

}  // namespace

Model load_model(const std::string& path, double memory_budget) {
    const fs::path dir(path);
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        if (fs::exists(dir, ec)) throw InputError(path, "", "not a folder: a model is read from a Hugging Face model folder (config.json and the weights)");
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
    Model m = family->read_folder ? family->read_folder(path, fields, memory_budget) : load_with_spec(dir, fields, *family, memory_budget);
    auto loaded = std::const_pointer_cast<LoadedModel>(m);
    if (text) loaded->info.config.insert(loaded->info.config.begin(), cfg.used().begin(), cfg.used().end());
    loaded->info.end_ids = model_detail::end_ids(dir, loaded->info.vocab);
    return m;
}

}  // namespace attnwalk
