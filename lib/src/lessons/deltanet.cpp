// deltanet: Gated DeltaNet (ops/delta_rule.hpp) on seeded weights: the normalised queries
// and keys, each token's decay and write strength, the delta rule token by token on a
// state of fixed size, the exact T × T matrix the outputs come from, the chunked form,
// the gated RMSNorm and the output; the state's size against a KV cache.
#include <algorithm>
#include <cmath>
#include <sstream>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/weights.hpp"
#include "attnwalk/ops/activations.hpp"
#include "attnwalk/ops/delta_rule.hpp"
#include "attnwalk/ops/gated_deltanet.hpp"
#include "attnwalk/ops/norms.hpp"
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

ATTNWALK_LESSON(deltanet, 130) {
    static const LessonDecl lesson{"deltanet", "Gated DeltaNet (Qwen3-Next, Qwen3.5): linear attention as a state updated by the delta rule; its exact attention matrix; the chunked form.",
        joined({{
            {"W_query", "the query projection, d_in×d_out in x·W layout (a parameter)"},
            {"W_key", "the key projection (a parameter)"},
            {"W_value", "the value projection (a parameter)"},
            {"W_gate", "the output gate's projection, d_in×d_out, x·W layout (a parameter)"},
            {"W_beta", "the write strength's projection, d_in×H, x·W layout (a parameter)"},
            {"W_alpha", "the decay's projection, d_in×H, x·W layout (a parameter)"},
            {"dt_bias", "the decay's bias, one per head (a parameter)"},
            {"A_log", "the decay's log rate, one per head (a parameter)"},
            {"out_proj.weight", "the output projection, x·W layout (a parameter)"},
            {"out_proj.bias", "the output projection's bias (a parameter)"},
        }, projection_steps(), {
            {"queries_normed", "the queries after their norm (QK-norm; DeltaNet: L2-normalised and scaled by 1/√d_k)"},
            {"keys_normed", "the keys after their norm (QK-norm; DeltaNet: L2-normalised)"},
            {"values_split", "the values viewed as heads"},
            {"beta", "the write strength β = σ(x·W_beta) per head and token"},
            {"decay_log", "g = −exp(A_log)·softplus(x·W_alpha + dt_bias) per head and token"},
            {"decay", "the decay γ = exp(g) per head and token: the share of the state kept", headline},
            {"stepN.decayed", "the state after the decay, γ_t·S"},
            {"stepN.prediction", "what the state predicts for the token's key, Sᵀk_t"},
            {"stepN.error", "the value against the prediction, v_t − Sᵀk_t"},
            {"stepN.write", "what is written, k_t ⊗ β_t·(v_t − Sᵀk_t)"},
            {"stepN.state", "the state after the write"},
            {"stepN.output", "the token's output read from the state, Sᵀq_t"},
            {"head_outputs", "each head's context vectors A_h·V_h"},
            {"effective_attention", "the exact attention matrix of the delta rule: its product with the values is the outputs", headline},
            {"effective_output", "the effective attention matrix times the values"},
            {"max_difference", "the largest |difference| between two ways that must agree (causal: (a) and (b))", headline},
            {"chunked_output", "the outputs of the chunked form, chunk by chunk"},
            {"chunked_difference", "the largest |difference| between the chunked and the recurrent outputs"},
            {"outputs_normed", "each head's output after its RMSNorm"},
            {"gate", "the output gate, x·W_gate"},
            {"gated", "the normed outputs times SiLU(gate), heads concatenated"},
            {"output", "the output projection of the context (or the context itself)"},
            {"state_bytes", "the memory of a KV cache for the tokens against the DeltaNet state, for the layers", headline},
        }})};
    return lesson;
}

namespace {


// The textbook's GatedDeltaNet class (ch04/08_deltanet), its layers in its order, with
// one β per head as Qwen3-Next has it.
struct DeltaNetWeights {
    Linear query, key, value, gate, beta, alpha, out;
    Vec dt_bias, a_log;
};

DeltaNetWeights draw(std::size_t d_in, const DeltaNetSpec& spec) {
    Generator gen(spec.seed);
    DeltaNetWeights w;
    const std::size_t d = spec.d_out, H = spec.heads;
    w.query = draw_linear(gen, d_in, d, false);
    w.key = draw_linear(gen, d_in, d, false);
    w.value = draw_linear(gen, d_in, d, false);
    w.gate = draw_linear(gen, d_in, d, false);
    w.beta = draw_linear(gen, d_in, H, false);
    w.alpha = draw_linear(gen, d_in, H, false);
    w.dt_bias = Vec::from_shape({H});
    w.dt_bias.fill(1.0f);
    const std::vector<float> a = gen.uniform(H, 0.0, 16.0);  // torch.empty(H).uniform_(0, 16)
    w.a_log = Vec::from_shape({H});
    for (std::size_t h = 0; h < H; ++h) w.a_log(h) = std::log(spec.decay_rate ? static_cast<float>(*spec.decay_rate) : a[h]);
    w.out = draw_linear(gen, d, d, true);
    return w;
}

void parameter(Recorder& rec, const std::string& id, const std::string& title, const std::string& formula, const Tensor& t,
               std::vector<Axis> axes) {
    rec.add_plain(id, title, formula, t, std::move(axes)).kind = StepKind::parameter;
}

// (B,T,H·d) -> (B,H,T) for d = 1, or -> (B,H,T,d).
Cube per_head(const Cube& x, std::size_t H) {
    const std::size_t B = x.shape(0), T = x.shape(1);
    Cube out = Cube::from_shape({B, H, T});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t t = 0; t < T; ++t)
            for (std::size_t h = 0; h < H; ++h) out(b, h, t) = x(b, t, h);
    return out;
}

float worst(const Hyper& a, const Hyper& b) {
    float m = 0.0f;
    for (std::size_t i = 0; i < a.size(); ++i) m = std::max(m, std::fabs(a.data()[i] - b.data()[i]));
    return m;
}

std::string difference_note(float diff, const char* what) {
    return diff == 0.0f ? std::string("Equal bit for bit.")
                        : std::string("Equal in exact arithmetic; ") + what + " differ by " + format_number(diff) +
                              " (float32 rounding of the same sums taken in another order).";
}

}  // namespace

Trace walk_deltanet(const Embeddings& input, const DeltaNetSpec& spec, const Recording& recording) {
    const std::size_t H = spec.heads, D = spec.d_out;
    if (H == 0 || D == 0 || D % H) throw UsageError("d_out must be divisible by the number of heads: d_out " + std::to_string(D) + ", " + std::to_string(H) + " heads");
    if (spec.chunk == 0) throw UsageError("a chunk holds at least one token");
    const std::size_t d = D / H;
    const DeltaNetWeights w = draw(input.dim(), spec);
    Trace trace = start_trace("deltanet", input, nullptr);
    trace.set_param("seed", static_cast<ull>(spec.seed));
    trace.set_param("init", std::string("linear"));
    trace.set_param("d_out", static_cast<ull>(D));
    trace.set_param("heads", static_cast<ull>(H));
    trace.set_param("chunk", static_cast<ull>(spec.chunk));
    if (spec.decay_rate) trace.set_param("decay_rate", *spec.decay_rate);
    Recorder rec(trace);
    const Cube x = cube_from_trace(input.x);
    const std::size_t B = x.shape(0), T = x.shape(1);

    record_parameters(rec, w.query, w.key, w.value, "", "");
    parameter(rec, "W_gate", "W_gate: the output gate (d_in×d_out, x·W layout)", "W_gate", to_trace(w.gate.matrix()), {Axis::feature, Axis::feature});
    parameter(rec, "W_beta", "W_beta: one write strength per head (d_in×H, x·W layout)", "W_beta", to_trace(w.beta.matrix()),
              {Axis::feature, Axis::head});
    parameter(rec, "W_alpha", "W_alpha: one decay per head (d_in×H, x·W layout)", "W_alpha", to_trace(w.alpha.matrix()), {Axis::feature, Axis::head});
    parameter(rec, "dt_bias", "dt_bias: ones", "dt_bias", to_trace(w.dt_bias), {Axis::head});
    parameter(rec, "A_log", spec.decay_rate ? "A_log = log(A), A = " + format_number(*spec.decay_rate) + " for every head" : "A_log = log(A), A drawn from U(0, 16)",
              "A_log", to_trace(w.a_log), {Axis::head});
    parameter(rec, "out_proj.weight", "out_proj weight (d_out×d_out, x·W layout)", "W_o", to_trace(w.out.matrix()), {Axis::feature, Axis::feature});
    parameter(rec, "out_proj.bias", "out_proj bias", "b_o", to_trace(w.out.b), {Axis::feature});

    const Cube q = project(x, w.query), k = project(x, w.key), v = project(x, w.value);
    rec.add("queries", "Queries", "Q = X·W_query", q, tokens_features);
    rec.add("keys", "Keys", "K = X·W_key", k, tokens_features);
    rec.add("values", "Values", "V = X·W_value", v, tokens_features);
    DeltaInputs in;
    const std::string root = "√" + std::to_string(d);
    in.q = l2_normalise(split_heads(q, H), 1.0f / std::sqrt(static_cast<float>(d)));
    in.k = l2_normalise(split_heads(k, H), 1.0f);
    in.v = split_heads(v, H);
    rec.add("queries_normed", "Queries of each head, L2-normalised and divided by " + root, "q = Q_h / ‖Q_h‖ / √d_k", in.q, head_tokens_features);
    rec.add("keys_normed", "Keys of each head, L2-normalised", "k = K_h / ‖K_h‖", in.k, head_tokens_features).note =
        "Unit-length keys make the state's prediction Sᵀk a reading of what was written along k, so that the update can correct it "
        "exactly.";
    rec.add("values_split", "Values of each head", "v = V_h", in.v, head_tokens_features);

    const GatedDeltaNetGates gates = gated_deltanet_gates(project(x, w.beta), project(x, w.alpha), w.a_log, w.dt_bias);
    in.beta = per_head(gates.beta, H);
    in.g = per_head(gates.g, H);
    const Cube alpha = per_head(gates.decay, H);
    rec.add("beta", "Write strength per head and token", "β = σ(x·W_beta)", in.beta, {Axis::head, Axis::token}).note =
        "β near 1 replaces what the state holds along k_t by v_t; near 0 the token writes little.";
    rec.add("decay_log", "The decay, in log space", "g = −exp(A_log)·softplus(x·W_alpha + dt_bias)", in.g, {Axis::head, Axis::token});
    Step& ds = rec.add("decay", "The decay per head and token: the share of the state kept", "γ = exp(g)", alpha, {Axis::head, Axis::token});
    ds.note = "γ multiplies the whole state before each write: old tokens fade by the product of the γ's since.";
    if (*std::max_element(alpha.begin(), alpha.end()) < 0.01f)
        ds.note += " Here γ is near 0: with A drawn from U(0, 16) the state forgets almost everything at each token. A small decay "
                   "rate A (0.1: γ ≈ 0.9) lets it remember.";

    const DeltaRun rnn = delta_rule_recurrent(in, true);
    for (std::size_t t = 0; t < T; ++t) {
        const DeltaStep& s = rnn.steps[t];
        const std::string N = "step" + std::to_string(t + 1) + ".", tok = steps::quoted(trace.tokens[t]);
        Cube error = Cube::from_shape({B, H, d}), strength = error;
        Hyper write = Hyper::from_shape({B, H, d, d});
        for (std::size_t b = 0; b < B; ++b)
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t m = 0; m < d; ++m) {
                    error(b, h, m) = in.v(b, h, t, m) - s.prediction(b, h, m);
                    for (std::size_t i = 0; i < d; ++i) write(b, h, i, m) = in.k(b, h, t, i) * s.error(b, h, m);
                }
        rec.add(N + "decayed", "Step " + std::to_string(t + 1) + ": " + tok + " arrives; the state decays", "S ← γ_t·S", s.decayed,
                {Axis::head, Axis::feature, Axis::feature})
            .note = t == 0 ? "The state starts at zero: nothing to forget yet." : "";
        rec.add(N + "prediction", "What the state predicts for " + tok + "'s key", "p = Sᵀk_t", s.prediction, {Axis::head, Axis::feature});
        rec.add(N + "error", "Its value against the prediction", "v_t − p", error, {Axis::head, Axis::feature});
        rec.add(N + "write", "The write: the key times the error, scaled by β", "k_t ⊗ β_t·(v_t − p)", write, {Axis::head, Axis::feature, Axis::feature})
            .note = "The delta rule: only what the state got wrong is written, so a key seen again overwrites instead of piling up.";
        rec.add(N + "state", "The state after " + tok, "S ← S + k_t ⊗ β_t·(v_t − Sᵀk_t)", s.state, {Axis::head, Axis::feature, Axis::feature});
        rec.add(N + "output", tok + "'s output, read from the state", "o_t = Sᵀq_t", s.output, {Axis::head, Axis::feature});
    }
    rec.add("head_outputs", "Every token's output, per head", "o_t = S_tᵀq_t", rnn.outputs, head_tokens_features);

    const Hyper A = delta_rule_attention(in);
    rec.mask_from_here(CellMask{});
    Step& as = rec.add_with_row_sums("effective_attention", "The delta rule as one attention matrix per head", "o = A·V, A = P·U", A,
                                     head_tokens_tokens);
    as.note = "P_tj = (γ_j+1···γ_t)(q_t·k_j); U writes each token's error as a sum of values, (I + diag(β)·L)·U = diag(β), L_jm = "
              "(γ_m+1···γ_j)(k_j·k_m). Rows need not sum to 1 and weights may be negative: no softmax here.";
    rec.mask_from_here(std::nullopt);
    Hyper eff = fresh<4>({B, H, T, d});
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t h = 0; h < H; ++h)
            for (std::size_t t = 0; t < T; ++t)
                for (std::size_t m = 0; m < d; ++m) {
                    float s = 0.0f;
                    for (std::size_t j = 0; j < T; ++j) s += A(b, h, t, j) * in.v(b, h, j, m);
                    eff(b, h, t, m) = s;
                }
    rec.add("effective_output", "The matrix times the values", "A·V", eff, head_tokens_features);
    const float diff = worst(eff, rnn.outputs);
    rec.add_plain("max_difference", "The matrix against the recurrence", "max |A·V − o|", scalar_trace(diff), {}).note =
        difference_note(diff, "they");
    const Hyper chunked = delta_rule_chunked(in, spec.chunk).outputs;
    const std::size_t C = std::min(spec.chunk, T);  // a longer chunk is the whole input
    rec.add("chunked_output", "The chunked form, " + std::to_string(C) + (C == 1 ? " token" : " tokens") + " per chunk" +
                                  (C < spec.chunk ? " (the whole input)" : ""),
            "chunk by chunk (WY form)", chunked,
            head_tokens_features)
        .note = "Within a chunk the tokens are solved together as a small triangular system; the state passes from chunk to chunk. "
                "Training kernels work this way.";
    const float cdiff = worst(chunked, rnn.outputs);
    rec.add_plain("chunked_difference", "The chunked form against the recurrence", "max |o_chunked − o|", scalar_trace(cdiff), {}).note =
        difference_note(cdiff, "they");

    // the gated RMSNorm: each head's output normalised, times SiLU(gate)
    Cube o = merge_heads(rnn.outputs);  // (B,T,H·d)
    Vec ones = Vec::from_shape({d});
    ones.fill(1.0f);
    rms_norm_rows(o.data(), o.size() / d, d, ones, 1e-6f);
    rec.add("outputs_normed", "Each head's output after its RMSNorm (weights ones)", "RMSNorm(o_h)", Cube(o), tokens_features);
    const Cube z = project(x, w.gate);
    rec.add("gate", "The output gate", "z = X·W_gate", z, tokens_features);
    const Cube sz = silu(z);
    Cube gated = o;
    for (std::size_t i = 0; i < gated.size(); ++i) gated.data()[i] *= sz.data()[i];
    rec.add("gated", "The normed outputs times SiLU(gate)", "RMSNorm(o)·SiLU(z)", gated, tokens_features);
    rec.add("output", "The output", "Y = gated·W_o + b_o", project(gated, w.out), tokens_features);

    // a layer's memory for `tokens`: the KV cache against the state
    const std::size_t tokens = spec.context_tokens ? spec.context_tokens : T;
    const double per = static_cast<double>(B) * static_cast<double>(spec.layers) * static_cast<double>(spec.bytes_per_value);
    const double kv = per * static_cast<double>(tokens) * static_cast<double>(H * d) * 2.0, st = per * static_cast<double>(H * d * d);
    trace.set_param("layers", static_cast<ull>(spec.layers));
    trace.set_param("cache_tokens", static_cast<ull>(tokens));
    trace.set_param("bytes_per_value", static_cast<ull>(spec.bytes_per_value));
    const Tensor bytes = counts_tensor({kv, st}, "The memory");
    Step& sb = rec.add_plain("state_bytes", "Memory: a KV cache against the state", "B·T·H·d_k·2·layers·bytes vs B·H·d_k·d_k·layers·bytes", bytes,
                             {Axis::feature});
    sb.labels = {"KV cache", "DeltaNet state"};
    std::ostringstream note;
    note << "For " << (B > 1 ? std::to_string(B) + " sequences of " : std::string()) << grouped(tokens) << (tokens == 1 ? " token" : " tokens")
         << ", " << grouped(spec.layers) << (spec.layers == 1 ? " layer" : " layers")
         << ", " << spec.bytes_per_value << " bytes a number: the cache grows with the tokens, " << bytes_text(kv)
         << " bytes; the state stays " << bytes_text(st) << " bytes (" << H << (H == 1 ? " head × " : " heads × ") << d << " × " << d
         << ") however long the text.";
    sb.note = note.str();
    return finish(std::move(trace), recording);
}

Cost deltanet_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, const DeltaNetSpec& spec) {
    const double B = static_cast<double>(batch), T = static_cast<double>(tokens), D = static_cast<double>(spec.d_out),
                 H = static_cast<double>(spec.heads), d = H > 0.0 ? D / H : 0.0, C = static_cast<double>(std::min(spec.chunk, std::max<std::size_t>(tokens, 1)));
    // per token: every step's state copies (decayed, write, state, twice in the trace), per head d×d
    const double steps = B * T * H * d * d * 8.0 + B * T * (D * 12.0 + H * 8.0);
    const double squares = B * H * T * T * 4.0 + T * T * 2.0;  // the effective matrix, its copy, U
    Cost c;
    c.bytes = 4.0 * (steps + squares + 6.0 * static_cast<double>(d_in) * D + 2.0 * D * D + 4.0 * C * C + 4.0 * C * d) + 8.0 * T * T;
    c.work = B * T * (static_cast<double>(d_in) * D * 5.0 + H * d * d * 6.0) + B * H * T * T * T * 0.5 * d +
             B * H * T * C * (C + 4.0 * d) * 4.0 + B * H * T * T * d;  // a chunk's triangular solve is C³: T/C of them
    return c;
}

}  // namespace attnwalk
