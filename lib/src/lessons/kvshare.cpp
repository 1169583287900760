// kvshare: cross-layer KV sharing (ops/kv_sharing.hpp) on a seeded stack of causal
// multi-head attention layers: which layers make keys and values and which reuse them,
// each layer's queries, keys, values, weights and output, the same output from a stack
// that hands the keys and values over explicitly, and the cache it saves.
#include <iomanip>
#include <sstream>
#include <stdexcept>

#include "attnwalk/errors.hpp"
#include "attnwalk/lessons/kvshare.hpp"
#include "attnwalk/ops/kv_sharing.hpp"
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

ATTNWALK_LESSON(kvshare, 115) {
    static const LessonDecl lesson{"kvshare", "Cross-layer KV sharing: later layers keep their own queries but reuse an earlier layer's keys and values; the cache it saves.", {
        {"kv_sources", "per layer, the layer (counted from 1) whose keys and values it attends with: itself for a producing layer", headline},
        {"layerN.W_query", "layer N's query projection, d_in×d_out, x·W layout (a parameter)"},
        {"layerN.W_key", "layer N's key projection (producing layers), x·W layout (a parameter)"},
        {"layerN.W_value", "layer N's value projection (producing layers), x·W layout (a parameter)"},
        {"layerN.out_proj.weight", "layer N's output projection, d_out×d_out, x·W layout (a parameter)"},
        {"layerN.out_proj.bias", "layer N's output projection's bias (a parameter)"},
        {"layerN.queries", "layer N's queries, every head: its own in every layer"},
        {"layerN.keys", "the keys layer N attends with, every head: its own, or a producing layer's"},
        {"layerN.values", "the values layer N attends with, every head: its own, or a producing layer's"},
        {"layerN.weights", "layer N's causal attention weights, every head", opening},
        {"layerN.output", "layer N's output, the next layer's input"},
        {"output", "the output projection of the context (or the context itself)", headline},
        {"output_explicit", "the same stack with each reusing layer handed its keys and values as arguments, made again from the producing layer's input"},
        {"max_difference", "the largest |difference| between two ways that must agree (causal: (a) and (b))", headline},
        {"cache_bytes", "the KV cache's size in bytes for the configuration", headline},
    }};
    return lesson;
}

namespace {

std::string layer_range(std::size_t first, std::size_t last) {  // 1-based, inclusive
    return first == last ? "layer " + std::to_string(first) : "layers " + std::to_string(first) + "–" + std::to_string(last);
}

void parameter(Recorder& rec, const std::string& id, const std::string& title, const std::string& formula, const Tensor& t,
               std::vector<Axis> axes) {
    rec.add_plain(id, title, formula, t, std::move(axes)).kind = StepKind::parameter;
}

void record_layer_parameters(Recorder& rec, const std::string& N, const AttentionWeights& w, bool producing) {
    const std::string l = N.substr(5, N.size() - 6);  // "layer3." -> "3"
    parameter(rec, N + "W_query", "Layer " + l + ": W_query (d_in×d_out, x·W layout)", "W_q," + l, to_trace(w.query.matrix()),
              {Axis::feature, Axis::feature});
    if (producing) {
        parameter(rec, N + "W_key", "Layer " + l + ": W_key", "W_k," + l, to_trace(w.key.matrix()), {Axis::feature, Axis::feature});
        parameter(rec, N + "W_value", "Layer " + l + ": W_value", "W_v," + l, to_trace(w.value.matrix()), {Axis::feature, Axis::feature});
    } else {
        rec.trace().steps.back().note = "Its W_key and W_value are drawn too (the textbook's module makes them, so the seed's stream "
                                        "goes on as PyTorch's does) but never used.";
    }
    parameter(rec, N + "out_proj.weight", "Layer " + l + ": out_proj weight", "W_o," + l, to_trace(w.out_proj->matrix()),
              {Axis::feature, Axis::feature});
    parameter(rec, N + "out_proj.bias", "Layer " + l + ": out_proj bias", "b_o," + l, to_trace(w.out_proj->b), {Axis::feature});
}

std::vector<Weights> draw_stack(std::size_t d_in, const KvShareSpec& spec) {
    Generator gen(spec.seed);  // one stream for the whole stack, module after module
    std::vector<Weights> layers;
    for (std::size_t l = 0; l < spec.layers; ++l) {
        WeightsShape shape{l == 0 ? d_in : spec.d_out, spec.d_out, spec.heads, HeadLayout::fused, true};
        layers.push_back(draw_weights(gen, shape, Init::linear, false));
    }
    return layers;
}

void check_spec(const KvShareSpec& spec) {
    if (spec.layers == 0) throw UsageError("a stack needs at least one layer");
    if (spec.producing == 0 || spec.producing > spec.layers)
        throw UsageError("the KV-producing layers must be between 1 and the " + std::to_string(spec.layers) + " layers, not " +
                         std::to_string(spec.producing));
    check_head_shape(spec.d_out, spec.heads);
    const std::size_t H = spec.cache_heads ? spec.cache_heads : spec.heads;
    if (spec.kv_heads && (spec.kv_heads > H || H % spec.kv_heads))
        throw UsageError("the key/value heads G = " + std::to_string(spec.kv_heads) + " must divide the heads H = " + std::to_string(H));
}

}  // namespace

Trace walk_kvshare(const Embeddings& input, const KvShareSpec& spec, const Recording& recording) {
    check_spec(spec);
    const std::size_t L = spec.layers, P = spec.producing, H = spec.heads, d_h = spec.d_out / spec.heads;
    const std::vector<Weights> stack = draw_stack(input.dim(), spec);
    Trace trace = start_trace("kvshare", input, nullptr);
    trace.set_param("seed", static_cast<ull>(spec.seed));
    trace.set_param("init", std::string("linear"));
    trace.set_param("d_out", static_cast<ull>(spec.d_out));
    trace.set_param("heads", static_cast<ull>(H));
    trace.set_param("layers", static_cast<ull>(L));
    trace.set_param("kv_producing_layers", static_cast<ull>(P));
    Recorder rec(trace);
    const Cube x = cube_from_trace(input.x);
    const std::size_t B = x.shape(0), T = x.shape(1);

    const KvSharingForward f = kv_sharing_forward(x, stack, P);
    std::vector<ull> sources;
    for (std::size_t s : f.source) sources.push_back(s + 1);
    Step& plan = rec.add_plain("kv_sources",
                               P == L ? "Every layer makes its own keys and values" :
                               "L" + layer_range(1, P).substr(1) + (P == 1 ? " makes" : " make") + " keys and values, " + layer_range(P + 1, L) +
                                   (L - P == 1 ? " reuses" : " reuse") + " layer " + std::to_string(P) + "'s",
                               "source(l) = l for l ≤ P, else P", integer_tensor(sources, {L}), {Axis::layer});
    plan.note = "Each layer keeps its own queries; a layer after the first P = " + std::to_string(P) +
                " makes no keys or values and attends with the last producing layer's, as they stand in its cache. Only " +
                std::to_string(P) + " of the " + std::to_string(L) + " layers keep a cache.";

    for (std::size_t l = 0; l < L; ++l) {
        const std::string N = "layer" + std::to_string(l + 1) + ".", name = "Layer " + std::to_string(l + 1);
        const bool producing = f.source[l] == l;
        const std::string src = std::to_string(f.source[l] + 1), in = l == 0 ? "X" : "X_" + std::to_string(l + 1);
        const Forward& lf = f.layers[l];
        record_layer_parameters(rec, N, *stack[l], producing);
        rec.add(N + "queries", name + ": its own queries", "Q_" + std::to_string(l + 1) + " = " + in + "·W_q," + std::to_string(l + 1),
                lf.qh, head_tokens_features);
        if (producing) {
            rec.add(N + "keys", name + ": its own keys, into its cache", "K_" + src + " = " + in + "·W_k," + src, lf.kh, head_tokens_features);
            rec.add(N + "values", name + ": its own values, into its cache", "V_" + src + " = " + in + "·W_v," + src, lf.vh,
                    head_tokens_features);
        } else {
            rec.add(N + "keys", name + ": layer " + src + "'s keys, read from its cache", "K_" + src, lf.kh, head_tokens_features).note =
                "Not computed: no W_key is used in this layer, and nothing is added to any cache.";
            rec.add(N + "values", name + ": layer " + src + "'s values, read from its cache", "V_" + src, lf.vh, head_tokens_features);
        }
        rec.mask_from_here(CellMask{});
        rec.add_with_row_sums(N + "weights", name + ": causal attention weights (scores / √d_k = √" + std::to_string(d_h) + ")",
                              "A = softmax(masked Q_" + std::to_string(l + 1) + "·K_" + src + "ᵀ / √d_k)", lf.weights, head_tokens_tokens);
        rec.mask_from_here(std::nullopt);
        rec.add(N + "output", name + ": its output" + (l + 1 < L ? ", layer " + std::to_string(l + 2) + "'s input" : ""),
                "X_" + std::to_string(l + 2) + " = concat_h(A_h·V_" + src + ",h)·W_o," + std::to_string(l + 1) + " + b_o," +
                    std::to_string(l + 1),
                lf.output, tokens_features);
    }
    rec.add("output", "The stack's output", "Y = X_" + std::to_string(L + 1), f.output, tokens_features);
    const Cube handed = kv_handed_forward(x, stack, f.source);
    rec.add("output_explicit", "The same stack, the keys and values handed over explicitly",
            "layer l > P: forward(X_l, shared_kv = (X_P·W_k,P, X_P·W_v,P))", handed, tokens_features)
        .note = "No cache between the layers: each reusing layer is given layer " + std::to_string(P) +
                "'s keys and values as arguments, made again from that layer's input.";
    const float diff = max_abs_diff(handed, f.output);
    if (diff != 0.0f)  // the same products in the same order: any difference is a bug
        throw std::logic_error("kvshare: the shared and the handed stack differ by " + format_number(diff));
    rec.add_plain("max_difference", "The shared stack against the handed one", "max |Y − Y_explicit|", scalar_trace(diff), {}).note =
        "Equal bit for bit: reading the keys and values from the producing layer's cache is the same as handing them over.";

    // The cache, by the textbook's formula: B·T·d_k·G·layers·2·bytes, with the producing layers
    // in place of the layers when they share.
    const std::size_t tokens = spec.context_tokens ? spec.context_tokens : T;
    const std::size_t cH = spec.cache_heads ? spec.cache_heads : H, cd = spec.cache_head_dim ? spec.cache_head_dim : d_h;
    const std::size_t G = spec.kv_heads;
    trace.set_param("cache_tokens", static_cast<ull>(tokens));
    trace.set_param("bytes_per_value", static_cast<ull>(spec.bytes_per_value));
    if (spec.cache_heads) trace.set_param("cache_heads", static_cast<ull>(cH));
    if (spec.cache_head_dim) trace.set_param("cache_head_dim", static_cast<ull>(cd));
    if (G) trace.set_param("kv_heads", static_cast<ull>(G));
    const auto bytes = [&](std::size_t kv_heads, std::size_t layers) {
        return kv_cache_bytes(B, tokens, kv_heads, cd, layers, spec.bytes_per_value);
    };
    std::vector<double> sizes{bytes(cH, L)};
    std::vector<std::string> labels{"MHA"};
    if (G) {
        sizes.push_back(bytes(G, L));
        labels.push_back("GQA");
    }
    sizes.push_back(bytes(cH, P));
    labels.push_back("MHA + sharing");
    if (G) {
        sizes.push_back(bytes(G, P));
        labels.push_back("GQA + sharing");
    }
    Step& cb = rec.add_plain("cache_bytes", "The cache's size in bytes, without and with sharing", "B·T·d_k·G·layers·2·bytes (sharing: P layers)",
                             counts_tensor(sizes, "The cache's size"), {Axis::feature});
    cb.labels = labels;
    std::ostringstream note;
    note << "B " << B << " × T " << grouped(tokens) << " × d_k " << cd << " × G " << cH << (G ? " (GQA: " + std::to_string(G) + ")" : "")
         << " × 2 (keys and values) × " << spec.bytes_per_value << " bytes × " << L << " layers, or × " << P
         << " with sharing: ";
    for (std::size_t i = 0; i < sizes.size(); ++i) note << (i ? ", " : "") << labels[i] << " " << gigabytes(sizes[i]);
    if (P == L) note << ": every layer makes its own keys and values, so sharing saves nothing.";
    else note << ": " << std::fixed << std::setprecision(2) << static_cast<double>(L) / static_cast<double>(P) << std::defaultfloat << "× less with sharing.";
    if (!spec.context_tokens && !spec.cache_heads && !spec.cache_head_dim) {
        double held = 0.0;
        for (const KvCache& c : f.caches) held += c.bytes(spec.bytes_per_value);
        note << " The " << P << (P == 1 ? " cache" : " caches") << " this walk filled hold " << bytes_text(held) << " bytes.";
    }
    cb.note = note.str();
    return finish(std::move(trace), recording);
}

Cost kvshare_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, const KvShareSpec& spec) {
    Cost c;
    for (std::size_t l = 0; l < spec.layers; ++l) {  // each layer twice (shared, handed), and its weights
        const Cost one = walk_cost(batch, tokens, l == 0 ? d_in : spec.d_out, spec.d_out, spec.heads, tokens);
        c.bytes += 2.0 * one.bytes;
        c.work += 2.0 * one.work;
    }
    return c;
}

}  // namespace attnwalk
