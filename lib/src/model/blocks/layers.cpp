// Each layer's kinds, window and RoPE: config.json's layer_types (or the family's window
// pattern, or the Gated DeltaNet's own rule), sliding_window, rope_theta, rope_scaling or
// transformers 5's rope_parameters (one, or one per layer type), partial_rotary_factor, and
// the layers a family leaves without RoPE.
#include <algorithm>
#include <cmath>
#include <optional>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/attention.hpp"
#include "../kinds.hpp"

namespace attnwalk::model_detail {

using json_input::Value;

namespace {

// A rope_scaling object (or a rope_parameters one) read into RoPE's scaling.
RopeScaling rope_scaling(ConfigFile& cfg, const Value* scaling, const std::string& path, std::size_t context) {
    RopeScaling s;
    if (!scaling) return s;
    if (!scaling->is_object()) throw InputError(cfg.file(), path, "expected an object or null");
    const char* type_key = scaling->find("rope_type") ? "rope_type" : "type";
    const Value* type = scaling->find(type_key);
    if (type && type->type != Value::Type::null && type->type != Value::Type::string)  // Hugging Face fails on it too: never the default RoPE silently
        throw InputError(cfg.file(), path + "." + type_key, "expected the name of a RoPE type (default, linear, llama3, yarn), got " +
                                                                model_detail::value_text(*type));
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
    if (kind == "proportional") {  // its frequencies' own rule is RopeParams::proportion (rope_of); a factor divides them, as linear's
        s.factor = num("factor", 1.0);
        if (s.factor != 1.0) s.kind = RopeScaling::Kind::linear;
        cfg.require(s.factor, s.factor >= 1.0, path + ".factor", "a factor of at least 1 (how many times the original context it stretches to)");
        return s;
    }
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
            if (mv != 0.0 && av != 0.0) {  // each named where it stands: never an attention_factor the file does not have
                const double top = yarn_mscale(s.factor, mv), bottom = yarn_mscale(s.factor, av);
                const auto held = [](double v) { return std::isfinite(v) && v > 0.0 && std::isfinite(static_cast<float>(v)); };
                cfg.require(mv, held(top), path + ".mscale", "a number that keeps YaRN's 0.1·mscale·ln(factor) + 1 above 0 and within float32");
                cfg.require(av, held(bottom), path + ".mscale_all_dim", "a number that keeps YaRN's 0.1·mscale_all_dim·ln(factor) + 1 above 0 and within float32");
                cfg.require(top / bottom, held(top / bottom), path + ".mscale", "an attention factor mscale / mscale_all_dim within float32");
                s.attention_factor = top / bottom;
            }
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
        if (s.attention_factor)
            cfg.require(*s.attention_factor, *s.attention_factor > 0.0 && std::isfinite(static_cast<float>(*s.attention_factor)), path + ".attention_factor",
                        "a number above 0 that float32 holds (cos and sin are multiplied by it)");
    }
    return s;
}

// Which layers apply RoPE: all but those the family's list (no_rope_layers) marks 0.
std::vector<bool> rotating_layers(ConfigFile& cfg, const FamilySpec& f, std::size_t L) {
    std::vector<bool> rotates(L, true);
    if (f.layers.no_rope_layers.empty()) return rotates;
    if (const Value* list = cfg.get(f.layers.no_rope_layers)) {
        const std::string at = cfg.at(f.layers.no_rope_layers);
        if (list->type != Value::Type::array || list->array.size() != L)
            throw InputError(cfg.file(), at, "expected one entry per layer (" + std::to_string(L) + "): 1 where it applies RoPE, 0 where not");
        for (std::size_t l = 0; l < L; ++l) {
            const Value& v = list->array[l];
            if (v.type != Value::Type::number || (v.number != 0.0 && v.number != 1.0))
                throw InputError(cfg.file(), at + "[" + std::to_string(l) + "]", "expected 1 (RoPE) or 0 (no RoPE), got " + model_detail::value_text(v));
            rotates[l] = v.number == 1.0;
        }
    } else if (!f.layers.no_rope_interval.empty()) {  // without the list, the family's rule (SmolLM3Config: every 4th layer none)
        const std::size_t interval = cfg.count(f.layers.no_rope_interval, 4);
        for (std::size_t l = 0; l < L; ++l) rotates[l] = (l + 1) % interval != 0;
    }
    return rotates;
}

// Which layers are sliding-window ones: config.json's layer_types, or the family's pattern;
// none where the family takes no window from them, or its flag is off. `linear`: which are
// Gated DeltaNet layers ("linear_attention"), for a family that has them.
std::vector<bool> sliding_layers(ConfigFile& cfg, const FamilySpec& f, std::size_t layers, std::vector<bool>& linear) {
    std::vector<bool> sliding(layers, false);
    linear.assign(layers, false);
    const bool has_linear = f.deltanet.has_value();
    const bool windows = f.layers.windows && (f.layers.windows_flag.empty() || cfg.flag(f.layers.windows_flag, false));
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
            sliding[l] = windows && t.string == "sliding_attention";
            linear[l] = t.string == "linear_attention";
        }
    } else if (has_linear) {  // the Gated DeltaNet's own rule
        linear = deltanet_layers(cfg, f, layers);
    } else if (windows && f.layers.window_pattern == WindowPattern::every_nth_full) {  // every pattern-th layer full
        const std::size_t pattern = cfg.count("sliding_window_pattern", f.layers.window_pattern_default);
        for (std::size_t l = 0; l < layers; ++l) sliding[l] = (l + 1) % pattern != 0;
    } else if (windows && f.layers.window_pattern == WindowPattern::nope_layers && cfg.get("sliding_window")) {
        const std::vector<bool> rotates = rotating_layers(cfg, f, layers);  // SmolLM3: the layers without RoPE slide
        for (std::size_t l = 0; l < layers; ++l) sliding[l] = !rotates[l];
    }
    // Gemma4TextConfig.__post_init__: "Last layer must use `full_attention`", a sliding one made
    // full (with a warning), before the layers' RoPE and KV sharing are planned
    if (f.layers.last_layer_full && layers > 0) sliding[layers - 1] = false;
    return sliding;
}


}  // namespace

std::string indexed(const std::string& pattern, std::size_t index, const char* mark) {
    std::string out = pattern;
    const std::size_t at = out.find(mark);
    if (at != std::string::npos) out.replace(at, 3, std::to_string(index));
    return out;
}

std::string last_part(const std::string& name) { return name.substr(name.find_last_of('.') + 1); }

Norm read_norm(const Reader& r, const FamilySpec& f, const std::string& name, std::size_t size) {
    Norm nm = r.norm(name, size, f.norm);
    if (f.norm_adds_one)
        for (float& v : nm.scale) v = 1.0f + v;
    return nm;
}

// Each layer's window and RoPE, as the spec and config.json say.
void plan_layers(ConfigFile& cfg, const FamilySpec& f, DecoderConfig& c) {
    const std::size_t L = c.layers;
    std::vector<bool> linear;
    const std::vector<bool> sliding = sliding_layers(cfg, f, L, linear);
    std::optional<std::size_t> window;
    if (std::find(sliding.begin(), sliding.end(), true) != sliding.end())
        window = f.layers.window_default ? cfg.count("sliding_window", *f.layers.window_default) : cfg.count("sliding_window");
    // rope_theta and rope_scaling, or transformers 5's rope_parameters (one, or one per layer type)
    const Value* parameters = cfg.get("rope_parameters");
    if (parameters && !parameters->is_object()) throw InputError(cfg.file(), cfg.at("rope_parameters"), "expected an object or null");
    const std::vector<bool> rotates = rotating_layers(cfg, f, L);
    const auto rope_of = [&](bool slide, bool& none) -> RopeParams {
        const std::string type = slide ? "sliding_attention" : "full_attention";
        const Value* own = parameters ? parameters->find(type) : nullptr;
        const Value* p = own ? own : parameters && !parameters->find("full_attention") ? parameters : nullptr;
        const std::string path = own ? cfg.at("rope_parameters." + type) : cfg.at("rope_parameters");
        RopeParams r;
        const Value* theta = p ? p->find("rope_theta") : nullptr;
        std::string from = cfg.at("rope_theta");
        if (slide && !f.layers.sliding_rope_base.empty() && !own) {
            r.base = cfg.number(f.layers.sliding_rope_base, f.layers.sliding_rope_base_default);
            from = cfg.at(f.layers.sliding_rope_base);
        } else if (theta && theta->type != Value::Type::null) {
            r.base = cfg.number_of(*theta, path + ".rope_theta");
            from = path + ".rope_theta";
        } else {
            r.base = cfg.number("rope_theta", f.layers.rope_theta_default);
        }
        cfg.require(r.base, r.base > 1.0, from, "a RoPE base above 1 (the frequencies are base^(−2i/d))");
        if (!slide || f.layers.sliding_layers_scaled || own) r.scaling = p ? rope_scaling(cfg, p, path, c.context) : rope_scaling(cfg, cfg.get("rope_scaling"), cfg.at("rope_scaling"), c.context);
        // partial_rotary_factor beside rope_theta, or inside rope_parameters (transformers 5, Qwen3.5)
        const Value* inside = p ? p->find("partial_rotary_factor") : nullptr;
        const std::string partial_at = inside && inside->type != Value::Type::null ? path + ".partial_rotary_factor" : cfg.at("partial_rotary_factor");
        const Value* kind = p ? p->find("rope_type") : nullptr;
        const bool proportional = kind ? kind->type == Value::Type::string && kind->string == "proportional" : !slide && f.layers.full_proportion_default > 0.0;
        const double partial = inside && inside->type != Value::Type::null ? cfg.number_of(*inside, partial_at)
                               : !p && proportional                        ? f.layers.full_proportion_default
                                                                           : cfg.number("partial_rotary_factor", 1.0);
        if (!(partial > 0.0 && partial <= 1.0)) throw InputError(cfg.file(), partial_at, "expected a number in (0, 1], got " + json_input::number_text(partial));
        if (proportional) {  // ⌊partial·d/2⌋ frequencies over the whole head turn, the others are 0 (_compute_proportional_rope_parameters)
            r.proportion = partial;
        } else if (partial < 1.0) {  // int(head_dim · factor) features turn, as Hugging Face counts them; none when that is 0
            r.rotary_dim = static_cast<std::size_t>(static_cast<double>(c.head_size()) * partial);
            none = r.rotary_dim == 0;  // rotary_dim 0 means all of d_h to the ops: these layers apply none
            if (r.rotary_dim % 2)
                throw InputError(cfg.file(), partial_at, "expected a factor that turns an even number of features (RoPE turns pairs): " +
                                                             std::to_string(c.head_size()) + " × " + json_input::number_text(partial) + " gives " +
                                                             std::to_string(r.rotary_dim));
        }
        r.interleaved = f.layers.rope_interleaved;
        return r;
    };
    bool full_none = false, local_none = false;  // a partial rotary factor that turns no feature
    const RopeParams full = rope_of(false, full_none);
    std::optional<RopeParams> local;
    if (window) local = rope_of(true, local_none);
    c.layer_specs.assign(L, LayerSpec{});
    for (std::size_t l = 0; l < L; ++l) {
        LayerSpec& ls = c.layer_specs[l];
        if (sliding[l]) ls.window = window;
        ls.attention = linear[l] ? AttentionKind::deltanet : f.attention;
        if (rotates[l] && (sliding[l] || !f.layers.rope_on_sliding_only) && !(sliding[l] ? local_none : full_none)) ls.rope = sliding[l] ? *local : full;
    }
}

}  // namespace attnwalk::model_detail
