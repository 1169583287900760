#include "attnwalk/setup.hpp"

#include "attnwalk/attention_at_scale.hpp"
#include "attnwalk/blas.hpp"

#include <optional>
#include <thread>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <sstream>

#include "attnwalk/errors.hpp"

namespace attnwalk {

std::string format_number(double value) {
    std::ostringstream os;
    os.precision(6);
    os << value;
    return os.str();
}

std::size_t resolve_query(const std::string& query, const std::vector<std::string>& tokens, const std::string& option) {
    const std::size_t T = tokens.size();
    const bool numeric = !query.empty() && query.find_first_not_of("0123456789") == std::string::npos;
    if (numeric) {
        const unsigned long long index = query.size() > 9 ? T : std::stoull(query);
        if (index >= T)
            throw UsageError(option + " " + query + " is out of range: the input has " + std::to_string(T) +
                             " tokens, so the index must be 0.." + std::to_string(T - 1));
        return static_cast<std::size_t>(index);
    }
    for (std::size_t i = 0; i < T; ++i)
        if (tokens[i] == query) return i;
    std::string known;
    for (std::size_t i = 0; i < T; ++i) known += (i ? ", " : "") + tokens[i];
    throw UsageError(option + " '" + query + "' is not a token of the input (tokens: " + known +
                     "; or give a 0-based index)");
}

double estimate_memory(const std::string& command, std::size_t batch, std::size_t tokens, std::size_t d_in,
                       const WalkOptions& options) {
    // Counted in double so that absurd sizes cannot overflow. About 16 tensors of the
    // largest shapes are recorded (scores, weights, masks, per head). The JSON view is
    // streamed and needs no extra memory.
    const double B = static_cast<double>(batch) * static_cast<double>(std::max<std::size_t>(options.batch, 1));
    double T = static_cast<double>(tokens);
    const double H = command == "mha" ? static_cast<double>(options.heads) : 1.0;
    const double d = std::max(static_cast<double>(d_in), static_cast<double>(options.projection.d_out) * (options.wrapper ? H : 1.0));
    double numbers = 16.0 * B * H * T * T + 16.0 * B * T * d + 4.0 * d * d;
    if (command == "mha" && mha_at_scale_applies(options))  // no T×T tensor: a block of 128 rows per core
        numbers = 10.0 * B * T * d + 8.0 * d * d + 128.0 * T * std::max(1u, std::thread::hardware_concurrency());
    if (command == "dropout" && options.ones) {
        T = static_cast<double>(*options.ones);
        numbers = 4.0 * T * T;
    }
    return numbers * 4.0;
}

namespace {
std::string bytes_text(double bytes) {
    const char* units[] = {"bytes", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
    std::size_t u = 0;
    while (bytes >= 1024.0 && u + 1 < std::size(units)) {
        bytes /= 1024.0;
        ++u;
    }
    std::ostringstream os;
    os.precision(bytes < 10 ? 2 : 3);
    os << bytes << ' ' << units[u];
    return os.str();
}
}  // namespace

Setup start_walk(const std::string& command, const Embeddings& input, const WalkOptions& options) {
    const ProjectionOptions& proj = options.projection;
    if (proj.weights_file && proj.seed)
        throw UsageError("--seed and --weights exclude each other: weights come either from a file or from the seeded generator");
    if (proj.init && !proj.seed)
        throw UsageError("--init needs --seed (it says how seeded weights are drawn)");
    if (proj.d_out < 1) throw UsageError("--d-out must be at least 1");
    if (proj.qkv_bias && proj.init && *proj.init != Init::linear)
        throw UsageError("--qkv-bias needs --init linear (torch.rand/randn matrices have no bias)");
    if (options.batch < 1) throw UsageError("--batch must be at least 1");
    if (options.scale && !(std::isfinite(*options.scale) && *options.scale > 0.0))
        throw UsageError("--scale must be a positive finite number");
    if (!(options.dropout >= 0.0 && options.dropout < 1.0))
        throw UsageError("--dropout must be in [0, 1), got " + format_number(options.dropout));

    const double need = estimate_memory(command, input.batch(), input.tokens_count(), input.dim(), options);
    if (need > options.max_memory)
        throw UsageError("this walk would need about " + bytes_text(need) + " for its tensors, more than --max-memory " +
                         bytes_text(options.max_memory) + " (raise --max-memory, or use a smaller input or options)");

    std::optional<Embeddings> stacked;  // only a batch is copied
    if (options.batch > 1) stacked = stack_batch(input, options.batch);
    const Embeddings& in = stacked ? *stacked : input;
    const std::size_t T = in.tokens_count();
    if (options.context_length && T > *options.context_length)
        throw UsageError("the input has " + std::to_string(T) + " tokens, more than --context-length " +
                         std::to_string(*options.context_length));

    Setup s;
    s.trace.command = command;
    s.trace.tokens = in.tokens;
    s.trace.batched = in.batched;
    s.d_in = in.dim();
    s.x = cube_from_trace(in.x);
    s.trace.set_param("input", in.source);
    if (in.batched) s.trace.set_param("batch", static_cast<long long>(in.batch()));
    s.trace.set_param("tokens", static_cast<long long>(T));
    s.trace.set_param("d_in", static_cast<long long>(s.d_in));
    if (proj.seed) {
        s.gen.emplace(*proj.seed);
        s.trace.set_param("seed", static_cast<long long>(*proj.seed));
    }
    return s;
}

void record_qkv_parameters(Recorder& rec, const QKV& qkv, const std::string& prefix,
                           const std::string& title_suffix) {
    const struct {
        const char* name;
        const Linear* layer;
    } layers[] = {{"query", &qkv.query}, {"key", &qkv.key}, {"value", &qkv.value}};
    for (const auto& l : layers) {
        const std::string name = l.name;
        Step& w = rec.add_plain(prefix + "W_" + name, "W_" + name + title_suffix + " (d_in×d_out, x·W layout)",
                                "W_" + name, to_trace(l.layer->w), {Axis::feature, Axis::feature});
        w.kind = StepKind::parameter;
        if (l.layer->b.size() != 0) {
            Step& b = rec.add_plain(prefix + "b_" + name, "b_" + name + title_suffix, "b_" + name,
                                    to_trace(l.layer->b), {Axis::feature});
            b.kind = StepKind::parameter;
        }
    }
}

std::optional<QKV> build_qkv(Setup& setup, const WalkOptions& options) {
    const ProjectionOptions& proj = options.projection;
    Trace& trace = setup.trace;
    if (proj.weights_file) {
        trace.set_param("weights", *proj.weights_file);
        QKV qkv = load_qkv(*proj.weights_file, setup.d_in);
        trace.set_param("d_out", static_cast<long long>(qkv.query.w.shape(1)));
        return qkv;
    }
    if (!setup.gen) return std::nullopt;
    const Init init = proj.init.value_or(Init::linear);
    trace.set_param("init", std::string(init_name(init)));
    trace.set_param("d_out", static_cast<long long>(proj.d_out));
    trace.set_param("qkv_bias", proj.qkv_bias);
    return draw_qkv(*setup.gen, setup.d_in, proj.d_out, init, proj.qkv_bias);
}

Trace finish(Trace trace, const WalkOptions& options) {
    trace = check_finite(std::move(trace));
    if (options.summary) summarise(trace);
    trace.timed = options.summary || options.timing;
    if (trace.timed) trace.backend = blas_backend();
    return trace;
}

}  // namespace attnwalk
