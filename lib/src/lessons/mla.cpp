// mla: multi-head latent attention (ops/latent_attention.hpp) on seeded weights: the
// latent every head's keys and values come from, the rotary key part the heads share, the
// scores as the sum of the two parts; the absorbed form, equal to it; and what a cache
// keeps per token against multi-head and grouped-query attention.
#include <cmath>
#include <iomanip>
#include <sstream>

#include <xtensor/xbuilder.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/weights.hpp"
#include "attnwalk/lessons/mla.hpp"
#include "attnwalk/ops/latent_attention.hpp"
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

ATTNWALK_LESSON(mla, 120) {
    static const LessonDecl lesson{"mla", "Multi-head latent attention (DeepSeek-V2/V3): keys and values from one small latent per token; the absorbed form; the cache it saves.", {
        {"q_proj.weight", "MLA's query projection, d_in×H·(d_nope + d_rope), x·W layout (a parameter)"},
        {"q_a_proj.weight", "MLA's query down-projection to the query latent, d_in×r_q, x·W layout (a parameter)"},
        {"q_b_proj.weight", "MLA's query up-projection from the query latent, r_q×H·(d_nope + d_rope), x·W layout (a parameter)"},
        {"kv_a_proj.weight", "MLA's down-projection W_DKV, d_in×(r + d_rope): the latent and the shared rotary key, x·W layout (a parameter)"},
        {"kv_b_proj.weight", "MLA's up-projection, r×H·(d_nope + d_v): W_UK and W_UV head by head, x·W layout (a parameter)"},
        {"o_proj.weight", "MLA's output projection, H·d_v×d_in, x·W layout (a parameter)"},
        {"query_latent", "the query's own latent, X·W_qa (when r_q > 0)"},
        {"query_latent_normed", "the query latent after its RMSNorm"},
        {"queries", "the queries of every head, d_nope then d_rope features per head"},
        {"kv_down", "X·W_DKV: per token the r latent numbers, then the d_rope numbers of the shared rotary key"},
        {"latent", "c_KV: the latent after its RMSNorm, what the cache keeps (with keys_rope)", headline},
        {"keys_nope", "each head's keys without position, c_KV·W_UK,h"},
        {"values", "each head's values, c_KV·W_UV,h"},
        {"queries_nope", "each head's query features without position"},
        {"queries_rope", "each head's rotary query features, rotated by position"},
        {"keys_rope", "the rotary key, rotated by position: one for every head"},
        {"scores_nope", "the content part of the scores, q_nope·k_nopeᵀ per head"},
        {"scores_rope", "the position part of the scores, q_rope·k_ropeᵀ per head"},
        {"scores", "the scores, ω = ω_nope + ω_rope (before the mask; X·Xᵀ without projections elsewhere)"},
        {"weights", "the attention weights: the softmax of the (masked, scaled) scores, before any dropout", opening},
        {"head_outputs", "each head's context vectors A_h·V_h"},
        {"context", "the context vectors (heads concatenated)"},
        {"output", "the output projection of the context (or the context itself)"},
        {"absorbed.queries_latent", "absorbed: each head's query taken into the latent space, q_nope·W_UK,hᵀ"},
        {"absorbed.scores_nope", "absorbed: the content scores straight from the latent, q̃·c_KVᵀ"},
        {"absorbed.weights", "absorbed: the attention weights (equal to weights)"},
        {"absorbed.latent_context", "absorbed: each head's weighted sum of the latents, A_h·c_KV"},
        {"absorbed.output", "absorbed: (A_h·c_KV)·W_UV,h, heads concatenated, through o_proj"},
        {"max_difference", "the largest |difference| between two ways that must agree (causal: (a) and (b))", headline},
        {"cache_per_token", "numbers a cache keeps per token and layer: multi-head, grouped-query and latent attention", headline},
        {"cache_bytes", "the KV cache's size in bytes for the configuration", headline},
    }};
    return lesson;
}

namespace {


void parameter(Recorder& rec, const std::string& id, const std::string& title, const std::string& formula, const Linear& l) {
    rec.add_plain(id, title + " (x·W layout)", formula, to_trace(l.matrix()), {Axis::feature, Axis::feature}).kind = StepKind::parameter;
}

// "1 number", "2 numbers": `what` is the plural.
std::string sizes(std::size_t n, const std::string& what) {
    return std::to_string(n) + " " + (n == 1 && !what.empty() && what.back() == 's' ? what.substr(0, what.size() - 1) : what);
}

}  // namespace

static LatentWeights draw_latent_weights(std::size_t d_in, const MlaSpec& spec) {
    const std::size_t H = spec.heads, qk = spec.nope + spec.rope;
    Generator gen(spec.seed);  // DeepseekV3Attention's construction order, attention_bias = False
    LatentWeights w;
    w.heads = H;
    w.nope = spec.nope;
    w.rope = spec.rope;
    w.value = spec.value;
    if (spec.query_rank) {
        w.q_a_proj = draw_linear(gen, d_in, spec.query_rank, false);
        w.q_a_norm = xt::ones<float>({spec.query_rank});
        w.q_b_proj = draw_linear(gen, spec.query_rank, H * qk, false);
    } else {
        w.q_proj = draw_linear(gen, d_in, H * qk, false);
    }
    w.kv_a_proj = draw_linear(gen, d_in, spec.rank + spec.rope, false);
    w.kv_a_norm = xt::ones<float>({spec.rank});
    w.kv_b_proj = draw_linear(gen, spec.rank, H * (spec.nope + spec.value), false);
    w.o_proj = draw_linear(gen, H * spec.value, d_in, false);
    return w;
}

Trace walk_mla(const Embeddings& input, const MlaSpec& spec, const Recording& recording) {
    if (spec.heads == 0 || spec.rank == 0 || spec.value == 0 || spec.nope + spec.rope == 0)
        throw UsageError("MLA needs at least one head, a latent of r ≥ 1, d_v ≥ 1 and d_nope + d_rope ≥ 1");
    if (spec.rope % 2) throw UsageError("the rotary part turns pairs of features: d_rope must be even, not " + std::to_string(spec.rope));
    const std::size_t H = spec.heads, G = spec.kv_heads ? spec.kv_heads : (H % 2 ? 1 : H / 2), r = spec.rank;
    if (H % G) throw UsageError("the grouped-query comparison needs G dividing H = " + std::to_string(H) + ", not " + std::to_string(G));
    const LatentWeights w = draw_latent_weights(input.dim(), spec);
    Trace trace = start_trace("mla", input, nullptr);
    trace.set_param("seed", static_cast<ull>(spec.seed));
    trace.set_param("init", std::string("linear"));
    trace.set_param("heads", static_cast<ull>(H));
    trace.set_param("kv_lora_rank", static_cast<ull>(r));
    if (spec.query_rank) trace.set_param("q_lora_rank", static_cast<ull>(spec.query_rank));
    trace.set_param("qk_nope_head_dim", static_cast<ull>(spec.nope));
    trace.set_param("qk_rope_head_dim", static_cast<ull>(spec.rope));
    trace.set_param("v_head_dim", static_cast<ull>(spec.value));
    if (spec.rope) trace.set_param("rope_base", spec.rope_base);
    if (spec.interleave) trace.set_param("rope_interleave", true);
    Recorder rec(trace);
    const Cube x = cube_from_trace(input.x);
    const std::size_t T = x.shape(1);

    if (w.q_a_proj) {
        parameter(rec, "q_a_proj.weight", "W_qa: down to the query's latent of r_q = " + std::to_string(spec.query_rank), "W_qa", *w.q_a_proj);
        parameter(rec, "q_b_proj.weight", "W_qb: the query latent up to every head", "W_qb", *w.q_b_proj);
    } else {
        parameter(rec, "q_proj.weight", "W_q: every head's query features", "W_q", *w.q_proj);
    }
    parameter(rec, "kv_a_proj.weight", "W_DKV: down to the latent (r = " + std::to_string(r) + ") and the shared rotary key", "W_DKV", w.kv_a_proj);
    parameter(rec, "kv_b_proj.weight", "W_UK | W_UV: the latent up to each head's key and value", "W_UKV", w.kv_b_proj);
    parameter(rec, "o_proj.weight", "W_o: the heads' outputs back to the model's width", "W_o", w.o_proj);

    LatentSpec ls;
    ls.rope.base = spec.rope_base;
    ls.interleave = spec.interleave;
    const LatentForward f = latent_attention_forward(x, w, ls);
    const std::string interleaved = "rope_interleave: the pairs (0,1), (2,3), … are put in half-split order first (d0, d2, …, d1, d3, …), as "
                                    "Hugging Face does for DeepSeek-V3's checkpoints; the rotation then pairs d_i with d_i+d_rope/2.";
    const std::string qk = "√" + std::to_string(spec.nope + spec.rope);

    if (w.q_a_proj) {
        rec.add("query_latent", "The query's own latent: " + sizes(spec.query_rank, "numbers per token"), "c_Q = X·W_qa", f.q_a, tokens_features);
        rec.add("query_latent_normed", "After its RMSNorm", "c_Q ← RMSNorm(c_Q)", f.q_a_normed, tokens_features);
    }
    rec.add("queries", spec.rope ? "The queries of every head (" + sizes(spec.nope, "content") + " + " + sizes(spec.rope, "rotary features") + " each)"
                                 : "The queries of every head (" + sizes(spec.nope, "features") + " each)",
            w.q_a_proj ? "Q = c_Q·W_qb" : "Q = X·W_q", f.q, tokens_features);
    rec.add("kv_down", spec.rope ? "Down to the latent: " + sizes(r, "latent numbers") + " then " + sizes(spec.rope, "rotary key numbers") + " per token"
                                 : "Down to the latent: " + sizes(r, "numbers") + " per token",
            spec.rope ? "[c | k_rope] = X·W_DKV" : "c = X·W_DKV", f.kv_a, tokens_features)
        .note = "One product per token for every head's keys and values: " + std::to_string(input.dim()) + " features in, " +
                std::to_string(r + spec.rope) + " out.";
    rec.add("latent", "The latent c_KV, normalised: what the cache keeps, " + sizes(r, "numbers per token"), "c_KV = RMSNorm(c)", f.latent,
            tokens_features)
        .note = "Every head's keys and values are made from these " + sizes(r, "numbers") + " per token; a cache keeps them" +
                (spec.rope ? " (and the rotary key)" : "") + " instead of the keys and values themselves.";
    rec.add("keys_nope", "Each head's keys (content part), up from the latent", "k_nope,h = c_KV·W_UK,h", f.k_nope, head_tokens_features);
    rec.add("values", "Each head's values, up from the latent", "v_h = c_KV·W_UV,h", f.v, head_tokens_features);
    rec.add("queries_nope", "Each head's query, content part", "q_nope,h = Q[:, h, :d_nope]", f.q_nope, head_tokens_features);
    if (spec.rope) {
        rec.add("queries_rope", "Each head's query, rotary part, rotated by position", "q_rope,h = RoPE(Q[:, h, d_nope:])", f.q_rope,
                head_tokens_features)
            .note = spec.interleave ? interleaved : "";
        rec.add("keys_rope", H == 1 ? std::string("The rotary key, rotated by position") : "The rotary key, rotated by position: one for all " + std::to_string(H) + " heads",
                spec.interleave ? "k_rope = RoPE(deinterleave(k_rope))" : "k_rope = RoPE(k_rope)", f.k_rope, tokens_features)
            .note = "RoPE cannot pass through the latent (a rotation by position between c_KV and W_UK would stop W_UK from being "
                    "absorbed), so position travels in these few extra numbers, which every head shares." +
                    (spec.interleave ? " " + interleaved : "");
    }
    rec.add("scores_nope", "Content scores", "ω_nope = q_nope·k_nopeᵀ", f.scores_nope, head_tokens_tokens);
    if (spec.rope) rec.add("scores_rope", "Position scores", "ω_rope = q_rope·k_ropeᵀ", f.scores_rope, head_tokens_tokens);
    rec.add("scores", spec.rope ? "The scores: the sum of the two parts" : "The scores", spec.rope ? "ω = ω_nope + ω_rope" : "ω = ω_nope",
            f.scores, head_tokens_tokens);
    rec.mask_from_here(CellMask{});
    rec.add_with_row_sums("weights", "Causal attention weights (scores / " + qk + ")", "A = softmax(masked ω / √(d_nope + d_rope))", f.weights,
                          head_tokens_tokens);
    rec.mask_from_here(std::nullopt);
    rec.add("head_outputs", "Each head's context vectors", "Z_h = A_h·V_h", f.head_outputs, head_tokens_features);
    rec.add("context", "The heads concatenated", "Z = concat_h(Z_h)", f.context, tokens_features);
    rec.add("output", "The output", "Y = Z·W_o", f.output, tokens_features);

    const LatentAbsorbed a = latent_attention_absorbed(f, w, ls);
    rec.add("absorbed.queries_latent", "Absorbed: each head's query in the latent space (" + sizes(r, "numbers") + ")",
            "q̃_h = q_nope,h·W_UK,hᵀ", a.q_latent, head_tokens_features)
        .note = "q_nope·k_nopeᵀ = q_nope·(c_KV·W_UK)ᵀ = (q_nope·W_UKᵀ)·c_KVᵀ: W_UK moves from the keys to the query, so no key is "
                "ever made.";
    rec.add("absorbed.scores_nope", "Absorbed: content scores straight from the cached latents", "ω_nope = q̃·c_KVᵀ", a.scores_nope,
            head_tokens_tokens);
    rec.mask_from_here(CellMask{});
    rec.add_with_row_sums("absorbed.weights", "Absorbed: the attention weights", spec.rope ? "A = softmax(masked (q̃·c_KVᵀ + ω_rope) / √(d_nope + d_rope))" : "A = softmax(masked q̃·c_KVᵀ / √d_nope)",
                          a.weights, head_tokens_tokens);
    rec.mask_from_here(std::nullopt);
    rec.add("absorbed.latent_context", "Absorbed: each head's weighted sum of the latents", "A_h·c_KV", a.latent_context, head_tokens_features)
        .note = "The values too stay latent until the end: (A_h·c_KV)·W_UV,h = A_h·(c_KV·W_UV,h), and W_UV,h can be folded into W_o.";
    rec.add("absorbed.output", "Absorbed: the output", "Y = concat_h((A_h·c_KV)·W_UV,h)·W_o", a.output, tokens_features);
    const float diff = max_abs_diff(a.output, f.output);
    rec.add_plain("max_difference", "The absorbed form against the direct one", "max |Y_absorbed − Y|", scalar_trace(diff), {}).note =
        diff == 0.0f ? "Equal bit for bit."
                     : "Equal in exact arithmetic; they differ by " + format_number(diff) +
                           " (float32 rounding of the same products grouped another way).";

    // What a cache keeps per token and layer, and for the configuration.
    const std::size_t tokens = spec.context_tokens ? spec.context_tokens : T;
    const double per_mha = static_cast<double>(H * (spec.nope + spec.rope + spec.value));
    const double per_gqa = static_cast<double>(G * (spec.nope + spec.rope + spec.value));
    const double per_mla = static_cast<double>(r + spec.rope);
    const std::vector<std::string> labels = {"MHA", "GQA", "MLA"};
    trace.set_param("kv_heads", static_cast<ull>(G));
    trace.set_param("layers", static_cast<ull>(spec.layers));
    trace.set_param("cache_tokens", static_cast<ull>(tokens));
    trace.set_param("bytes_per_value", static_cast<ull>(spec.bytes_per_value));
    Tensor per = integer_tensor({static_cast<ull>(per_mha), static_cast<ull>(per_gqa), static_cast<ull>(per_mla)}, {3});
    Step& ps = rec.add_plain("cache_per_token", "What a cache keeps per token and layer", "MHA H·(d_qk + d_v), GQA G·(d_qk + d_v), MLA r + d_rope",
                             per, {Axis::feature});
    ps.labels = labels;
    std::ostringstream pn;
    pn << "MHA: " << sizes(H, "heads") << " × (" << spec.nope + spec.rope << " key + " << spec.value << " value) = " << grouped(static_cast<ull>(per_mha))
       << "; GQA with G = " << G << ": " << grouped(static_cast<ull>(per_gqa)) << "; MLA: r " << r << " + d_rope " << spec.rope << " = "
       << grouped(static_cast<ull>(per_mla)) << " (" << std::fixed << std::setprecision(1)
       << (per_mla <= per_mha ? per_mha / per_mla : per_mla / per_mha) << (per_mla <= per_mha ? "× fewer than MHA)." : "× more than MHA: r is large for these heads).");
    ps.note = pn.str();
    const double scale = static_cast<double>(input.batch()) * static_cast<double>(tokens) * static_cast<double>(spec.layers) *
                         static_cast<double>(spec.bytes_per_value);
    const Tensor bytes = counts_tensor({per_mha * scale, per_gqa * scale, per_mla * scale}, "The cache's size");
    Step& cb = rec.add_plain("cache_bytes", "The cache's size in bytes", "B·T·layers·bytes × (numbers per token)", bytes, {Axis::feature});
    cb.labels = labels;
    std::ostringstream bn;
    bn << "B " << input.batch() << " × T " << tokens << " × " << spec.layers << (spec.layers == 1 ? " layer" : " layers") << " × "
       << spec.bytes_per_value << " bytes: MHA " << gigabytes(per_mha * scale) << ", GQA " << gigabytes(per_gqa * scale) << ", MLA "
       << gigabytes(per_mla * scale) << ".";
    cb.note = bn.str();
    return finish(std::move(trace), recording);
}

Cost mla_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, const MlaSpec& spec) {
    const double B = static_cast<double>(batch), T = static_cast<double>(tokens), d = static_cast<double>(d_in),
                 H = static_cast<double>(spec.heads), r = static_cast<double>(spec.rank), rq = static_cast<double>(spec.query_rank),
                 qk = static_cast<double>(spec.nope) + static_cast<double>(spec.rope), dv = static_cast<double>(spec.value),  // in double: never wraps
                 dr = static_cast<double>(spec.rope);
    // the weights (drawn, then copied into the trace's parameter steps)
    const double weights = (rq ? d * rq + rq * H * qk : d * H * qk) + d * (r + dr) + r * H * (qk - dr + dv) + H * dv * d;
    // per token: the projections, every head's parts, the absorbed latents and their copies
    const double rows = B * T * (rq * 2 + H * qk * 3 + (r + dr) * 3 + H * (qk + dv) * 2 + H * r * 2 + H * dv * 3 + d * 3);
    // per head and pair of tokens: scores (three parts), weights, absorbed again, with their copies
    const double squares = B * H * T * T * 2.0 * forward_square_tensors;
    Cost c;
    c.bytes = 4.0 * (2.0 * weights + 2.0 * rows + squares);
    c.work = weights * B * T + B * H * T * T * (qk + r + 2.0 * dv + 2.0 * r + 32.0) + B * T * H * r * (qk - dr + dv);
    return c;
}

}  // namespace attnwalk
