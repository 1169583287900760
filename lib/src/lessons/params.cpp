// params: the parameters of one attention layer, counted.
#include <algorithm>
#include <iomanip>
#include <sstream>

#include "attnwalk/errors.hpp"
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

ATTNWALK_LESSON(params, 170) {
    static const LessonDecl lesson{"params", "Parameters of one attention layer and the size of its KV cache, for a configuration.",
        {
            {"count_query", "parameters of the query projection"},
            {"count_key", "parameters of the key projection"},
            {"count_value", "parameters of the value projection"},
            {"count_out_proj", "parameters of the output projection"},
            {"count_total", "all parameters of the layer", headline},
            {"cache_bytes", "the KV cache's size in bytes for the configuration", headline},
            {"cache_compared", "the cache of the configuration against plain multi-head (and grouped-query) attention, in bytes"},
        }};
    return lesson;
}

Trace walk_params(const ParamsSpec& spec) {
    const std::size_t H = spec.heads, G = spec.kv_heads ? spec.kv_heads : spec.heads;
    check_head_shape(spec.d_out, H, G);
    if ((spec.window != 0) + (spec.kv_producing_layers != 0) + (spec.kv_lora_rank != 0) > 1)
        throw UsageError("a sliding window, KV sharing and MLA are counted one at a time, as the textbook's estimators count them");
    if (spec.window && spec.swa_layers + spec.full_layers == 0) throw UsageError("the layer ratio needs at least one layer per block");
    if (spec.kv_producing_layers > spec.layers)
        throw UsageError("the KV-producing layers (" + std::to_string(spec.kv_producing_layers) + ") cannot be more than the layers (" +
                         std::to_string(spec.layers) + ")");
    // every count below is at most 4·(d_in + 1)·d_out (+ d_out²) per layer: exact in 64 bits under this bound
    const double largest = 4.0 * (static_cast<double>(spec.d_in) + 1.0) * static_cast<double>(spec.d_out) +
                           static_cast<double>(spec.d_out) * static_cast<double>(spec.d_out) + static_cast<double>(spec.d_out);
    if (largest * static_cast<double>(spec.layers) > 9.0e15)
        throw UsageError("these sizes have more than 9·10^15 parameters: too many to count exactly here");
    const ull d_in = spec.d_in, d_out = spec.d_out, d_h = d_out / H, d_kv = G * d_h, bias = spec.qkv_bias ? 1 : 0;
    Trace trace;
    trace.command = "params";
    trace.set_param("d_in", d_in);
    trace.set_param("d_out", d_out);
    trace.set_param("heads", static_cast<ull>(H));
    trace.set_param("kv_heads", static_cast<ull>(G));
    trace.set_param("qkv_bias", spec.qkv_bias);
    trace.set_param("out_proj", spec.out_proj);
    trace.set_param("layers", static_cast<ull>(spec.layers));
    trace.set_param("context_length", static_cast<ull>(spec.context_length));
    Recorder rec(trace);
    const ull query = d_in * d_out + bias * d_out, key = d_in * d_kv + bias * d_kv, value = key;
    const ull out = spec.out_proj ? d_out * d_out + d_out : 0;
    const ull total = query + key + value + out;
    const auto count = [&](const std::string& id, const std::string& title, const std::string& formula, ull n) {
        rec.add_plain(id, title, formula, integer_tensor({n}, {}), {}).note = grouped(n) + " parameters.";
    };
    const std::string b = spec.qkv_bias ? " + d_out" : "";
    count("count_query", "W_query", "d_in·d_out" + b, query);
    count("count_key", "W_key", G == H ? "d_in·d_out" + b : "d_in·G·d_k" + std::string(spec.qkv_bias ? " + G·d_k" : ""), key);
    count("count_value", "W_value", G == H ? "d_in·d_out" + b : "d_in·G·d_k" + std::string(spec.qkv_bias ? " + G·d_k" : ""), value);
    if (spec.out_proj) count("count_out_proj", "out_proj", "d_out·d_out + d_out", out);
    count("count_total", "The layer", "W_query + W_key + W_value" + std::string(spec.out_proj ? " + out_proj" : ""), total);
    trace.set_param("total", total);
    Step& t = trace.steps.back();
    if (spec.layers > 1) t.note += " × " + std::to_string(spec.layers) + " layers = " + grouped(total * spec.layers) + ".";
    if (G != H) {
        const ull mha = 2 * (d_in * d_out + bias * d_out) + query + out;
        t.note += " With " + std::to_string(H) + " key/value heads (plain multi-head attention) it would be " + grouped(mha) + ": " +
                  grouped(mha - total) + " fewer.";
    }
    const double T = static_cast<double>(spec.context_length), L = static_cast<double>(spec.layers),
                 per_token = static_cast<double>(d_kv) * 2.0 * static_cast<double>(spec.bytes_per_value);  // one layer, keys and values
    const double plain = T * per_token * L;
    const std::string head = std::to_string(spec.context_length) + " tokens × " + std::to_string(d_kv) + " × 2 × ";
    const std::string tail = std::to_string(spec.bytes_per_value) + " bytes";
    double bytes = plain;
    std::string formula = "T·G·d_k·2·layers·bytes", note = head + std::to_string(spec.layers) + " × " + tail, label;
    if (spec.window) {  // the textbook's distribute_layers: a:b per block, the remainder SWA first
        const std::size_t block = spec.swa_layers + spec.full_layers, blocks = spec.layers / block, rem = spec.layers % block;
        const std::size_t swa = blocks * spec.swa_layers + std::min(spec.swa_layers, rem);
        const std::size_t full = blocks * spec.full_layers + (rem > spec.swa_layers ? rem - spec.swa_layers : 0);
        const double W = static_cast<double>(std::min(spec.window, spec.context_length));
        bytes = (static_cast<double>(swa) * W + static_cast<double>(full) * T) * per_token;
        formula = "(n_swa·min(T, W) + n_full·T)·G·d_k·2·bytes";
        note = std::to_string(swa) + " sliding-window " + (swa == 1 ? "layer" : "layers") + " keep min(T, W) = " +
               grouped(static_cast<ull>(W)) + " tokens, " + std::to_string(full) + " full " + (full == 1 ? "layer" : "layers") +
               " keep " + grouped(spec.context_length) + " (" + std::to_string(spec.swa_layers) + ":" + std::to_string(spec.full_layers) +
               " per block); × " + std::to_string(d_kv) + " × 2 × " + tail;
        label = "SWA";
        trace.set_param("window", static_cast<ull>(spec.window));
        trace.set_param("sliding_layers", static_cast<ull>(swa));
        trace.set_param("full_attention_layers", static_cast<ull>(full));
    } else if (spec.kv_producing_layers) {
        bytes = T * per_token * static_cast<double>(spec.kv_producing_layers);
        formula = "T·G·d_k·2·producing layers·bytes";
        note = head + std::to_string(spec.kv_producing_layers) + " of the " + std::to_string(spec.layers) +
               " layers (the others reuse a producing layer's keys and values) × " + tail;
        label = "KV sharing";
        trace.set_param("kv_producing_layers", static_cast<ull>(spec.kv_producing_layers));
    } else if (spec.kv_lora_rank) {
        bytes = T * (static_cast<double>(spec.kv_lora_rank) + static_cast<double>(spec.qk_rope_head_dim)) * L * static_cast<double>(spec.bytes_per_value);  // in double: never wraps
        formula = "T·(r + d_rope)·layers·bytes";
        note = std::to_string(spec.context_length) + " tokens × (r " + std::to_string(spec.kv_lora_rank) + " + d_rope " +
               std::to_string(spec.qk_rope_head_dim) + ") × " + std::to_string(spec.layers) + " × " + tail +
               " (the latent c_KV and the rotary key: attnwalk mla)";
        label = "MLA";
        trace.set_param("kv_lora_rank", static_cast<ull>(spec.kv_lora_rank));
        trace.set_param("qk_rope_head_dim", static_cast<ull>(spec.qk_rope_head_dim));
    }
    rec.add_plain("cache_bytes", "Its KV cache for a full context", formula, count_tensor(bytes, "The KV cache's size in bytes"), {}).note =
        note + " = " + bytes_text(bytes) + " bytes per sequence.";
    if (!label.empty() || G != H) {
        std::vector<double> sizes{plain / static_cast<double>(G) * static_cast<double>(H)};
        std::vector<std::string> labels{"MHA"};
        if (G != H) {
            sizes.push_back(plain);
            labels.push_back("GQA");
        }
        if (!label.empty()) {
            sizes.push_back(bytes);
            labels.push_back(G != H && label != "MLA" ? "GQA + " + label : label);
        }
        const Tensor table = counts_tensor(sizes, "The KV cache's size in bytes");
        std::string words;
        for (std::size_t i = 0; i < sizes.size(); ++i) words += (i ? ", " : "") + labels[i] + " " + bytes_text(sizes[i]);
        Step& c = rec.add_plain("cache_compared", "The cache against multi-head attention's", "bytes, as the textbook's estimators count them", table,
                                {Axis::feature});
        c.labels = labels;
        std::ostringstream ratio;
        const double r = sizes.front() / sizes.back();
        ratio << std::fixed << std::setprecision(2) << (r >= 1.0 ? r : 1.0 / r);
        c.note = words + " bytes: " + (sizes.front() == sizes.back() ? std::string("the same as MHA.")
                                       : ratio.str() + (r >= 1.0 ? "× less than MHA." : "× more than MHA."));
    }
    steps::check_declared(trace.command, trace.steps);
    return check_finite(std::move(trace));
}

}  // namespace attnwalk
