// params: the parameters of one attention layer, counted.
#include "attnwalk/errors.hpp"
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

const LessonDecl& params_lesson() {
    static const LessonDecl lesson{"params", "Parameters of one attention layer and the size of its KV cache, for a configuration.",
        {
            {"count_query", "parameters of the query projection"},
            {"count_key", "parameters of the key projection"},
            {"count_value", "parameters of the value projection"},
            {"count_out_proj", "parameters of the output projection"},
            {"count_total", "all parameters of the layer", headline},
            {"cache_bytes", "the KV cache's size in bytes for the configuration", headline},
        }};
    return lesson;
}

Trace walk_params(const ParamsSpec& spec) {
    const std::size_t H = spec.heads, G = spec.kv_heads ? spec.kv_heads : spec.heads;
    check_head_shape(spec.d_out, H, G);
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
    count("count_key", "W_key", G == H ? "d_in·d_out" + b : "d_in·G·d_h" + std::string(spec.qkv_bias ? " + G·d_h" : ""), key);
    count("count_value", "W_value", G == H ? "d_in·d_out" + b : "d_in·G·d_h" + std::string(spec.qkv_bias ? " + G·d_h" : ""), value);
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
    const double bytes = static_cast<double>(spec.context_length) * static_cast<double>(d_kv) * 2.0 * static_cast<double>(spec.layers) *
                         static_cast<double>(spec.bytes_per_value);
    rec.add_plain("cache_bytes", "Its KV cache for a full context", "T·G·d_h·2·layers·bytes", count_tensor(bytes, "The KV cache's size in bytes"), {}).note =
        std::to_string(spec.context_length) + " tokens × " + std::to_string(d_kv) + " × 2 × " + std::to_string(spec.layers) + " × " +
        std::to_string(spec.bytes_per_value) + " bytes = " + bytes_text(bytes) + " bytes per sequence.";
    return check_finite(std::move(trace));
}

}  // namespace attnwalk
