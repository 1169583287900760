// The model walk: a pretrained decoder run on token ids, recorded through the decoder's
// tap (model/decoder.hpp). The layer shown keeps mha's step ids; the other layers are
// summaries; then the next token's candidates, and greedy generation through the KV
// cache checked against the whole sequence recomputed.
#include <algorithm>
#include <cmath>
#include <functional>
#include <map>

#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/tokenizer.hpp"
#include "attnwalk/lessons/explain.hpp"
#include "attnwalk/lessons/recorder.hpp"
#include "attnwalk/model/decoder.hpp"
#include "attnwalk/ops/attention.hpp"
#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/sampling.hpp"
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

// gpt2 and model run the same walk: one declaration of its steps, under two names.
const std::vector<StepDecl>& model_steps() {
    constexpr Models beyond = Models::beyond_gpt2;  // a step only today's families record (the gpt2 lesson leaves it out)
    static const std::vector<StepDecl> steps = joined({{
        {"token_ids", "the input's token ids"},
        {"token_embeddings", "the rows of wte for the ids"},
        {"position_embeddings", "the rows 0…T−1 of wpe"},
        {"embeddings", "token plus position embeddings: the input of layer 1"},
        {"layerN.ln_1", "LayerNorm before the attention"},
        {"queries", "Q = X·W_query (+ b)"},
        {"keys", "K = X·W_key (+ b)"},
        {"values", "V = X·W_value (+ b)"},
        {"queries_normed", "QK-norm: each head's queries after their RMSNorm (q_norm), before RoPE", detail, beyond},
        {"keys_normed", "QK-norm: each key head's keys after their RMSNorm (k_norm), before RoPE", detail, beyond},
        {"rope_angles", "the rotation angles, position × frequency", detail, beyond},
        {"latent_kv", "latent attention (DeepSeek-V3): c_KV, each token's latent after its RMSNorm, what the cache keeps (with keys_rope)", detail, beyond},
        {"keys_rope", "latent attention: the rotary key part every head shares, after RoPE (cached too)", detail, beyond},
        {"queries_rotated", "the queries after RoPE", detail, beyond},
        {"keys_rotated", "the keys after RoPE", detail, beyond},
        {"scores", "ω = Q·Kᵀ (X·Xᵀ without projections)"},
        {"weights", "the attention weights: the softmax of the (masked, scaled) scores, before any dropout", headline},
        {"head_outputs", "each head's context vectors A_h·V_h"},
        {"context", "the context vectors (heads concatenated)"},
        {"gate", "gated attention (Qwen3-Next): the output gate, the second half of each head's q_proj", detail, beyond},
        {"gated", "gated attention: the context times σ(gate), what o_proj reads", detail, beyond},
        {"beta", "a Gated DeltaNet layer (Qwen3-Next): each token's write strength per head, β = σ(x·W_b)", detail, beyond},
        {"decay", "a Gated DeltaNet layer: each token's decay per head, α = exp(−exp(A_log)·softplus(x·W_a + dt_bias))", detail, beyond},
        {"effective_attention", "a Gated DeltaNet layer: the effective attention matrix per head (the delta rule's terms kept), o = A·V", detail, beyond},
        {"state", "a Gated DeltaNet layer: each head's state S (d_k × d_v) after the last token, all it keeps", detail, beyond},
        {"outputs_normed", "a Gated DeltaNet layer: the outputs through the gated RMSNorm, RMSNorm(o)·w ⊙ SiLU(z), what out_proj reads", detail, beyond},
        {"output", "the output projection of the context (or the context itself)"},
        {"layerN.attention", "the attention's output (c_proj)"},
        {"layerN.attention_norm", "Gemma 3: the RMSNorm of the attention's output (post_attention_layernorm)", detail, beyond},
        {"layerN.residual_1", "the layer's input plus the attention"},
        {"layerN.ln_2", "LayerNorm before the MLP"},
        {"layerN.mlp_hidden", "GELU of the first MLP layer (4C)"},
        {"layerN.mlp", "the MLP's output"},
        {"layerN.mlp_norm", "Gemma 3: the RMSNorm of the MLP's output (post_feedforward_layernorm)", detail, beyond},
        {"layerN.residual_2", "the layer's output: residual_1 plus the MLP"},
        {"attention_grid", "every layer's and head's attention weights (the model view)", view_headline},
        {"head_entropy", "per head: the mean entropy of its rows", view_headline},
        {"head_max_weight", "per head: the mean largest weight of a row", view_headline},
        {"head_first_token", "per head: the mean weight on token 0 (the attention sink)", view_headline},
        {"head_previous_token", "per head: the mean weight on the previous token", view_headline},
        {"head_diagonal", "per head: the mean weight on the token itself", view_headline},
        {"sink_by_depth", "per layer: the weight on token 0 from the later tokens, averaged over the heads (how the sink grows with depth)", view_headline},
        {"heads_sorted", "the heads ranked by one of those numbers", view_headline},
        {"ln_f", "the final LayerNorm"},
        {"logits", "the next token's logits (last position × wteᵀ)"},
        {"top_k_ids", "the ids of the most likely next tokens", headline | view_headline},
        {"top_k_logits", "their logits"},
        {"top_k_probs", "their probabilities, softmax(logits / temperature)", headline | view_headline},
        {"stepN.keys_cache", "the keys cached so far, the new one appended"},
        {"stepN.weights", "the new row of attention weights, per head"},
        {"generated_ids", "the tokens generated greedily, each through the KV cache", headline},
        {"max_difference", "the largest |difference| between two ways that must agree (causal: (a) and (b))", headline},
        {"sink_share", "learned sinks (gpt-oss): the share of each row the sink took, 1 − the row's sum of weights", detail, beyond},
        {"layerN.router_logits", "a mixture of experts (gpt-oss): the router's logit for every expert, per token", detail, beyond},
        {"layerN.experts_chosen", "a mixture of experts: the experts each token goes to, the largest logit first", detail, beyond},
        {"layerN.expert_weights", "a mixture of experts: their weights (gpt-oss: a softmax over the chosen logits; DeepSeek-V3: the chosen sigmoid scores, normalised and scaled)", detail, beyond},
        {"layerN.router_scores", "a sigmoid router (DeepSeek-V3): σ(logit) for every expert, per token", detail, beyond},
        {"layerN.shared_expert", "a shared expert (DeepSeek-V3): the dense MLP every token goes through beside its routed experts", detail, beyond},
        {"experts_by_layer", "a mixture of experts in the model view: the experts each token went to, in every layer", view_headline, beyond},
        {"cache_kept", "StreamingLLM's cache: the positions it keeps at the end, the first tokens and the most recent", headline, beyond},
        {"cache_kl", "StreamingLLM's cache: KL(full ‖ kept) of each generated step's next-token distribution", headline, beyond},
        {"cache_top_k_overlap", "StreamingLLM's cache: how many of the full cache's top-k next tokens the kept cache shares", detail, beyond},
        {"lens_top_ids", "the logit lens: per layer and position, the top token of the residual stream through the final norm and the unembedding", headline},
        {"lens_top_probs", "the logit lens: that token's probability", headline},
        {"lens_final_rank", "the logit lens: the rank of the model's final prediction at that position (1 = already on top)"},
        {"ablation", "ablation: the change of the next token's logit and probability and of the prompt's loss with the heads switched off", headline},
        {"ablation_per_head", "ablation: the same changes for each head of one layer switched off alone"},
        {"roles_ids", "head roles: the random ids, run twice in a row"},
        {"role_induction", "head roles: per layer and head the mean weight from each token of the second run to the token after its first occurrence", headline},
        {"role_previous", "head roles: per layer and head the mean weight on the previous token"},
        {"role_duplicate", "head roles: per layer and head the mean weight on the same token's first occurrence"},
        {"roles_ranked", "head roles: every head ranked by its induction score, with its other scores, its weight on the first token and its entropy", headline},
        {"rollout", "attention rollout: how much each position draws on each input token through all the layers", headline},
    }, explain_steps()});
    return steps;
}
const LessonDecl& gpt2_lesson() {  // GPT-2 alone: no QK-norm, no RoPE, no norms after the sublayers
    static const LessonDecl lesson{"gpt2", "A pretrained GPT-2 (safetensors): every layer, one layer's attention in full, the next token.", [] {
                                       std::vector<StepDecl> steps;
                                       for (const StepDecl& s : model_steps())
                                           if (s.models == Models::all) steps.push_back(s);
                                       return steps;
                                   }()};
    return lesson;
}
const LessonDecl& model_lesson() {
    static const LessonDecl lesson{"model", "A Hugging Face model folder (Llama 3, Qwen, Gemma 3, OLMo, SmolLM, gpt-oss, DeepSeek-V3, Qwen3-Next and 3.5, GPT-2): every layer, one in full, the next token.",
                                   model_steps()};
    return lesson;
}


const std::vector<std::string>& head_stat_names() {
    static const std::vector<std::string> names = {"entropy", "max_weight", "first_token", "previous_token", "diagonal"};
    return names;
}

namespace {

using ull = unsigned long long;

// Whether the layer shown is only summed (ForwardSpec::square_summaries): a summary of every
// head whose T×T steps nothing else reads (no view, rollout or cell written out). The tap
// asks it in the forward and model_walk_cost before it, so the two agree.
bool sums_shown_layer(const ModelSpec& spec, bool summary, bool explainable) {
    return summary && !spec.head && !spec.view && !spec.rollout && !explainable && !spec.explain;
}

// A tensor's statistics, for a step kept as a summary.
template <class Tensor>
Summary summary_of(const Tensor& t) {
    Summary s;
    s.add_all(t.data(), t.size());
    return s;
}

// Per head, averaged over the query rows: the entropy of the row (nats), its largest
// weight, its weight on token 0 (the attention sink), on the previous token (rows 1…),
// on itself.
std::vector<double> head_stats(const float* a, std::size_t T) {
    double entropy = 0, max = 0, first = 0, previous = 0, diagonal = 0;
    for (std::size_t i = 0; i < T; ++i) {
        const float* row = a + i * T;
        double e = 0, m = 0;
        for (std::size_t j = 0; j < T; ++j) {
            if (row[j] > 0) e -= static_cast<double>(row[j]) * std::log(static_cast<double>(row[j]));
            m = std::max(m, static_cast<double>(row[j]));
        }
        entropy += e;
        max += m;
        first += row[0];
        diagonal += row[i];
        if (i > 0) previous += row[i - 1];
    }
    const double n = static_cast<double>(T);
    return {entropy / n, max / n, first / n, T > 1 ? previous / (n - 1) : 0.0, diagonal / n};
}

// 1000000 rather than 1e+06.
std::string whole_or_number(double v) {
    return v == std::floor(v) && std::fabs(v) < 1e15 ? std::to_string(static_cast<long long>(v)) : format_number(v);
}

// A tensor's short name: "self_attn.o_proj" -> "o_proj", "wte.weight" -> "wte".
std::string short_name(std::string name) {
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0) name.resize(name.size() - 7);
    const std::size_t dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(dot + 1);
}
// A weight's symbol in formulas: "c_fc" -> "W_fc", "gate_proj" -> "W_gate".
std::string weight_symbol(const std::string& name) {
    std::string s = short_name(name);
    if (s.rfind("c_", 0) == 0) s = s.substr(2);
    if (s.size() > 5 && s.compare(s.size() - 5, 5, "_proj") == 0) s.resize(s.size() - 5);
    return "W_" + s;
}

// The words of a family's parts, from its spec (model/family.hpp): its tensors' names
// (wte, ln_1, c_attn, c_proj; embed_tokens, input_layernorm, q_proj, o_proj), its norm,
// where the norms sit, its activation, and how its math is written.
struct Words {
    const FamilySpec* family = nullptr;
    bool fused = false;  // one fused Q | K | V tensor (c_attn)
    bool pre = true, post = false;  // norms before the sublayers, after them
    std::string embed, norm, norm_1, norm_2, post_attention, post_mlp, out, final_norm, fused_qkv;
    std::string n1, n2;  // the norms in formulas
    std::string t;       // "ᵀ" for Linear's [out, in] weights, "" for x·W
    std::string mlp_hidden_title, mlp_hidden, mlp;
    std::string mlp_experts;  // a layer with a mixture of experts: its output
    std::string scale;  // what the scores are divided by, when not √d_h
};

Words words_of(const DecoderConfig& c, const DecoderWeights* weights = nullptr) {
    const FamilySpec& f = *c.family;
    const TensorNames& n = f.names;
    Words w;
    w.family = &f;
    w.fused = !n.fused_qkv.empty();
    w.pre = f.placement != NormPlacement::post;
    w.post = f.placement != NormPlacement::pre;
    w.embed = short_name(n.embed);
    w.norm = f.norm_words();
    w.norm_1 = n.pre_attention_norm;
    w.norm_2 = n.pre_mlp_norm;
    w.post_attention = n.post_attention_norm;
    w.post_mlp = n.post_mlp_norm;
    w.out = short_name(n.out);
    w.final_norm = n.final_norm;
    w.fused_qkv = short_name(n.fused_qkv);
    w.n1 = f.norm_1_symbol;
    w.n2 = f.norm_2_symbol;
    w.t = f.math_xw ? "" : "ᵀ";
    const bool bias = weights && !weights->blocks.empty() && weights->blocks.front().up.b.size() != 0;
    const std::string act = c.mlp == MlpKind::swiglu ? "SiLU" : c.mlp == MlpKind::geglu_tanh ? "GELU_tanh" : "GELU";
    const std::string in = w.pre ? "m" : "x";  // what the MLP reads: the normed stream, or the stream itself
    if (gated(c.mlp)) {
        w.mlp_hidden_title = "The MLP's hidden layer: " + act + "(" + short_name(n.gate) + ") ⊙ " + short_name(n.up);
        w.mlp_hidden = act + "(" + in + "·" + weight_symbol(n.gate) + w.t + ") ⊙ (" + in + "·" + weight_symbol(n.up) + w.t + ")";
    } else {
        const std::size_t hidden = weights && !weights->blocks.empty() ? weights->blocks.front().up.out() : 4 * c.width;
        w.mlp_hidden_title = "The MLP's hidden layer (" + (hidden == 4 * c.width ? std::string("4C") : std::to_string(hidden)) + "), after " + act;
        w.mlp_hidden = act + "(" + (w.pre ? w.n2 + "(x)" : "x") + "·" + weight_symbol(n.up) + w.t + " + b_" + weight_symbol(n.up).substr(2) + ")";
    }
    w.mlp = "hidden·" + weight_symbol(n.down) + w.t + (bias ? " + b_" + weight_symbol(n.down).substr(2) : "");
    const bool shared = weights && std::any_of(weights->blocks.begin(), weights->blocks.end(), [](const BlockWeights& b) { return b.moe && b.moe->shared; });
    w.mlp_experts = "Σ_(e chosen) weight_e · expert_e(" + in + ")" + (shared ? " + shared(" + in + ")" : "");  // a mixture of experts
    if (c.attention_scale) w.scale = format_number(*c.attention_scale) + " (√" + f.fields.scale + ")";
    const float plain = 1.0f / std::sqrt(static_cast<float>(c.head_size()));
    if (c.latent_scaling && *c.latent_scaling != plain)  // DeepSeek-V3 with YaRN: (d_nope + d_rope)^(−1/2) × mscale²
        w.scale = format_number(1.0f / *c.latent_scaling) + " (√" + std::to_string(c.head_size()) + " ÷ mscale²)";
    return w;
}

// The words of each point of layer L of a block: id, title, formula.
struct PointText {
    std::string id, title, formula;
};
// `experts`: the layer's MLP is a mixture of experts.
PointText point_text(BlockPoint p, const std::string& L, const Words& w, bool experts) {
    const std::string attn = "attn(" + (w.pre ? w.n1 + "(x)" : std::string("x")) + ")", mlp = "mlp(" + (w.pre ? w.n2 + "(x)" : std::string("x")) + ")";
    switch (p) {
        case BlockPoint::norm_1: return {"ln_1", "Layer " + L + ": " + w.norm + " before attention (" + w.norm_1 + ")", w.n1 + "(x)"};
        case BlockPoint::attention: return {"attention", "Layer " + L + ": the attention's output", attn};
        case BlockPoint::attention_norm:
            return {"attention_norm", w.norm + " of the attention's output (" + w.post_attention + ")", "norm(" + attn + ")"};
        case BlockPoint::residual_1:
            return {"residual_1", "Residual: added to the layer's input", "x + " + (w.post ? "norm(" + attn + ")" : attn)};
        case BlockPoint::norm_2: return {"ln_2", w.norm + " before the MLP (" + w.norm_2 + ")", w.n2 + "(x)"};
        case BlockPoint::mlp_hidden: return {"mlp_hidden", w.mlp_hidden_title, w.mlp_hidden};
        case BlockPoint::mlp: return experts ? PointText{"mlp", "The mixture of experts' output", w.mlp_experts} : PointText{"mlp", "The MLP's output", w.mlp};
        case BlockPoint::mlp_norm: return {"mlp_norm", w.norm + " of the MLP's output (" + w.post_mlp + ")", "norm(" + mlp + ")"};
        case BlockPoint::residual_2: return {"residual_2", "Layer " + L + "'s output", "x + " + (w.post ? "norm(" + mlp + ")" : mlp)};
    }
    return {};
}

// The prompt's pass: the embeddings, every layer's points (the layer shown, or every
// layer when all are asked for, in full; the others as summaries), the shown layer's
// attention with mha's ids, and for the view every layer's weights.
class PromptTap : public DecoderTap {
public:
    PromptTap(Recorder& rec, const ModelSpec& spec, const ModelInfo& info, const Model& model, std::size_t T, bool explainable)
        : rec_(rec), spec_(spec), info_(info), model_(model), weights_(model->weights), config_(weights_.config),
          words_(words_of(config_, &weights_)), T_(T), explainable_(explainable) {
        if (spec.view) grid = xt::xtensor<float, 5>::from_shape({1, info.layers, info.heads, T, T});
    }
    xt::xtensor<float, 5> grid;  // (1,L,H,T,T): every layer's weights, for the view
    std::vector<KeptAttention> kept;  // the attentions kept for writing cells out: the shown layer's, and with the view every layer's

    bool keeps_attention(std::size_t layer) const override { return layer == spec_.layer || spec_.view || spec_.rollout; }
    // A summary of the layer shown, every head: its T×T steps are only summed (no view,
    // rollout or cell written out reads them).
    bool summarises_attention(std::size_t layer) const override {
        return layer == spec_.layer && sums_shown_layer(spec_, rec_.summarising(), explainable_);
    }
    std::vector<Mat> head_means;  // with the rollout: each layer's weights averaged over the heads (T×T)

    std::vector<Cube> residuals;  // with the logit lens: the stream entering layer 1, then after every layer

    std::string rope_words() const {
        if (!config_.family->names.linear_attn.empty())
            return "No position embeddings: each full-attention layer rotates its queries and keys by position (RoPE); the Gated DeltaNet layers "
                   "use none, their convolution and state following the tokens' order.";
        return config_.family->names.kv_a.empty()
                   ? "No position embeddings: each layer rotates its queries and keys by position (RoPE)."
                   : "No position embeddings: each layer rotates by position (RoPE) the last qk_rope_head_dim features of each head's query and "
                     "the rotary key all heads share.";
    }

    void embeddings(const Cube& tokens, const Cube* positions, const Cube& x) override {
        if (keeps_cells(0)) stream_ = x;  // the rows entering layer 1
        if (spec_.logit_lens) residuals.push_back(x);
        const std::string& E = words_.embed;
        rec_.add("token_embeddings", "Token embeddings: rows of " + E, E + "[ids]", tokens, tokens_features);
        if (positions) {
            rec_.add("position_embeddings", "Position embeddings: rows 0…T−1 of wpe", "wpe[0:T]", *positions, tokens_features);
            rec_.add("embeddings", "The input of layer 1", "x = wte[ids] + wpe[0:T]", x, tokens_features);
        } else if (config_.embed_scale) {
            rec_.add("embeddings", "The input of layer 1: the embeddings × √C", "x = " + E + "[ids] · " + format_number(*config_.embed_scale), x,
                     tokens_features)
                .note = rope_words();
        } else {
            rec_.add("embeddings", "The input of layer 1", "x = " + E + "[ids]", x, tokens_features).note =
                rope_words();
        }
    }

    // A latent attention layer (MLA): the latent and the shared rotary key, then its heads as attention() records them.
    void latent(std::size_t l, const LatentForward& f) override {
        if (l != spec_.layer) return;
        const LatentWeights& w = *weights_.blocks[l].latent;
        const TensorNames& n = config_.family->names;
        const std::string in = words_.pre ? words_.n1 + "(x)" : "x";
        Step& c = rec_.add("latent_kv", "Layer " + std::to_string(l + 1) + ": the latent c_KV, " + std::to_string(w.rank()) + " numbers per token (" +
                                            short_name(n.kv_a) + ", then " + short_name(n.kv_a_norm) + ")",
                           "c_KV = RMSNorm((" + in + "·W_DKVᵀ)[:r])", f.latent, tokens_features);
        c.note = "Latent attention (MLA): every head's keys and values are made from this one vector per token (" + short_name(n.kv_b) +
                 " up-projects it), so a cache keeps r = " + std::to_string(w.rank()) + " numbers and the " + std::to_string(w.rope) +
                 " of keys_rope per token and layer, where the heads' keys and values would take H·(d_nope + d_rope + d_v) = " +
                 std::to_string(w.heads * (w.qk_head() + w.value)) + ".";
        rec_.add("keys_rope", "The rotary key part, one for every head, after RoPE (" + std::to_string(w.rope) + " features" +
                                  (config_.latent_interleave ? ", pairs interleaved in the weights: rope_interleave" : "") + ")",
                 "k_rope = RoPE((" + in + "·W_DKVᵀ)[r:])", f.k_rope, tokens_features);
    }

    // A Gated DeltaNet layer (Qwen3-Next's linear attention): its inputs, gates, state and outputs.
    void linear(std::size_t l, const GatedDeltaNetForward& f) override {
        if (l != spec_.layer) return;
        const GatedDeltaNetWeights& w = *weights_.blocks[l].linear;
        const std::string in = words_.pre ? words_.n1 + "(x)" : "x", L = std::to_string(l + 1);
        const std::string Hk = std::to_string(w.k_heads), Hv = std::to_string(w.v_heads), K = std::to_string(w.taps());
        rec_.add("queries", "Layer " + L + " (Gated DeltaNet): queries, " + Hk + " heads of " + std::to_string(w.d_k) + ", after a causal convolution of " + K +
                                " taps and SiLU", "q = SiLU(conv(" + in + "·W_qᵀ))", f.q, tokens_features)
            .note = "A linear-attention layer: no softmax and no cache of keys; each head keeps a state of d_k × d_v numbers that the delta rule "
                    "writes token by token (see attnwalk deltanet).";
        rec_.add("keys", "Keys, likewise (L2-normalised inside the delta rule)", "k = SiLU(conv(" + in + "·W_kᵀ))", f.k, tokens_features);
        rec_.add("values", "Values, " + Hv + " heads of " + std::to_string(w.d_v), "v = SiLU(conv(" + in + "·W_vᵀ))", f.v, tokens_features);
        rec_.add_plain("beta", "Each token's write strength per value head", "β = σ(" + in + "·W_bᵀ)", to_trace(Mat(xt::view(f.beta, 0))),
                       {Axis::token, Axis::head});
        rec_.add_plain("decay", "Each token's decay per value head: how much of the state it keeps", "α = exp(−exp(A_log)·softplus(" + in + "·W_aᵀ + dt_bias))",
                       to_trace(Mat(xt::view(f.decay, 0))), {Axis::token, Axis::head});
        // one value head chosen (a head asked for): its matrices; else every head's
        const std::optional<std::size_t> h = spec_.head && *spec_.head < w.v_heads ? spec_.head : std::nullopt;
        const std::string of = h ? "Head " + std::to_string(*h + 1) + "'s " : "Each head's ";
        if (f.effective.size()) {
            const std::string title = h ? "Head " + std::to_string(*h + 1) + "'s effective attention matrix: o = A·V, the delta rule's terms kept"
                                        : "The effective attention matrix of every value head: o = A·V, the delta rule's terms kept";
            rec_.mask_from_here(CellMask{true, 0});  // causal: the keys after a query are no part of it
            if (h) rec_.add("effective_attention", title, "A_h (not a softmax: rows need not sum to 1)", Cube(xt::view(f.effective, xt::all(), *h)), tokens_tokens);
            else rec_.add("effective_attention", title, "A_h (not a softmax: rows need not sum to 1)", f.effective, head_tokens_tokens);
            rec_.mask_from_here(std::nullopt);
        }
        const std::string read = "outputs, read from its state: o_t = S_tᵀq̂_t";
        Step& ho = h ? rec_.add("head_outputs", of + read, "o_h", Cube(xt::view(f.outputs, xt::all(), *h)), tokens_features)
                     : rec_.add("head_outputs", of + read, "o_h", f.outputs, head_tokens_features);
        ho.note = "q̂ and k̂ are q and k L2-normalised, q̂ also × 1/√d_k = 1/√" + std::to_string(w.d_k) + "; value head h reads key head ⌈h / " +
                  std::to_string(w.v_heads / w.k_heads) + "⌉ (both counted from 1)" +
                  (h ? ": head " + std::to_string(*h + 1) + " reads key head " + std::to_string(*h / (w.v_heads / w.k_heads) + 1) : std::string()) + ".";
        Step& st = h ? rec_.add_plain("state", of + "state after the last token: all this layer keeps, whatever the length", "S_h (d_k × d_v)",
                                      to_trace(Mat(xt::view(f.state, 0, *h))), {Axis::feature, Axis::feature})
                     : rec_.add_plain("state", of + "state after the last token: all this layer keeps, whatever the length", "S_h (d_k × d_v)",
                                      to_trace(Cube(xt::view(f.state, 0))), {Axis::head, Axis::feature, Axis::feature});
        st.note = std::to_string(w.v_heads) + " heads × " + std::to_string(w.d_k) + " × " + std::to_string(w.d_v) + " = " +
                  std::to_string(w.v_heads * w.d_k * w.d_v) + " numbers, and the last " + std::to_string(w.taps() - 1) +
                  " inputs of the convolution: a fixed size, where a KV cache grows with every token.";
        rec_.add("gate", "The output gate z, per value head", "z = " + in + "·W_zᵀ", f.z, tokens_features);
        rec_.add("outputs_normed", "The outputs through the gated RMSNorm (its weight as it is, not 1 + w)", "RMSNorm(o_h)·w ⊙ SiLU(z_h)", f.normed,
                 tokens_features);
        rec_.add("output", "The layer's output: out_proj", "outputs_normed·W_outᵀ", f.output, tokens_features);
    }

    void attention(std::size_t l, const Forward& f) override {
        if (spec_.view) xt::view(grid, 0, l) = xt::view(f.weights, 0);
        if (spec_.rollout) {  // weights.mean(dim=heads), in float32 in the heads' order
            Mat mean = Mat::from_shape({T_, T_});
            mean.fill(0.0f);
            const std::size_t H = f.weights.shape(1);
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t i = 0; i < T_ * T_; ++i) mean.data()[i] += f.weights(0, h, i / T_, i % T_);
            for (float& v : mean) v /= static_cast<float>(H);
            head_means.push_back(std::move(mean));
        }
        if (f.scores.size() && keeps_cells(l)) keep(l, f);
        if (l != spec_.layer) return;
        const BlockWeights& bw = weights_.blocks[l];
        const std::string in = words_.pre ? words_.n1 + "(x)" : "x", t = words_.t;
        const auto bias = [&](const Linear& lin, const char* name) { return lin.b.size() != 0 ? std::string(" + b_") + name : std::string(); };
        const std::string qf = "Q = " + in + "·W_q" + t + bias(bw.attn.query, "q"), kf = "K = " + in + "·W_k" + t + bias(bw.attn.key, "k"),
                          vf = "V = " + in + "·W_v" + t + bias(bw.attn.value, "v");
        const LayerAttention& la = config_.layer_attention[l];
        if (bw.latent) {  // MLA: each head's query and key are [nope | rope], its value from the latent
            const LatentWeights& lw = *bw.latent;
            const std::string H = std::to_string(f.heads), nope = std::to_string(lw.nope), rope = std::to_string(lw.rope);
            const std::string qsrc = lw.q_a_proj ? "RMSNorm(" + in + "·W_qaᵀ)·W_qbᵀ" : in + "·W_qᵀ";
            rec_.add("queries", "Layer " + std::to_string(l + 1) + ": queries, " + H + " heads of " + nope + " + " + rope + " (the last " + rope +
                                    " turn with RoPE)" + (lw.q_a_proj ? ", through a query latent of " + std::to_string(lw.query_rank()) : ""),
                     "Q = " + qsrc, f.q, tokens_features);
            rec_.add("keys", "Keys: per head [k_nope from c_KV·W_UKᵀ | the shared k_rope]", "K_h = [c_KV·W_UK,hᵀ | k_rope]", f.k, tokens_features);
            rec_.add("values", "Values: per head c_KV·W_UV,hᵀ (" + std::to_string(lw.value) + " features)", "V_h = c_KV·W_UV,hᵀ", f.v, tokens_features);
            rec_.add("queries_rotated", "Each head's query after RoPE on its last " + rope + " features" +
                                            (config_.latent_interleave ? " (their pairs de-interleaved first, as keys_rope's)" : ""),
                     "Q_h = [q_nope | RoPE(q_rope)]", f.qh, head_tokens_features)
                .note = "The scores are these rows times the keys: ω_h = Q_h·K_hᵀ = q_nope·k_nopeᵀ + q_rope·k_ropeᵀ.";
        } else if (words_.fused) {
            rec_.add("queries", "Layer " + std::to_string(l + 1) + ": queries (columns 0…C−1 of " + words_.fused_qkv + ")", qf, f.q, tokens_features);
            rec_.add("keys", "Keys (columns C…2C−1 of " + words_.fused_qkv + ")", kf, f.k, tokens_features);
            rec_.add("values", "Values (columns 2C…3C−1 of " + words_.fused_qkv + ")", vf, f.v, tokens_features);
        } else {
            const TensorNames& n = config_.family->names;
            const std::string H = std::to_string(f.heads), G = std::to_string(f.kv_heads), d = std::to_string(f.d_h);
            Step& q = rec_.add("queries", "Layer " + std::to_string(l + 1) + ": queries (" + short_name(n.query) + ": " + H + " heads of " + d + ")", qf, f.q,
                               tokens_features);
            if (config_.positions == PositionKind::rope && !la.rope)
                q.note = "This layer applies no RoPE (" + config_.family->fields.no_rope_layers +
                         "): its queries and keys are not rotated, so its scores see no positions; the causal mask alone orders the tokens.";
            Step& k = rec_.add("keys", "Keys (" + short_name(n.key) + ": " + G + " key/value head" + (f.kv_heads == 1 ? "" : "s") + " of " + d + ")", kf,
                               f.k, tokens_features);
            if (f.kv_heads < f.heads)
                k.note = "Grouped-query attention: " + G + " key/value head" + (f.kv_heads == 1 ? "" : "s") + " for " + H + " query heads; query head h reads key/value head ⌈h / " +
                         std::to_string(f.heads / f.kv_heads) + "⌉ (both counted from 1).";
            rec_.add("values", "Values (" + short_name(n.value) + ")", vf, f.v, tokens_features);
            // One head chosen: the per-head steps show that head and the key/value head it reads.
            const std::optional<std::size_t> qh = spec_.head;
            const std::optional<std::size_t> kh = spec_.head ? std::optional<std::size_t>(*spec_.head / (f.heads / f.kv_heads)) : std::nullopt;
            const auto heads_or_one = [&](const std::string& id, const std::string& title, const std::string& formula, const Hyper& tensor,
                                          const std::optional<std::size_t>& h) {
                if (h) rec_.add(id, title, formula, Cube(xt::view(tensor, xt::all(), *h)), tokens_features);
                else rec_.add(id, title, formula, tensor, head_tokens_features);
            };
            const std::string q_of = qh ? "head " + std::to_string(*qh + 1) + "'s queries" : "each head's queries";
            const std::string k_of = kh ? "key head " + std::to_string(*kh + 1) + "'s keys" : "each key head's keys";
            const std::string q_sub = qh ? std::to_string(*qh + 1) : "h", k_sub = kh ? std::to_string(*kh + 1) : "g";
            if (f.qk_normed) {
                const Hyper& qn = f.rope ? f.qh_plain : f.qh;
                const Hyper& kn = f.rope ? f.kh_plain : f.kh;
                if (bw.attn.qk_norm_whole) {
                    heads_or_one("queries_normed", "QK-norm: " + words_.norm + " over all the queries at once (" + short_name(n.q_norm) + ", H·d_h = " +
                                                       std::to_string(f.heads * f.d_h) + " features), then split into heads" +
                                                       (qh ? ": head " + q_sub : ""),
                                 qh ? "q_norm(Q)_" + q_sub : "q_norm(Q) split into heads", qn, qh);
                    heads_or_one("keys_normed", "And over all the keys (" + short_name(n.k_norm) + ", G·d_h = " + std::to_string(f.kv_heads * f.d_h) + ")" +
                                                    (kh ? ": key head " + k_sub : ""),
                                 kh ? "k_norm(K)_" + k_sub : "k_norm(K) split into heads", kn, kh);
                } else {
                    heads_or_one("queries_normed", "QK-norm: " + words_.norm + " of " + q_of + " (" + short_name(n.q_norm) + ")", "q_norm(Q_" + q_sub + ")",
                                 qn, qh);
                    heads_or_one("keys_normed", "And of " + k_of + " (" + short_name(n.k_norm) + ")", "k_norm(K_" + k_sub + ")", kn, kh);
                }
            }
            if (f.rope) {
                const std::size_t rotated = f.rope->dims();
                Step& a = rec_.add_plain("rope_angles", "RoPE: the angles, position × θ_i (base " + whole_or_number(la.rope->base) + ")",
                                   "φ_p,i = p·θ_(i mod " + std::string(rotated == f.d_h ? "d_h" : "r") + "/2)", to_trace(f.rope->angles), tokens_features);
                a.note = "Hugging Face's layout (rotate_half): feature i is rotated with feature i + " + std::to_string(rotated / 2) +
                         ", as the checkpoints store " + short_name(n.query) + " and " + short_name(n.key) + ".";
                if (rotated < f.d_h)
                    a.note += " Partial rotary: only the first r = " + std::to_string(rotated) + " of the " + std::to_string(f.d_h) +
                              " features of a head turn; the others pass unchanged.";
                const RopeScaling& sc = la.rope->scaling;
                if (sc.kind == RopeScaling::Kind::llama3)
                    a.note += " The frequencies are rescaled as Llama 3.1 does (rope_scaling llama3, factor " + format_number(sc.factor) + ").";
                else if (sc.kind == RopeScaling::Kind::linear)
                    a.note += " The frequencies are divided by " + format_number(sc.factor) + " (rope_scaling linear).";
                else if (sc.kind == RopeScaling::Kind::yarn)
                    a.note += " YaRN (rope_scaling yarn, factor " + format_number(sc.factor) + "): the low frequencies are divided by the factor, the high ones kept, "
                              "blended in between; cos and sin are multiplied by the attention factor " + format_number(f.rope->attention_scaling) + ".";
                if (la.window && config_.layer_attention.size() > l && std::any_of(config_.layer_attention.begin(), config_.layer_attention.end(), [](const LayerAttention& o) { return !o.window; }))
                    a.note += " A sliding-window layer: its RoPE is " + std::string(sc.kind == RopeScaling::Kind::none ? "not rescaled" : "rescaled too") + ".";
                heads_or_one("queries_rotated", qh ? "Head " + q_sub + "'s queries after RoPE" : "The queries after RoPE",
                             "Q_" + q_sub + "·cos + rotate_half(Q_" + q_sub + ")·sin", f.qh, qh);
                heads_or_one("keys_rotated", kh ? "Key head " + k_sub + "'s keys after RoPE" : "The keys after RoPE",
                             "K_" + k_sub + "·cos + rotate_half(K_" + k_sub + ")·sin", f.kh, kh);
            }
        }
        const std::string Hs = std::to_string(info_.heads), dh = std::to_string(f.d_h);
        const std::string kind = "Layer " + std::to_string(l + 1) + ": " +
                                 (f.window ? "sliding-window attention weights (W = " + std::to_string(f.window) + ")" : "causal attention weights");
        const std::string group = f.kv_heads < f.heads ? "_⌈h/" + std::to_string(f.heads / f.kv_heads) + "⌉" : "_h";
        const bool sinks = f.sinks.size() > 0;  // gpt-oss: a learned logit per head joins each row's softmax
        const std::string formula = sinks ? "A_h = softmax([masked ω_h / " + (words_.scale.empty() ? "√" + dh : words_.scale) + ", sink_h])[:T]"
                                          : "A_h = softmax(masked ω_h / " + (words_.scale.empty() ? "√" + dh : words_.scale) + ")";
        const std::string sink_note = "Learned sinks (" + config_.family->names.sinks +
                                      "): each head's sink logit joins every row as one more column before the softmax and is dropped after, so "
                                      "a row's weights sum to 1 minus the sink's share (sink_share).";
        if (spec_.head) {  // one head: its T×T matrices
            const std::size_t h = *spec_.head;
            const std::string of = " of head " + std::to_string(h + 1);
            rec_.add("scores", "Scores" + of, "ω_" + std::to_string(h + 1) + " = Q_h·K" + group + "ᵀ", Cube(xt::view(f.scores, xt::all(), h)),
                     tokens_tokens);
            rec_.mask_from_here(CellMask{true, f.window});
            Step& w = rec_.add_with_row_sums("weights", kind + of + " (one of " + Hs + " heads of " + dh + ")", formula,
                                             Cube(xt::view(f.weights, xt::all(), h)), tokens_tokens);
            rec_.mask_from_here(std::nullopt);
            if (sinks) {
                w.note = sink_note;
                rec_.add("sink_share", "The sink's share of every row" + of, "1 − Σ_j A_h,ij", Mat(xt::view(f.sink_share, xt::all(), h, xt::all())), {Axis::token});
            }
            rec_.add("head_outputs", "Its context vectors", "Z_h = A_h·V" + group, Cube(xt::view(f.head_outputs, xt::all(), h)), tokens_features);
        } else {
            const std::string weights_title = kind + " of every head (" + Hs + " heads of " + dh + ")";
            const std::string scores_title = "Scores of every head", scores_formula = "ω_h = Q_h·K" + group + "ᵀ";
            if (f.square_summarised) {  // only their statistics were made
                const std::vector<std::size_t> square = {f.heads, f.rows, f.kh.shape(2)};
                rec_.add_summary("scores", scores_title, scores_formula, square, f.qh.shape(0), head_tokens_tokens, f.scores_stats);
                rec_.mask_from_here(CellMask{true, f.window});
                rec_.add_summary("weights", weights_title, formula, square, f.qh.shape(0), head_tokens_tokens, f.weights_stats);
            } else {  // a summary: summed where they are
                rec_.add("scores", scores_title, scores_formula, f.scores, head_tokens_tokens);
                rec_.mask_from_here(CellMask{true, f.window});
                rec_.add_with_row_sums("weights", weights_title, formula, f.weights, head_tokens_tokens);
            }
            rec_.mask_from_here(std::nullopt);
            if (sinks) {
                rec_.trace().steps.back().note = sink_note;
                if (f.sink_share.size()) rec_.add("sink_share", "The sinks' share of every row", "1 − Σ_j A_h,ij", f.sink_share, {Axis::head, Axis::token});
            }
            rec_.add("head_outputs", "Each head's context vectors", "Z_h = A_h·V" + group, f.head_outputs, head_tokens_features);
        }
        rec_.add("context", "Heads concatenated", "Z", f.context, tokens_features);
        if (f.gate.size()) {  // gated attention (Qwen3-Next): Z ⊙ σ(G) before o_proj
            rec_.add("gate", "The output gate: the second half of each head's " + short_name(config_.family->names.query) + " rows", "G = " +
                                 (words_.pre ? words_.n1 + "(x)" : std::string("x")) + "·W_gateᵀ", f.gate, tokens_features);
            rec_.add("gated", "The context through the gate", "Z ⊙ σ(G)", f.gated, tokens_features);
        }
        rec_.add("output", "The attention's output: " + words_.out, std::string(f.gate.size() ? "(Z ⊙ σ(G))" : "Z") + "·W_o" + words_.t +
                                                                        bias(bw.latent ? bw.latent->o_proj : bw.attn.out_proj.value(), "o"),
                 f.output, tokens_features);
    }

    std::vector<std::vector<std::size_t>> chosen_by_layer;  // with the view: each layer's chosen experts (T·k)

    void experts(std::size_t l, const MoeOutput& r) override {
        if (spec_.view) {
            chosen_by_layer.resize(config_.layers);
            chosen_by_layer[l] = r.chosen;
        }
        if (l != spec_.layer && !spec_.all_layers) return;
        const std::string L = "layer" + std::to_string(l + 1) + ".", Ls = std::to_string(l + 1);
        const std::size_t E = r.logits.shape(1), k = r.weights.shape(1), T = r.logits.shape(0);
        const MoeWeights& moe = *weights_.blocks[l].moe;
        const bool sigmoid = moe.routing == RouterKind::sigmoid_grouped, all = moe.routing == RouterKind::softmax_all;
        std::vector<std::string> names;  // a copy: a step's reference does not outlive the next step added
        for (std::size_t e = 0; e < E; ++e) names.push_back("expert " + std::to_string(e));
        rec_.add_plain(L + "router_logits", "Layer " + Ls + ": the router's logit for each of the " + std::to_string(E) + " experts",
                       "r = " + words_.n2 + "(x)·W_rᵀ" + (moe.router.b.size() ? " + b_r" : ""), to_trace(r.logits), {Axis::token, Axis::feature})
            .labels = names;
        if (sigmoid) {
            Step& sc = rec_.add_plain(L + "router_scores", "Their scores: each logit through a sigmoid, on its own", "s = σ(r)", to_trace(r.scores),
                                      {Axis::token, Axis::feature});
            sc.labels = names;
            sc.note = "The experts are chosen by s + the correction bias (e_score_correction_bias): the " + std::to_string(moe.top_groups) + " of " +
                      std::to_string(moe.groups) + " groups whose two best choices sum highest keep theirs, the others' count 0 (Hugging Face's "
                      "masked_fill; DeepSeek's own code puts −∞, which differs only where a choice is below 0); the bias chooses, it never weighs.";
        } else if (all) {
            rec_.add_plain(L + "router_scores", "Their probabilities: a softmax over every expert", "p = softmax(r)", to_trace(r.scores), {Axis::token, Axis::feature})
                .labels = names;
        }
        std::vector<unsigned long long> chosen(r.chosen.begin(), r.chosen.end());
        Step& ch = rec_.add_plain(L + "experts_chosen", "The " + std::to_string(k) + " experts each token goes to (" +
                                                            (sigmoid ? "largest s + bias first" : all ? "most probable first" : "largest logit first") + ")",
                                  sigmoid ? "top_k(group_mask(s + b_corr), " + std::to_string(k) + ")"
                                          : (all ? "top_k(p, " : "top_k(r, ") + std::to_string(k) + ")",
                                  integer_tensor(chosen, {T, k}), {Axis::token, Axis::rank});
        ch.note = "A mixture of experts: each token runs through only " + std::to_string(k) + " of the " + std::to_string(E) +
                  " experts' MLPs; the rest of the layer's weights sit idle for it. Experts are numbered from 0, as the router's outputs are.";
        const std::string shared_words = !moe.shared ? "" : moe.shared->scale ? ", plus the shared expert's scaled by its gate" : ", plus the shared expert's";
        if (sigmoid || all) {
            const std::string title = sigmoid ? "Their weights: the chosen scores" + std::string(moe.normalise ? " over their sum" : "") + ", × " +
                                                    format_number(moe.routed_scale) + " (routed_scaling_factor)"
                                              : "Their weights: the chosen probabilities" + std::string(moe.normalise ? " over their sum (norm_topk_prob)" : "");
            const std::string v = sigmoid ? "s" : "p";
            const std::string formula = (moe.normalise ? v + "[top_k] / Σ " + v + "[top_k]" : v + "[top_k]") + (sigmoid ? " · " + format_number(moe.routed_scale) : "");
            rec_.add_plain(L + "expert_weights", title, formula, to_trace(r.weights), {Axis::token, Axis::rank}).note =
                "The MLP's output is Σ weight·expert(x) over the chosen experts" + shared_words + "; each expert is a SwiGLU of its own, down(SiLU(gate(x)) ⊙ up(x)).";
            if (moe.shared)
                rec_.add(L + "shared_expert",
                         moe.shared->scale ? "The shared expert: a SwiGLU MLP every token goes through, scaled by σ(x·w_g)" : "The shared expert: a SwiGLU MLP every token goes through",
                         moe.shared->scale ? "σ(x·w_g) · down(SiLU(gate(x)) ⊙ up(x))" : "shared(x) = down(SiLU(gate(x)) ⊙ up(x))", r.shared, tokens_features);
        } else {
            rec_.add_plain(L + "expert_weights", "Their weights: a softmax over the chosen logits only", "softmax(r[top_k])", to_trace(r.weights),
                           {Axis::token, Axis::rank})
                .note = "The MLP's output is Σ weight·expert(x) over the chosen experts; each expert is a SwiGLU whose gate is clamped at " +
                        format_number(moe.limit) + " (and its up at ±" + format_number(moe.limit) + ").";
        }
    }

    void block(std::size_t l, BlockPoint p, const Cube& t) override {
        if (p == BlockPoint::norm_1 && keeps_cells(l)) normed_ = t;
        if (p == BlockPoint::residual_2) {
            if (l + 1 < config_.layers && keeps_cells(l + 1)) stream_ = t;  // the rows entering the next layer
            else stream_ = Cube();
            normed_ = Cube();
        }
        if (p == BlockPoint::residual_2 && spec_.logit_lens) residuals.push_back(t);
        const PointText text = point_text(p, std::to_string(l + 1), words_, weights_.blocks[l].moe.has_value());
        const std::string id = "layer" + std::to_string(l + 1) + "." + text.id;
        if (l == spec_.layer || spec_.all_layers) rec_.add(id, text.title, text.formula, t, tokens_features);
        else rec_.add_summary(id, text.title, text.formula, {T_, t.shape(2)}, 1, tokens_features, summary_of(t), false);
    }

private:
    // Whether layer l's attention is kept for writing its cells out (then the rows entering
    // it and their norm are kept too: copies of T×C each, made only then).
    bool keeps_cells(std::size_t l) const { return l == spec_.layer ? explainable_ || spec_.explain : explainable_ && spec_.view; }

    // Layer l's attention as the explanation engine reads it: what entered the layer, its
    // norm, the weights (kept alive by the model), the forward.
    void keep(std::size_t l, const Forward& f) {
        const FamilySpec& fam = *config_.family;
        const BlockWeights& b = weights_.blocks[l];
        if (b.latent) return;  // latent attention's cells are not written out (yet): its query, key and value come from other weights
        const LayerAttention& la = config_.layer_attention[l];
        KeptAttention k;
        k.f = f;
        k.x = b.norm_1 ? normed_ : stream_;
        k.weights = std::shared_ptr<const AttentionWeights>(model_, &b.attn);
        k.scale.value = f.scale;
        k.scale.symbol = words_.scale.empty() ? "√d_h" : words_.scale;
        k.scale.words = words_.scale.empty() ? "√d_h = √" + std::to_string(f.d_h) : words_.scale;
        LayerSource L;
        L.layer = l;
        L.stream = stream_;
        L.norm = b.norm_1;
        L.norm_kind = config_.norm;
        L.eps = config_.norm_eps;
        L.norm_words = fam.norm_words();
        L.norm_name = fam.names.pre_attention_norm;
        L.norm_adds_one = fam.norm_adds_one;
        L.layer_has_rope = config_.positions != PositionKind::rope || la.rope.has_value();
        if (la.rope && la.window) L.rope_words = "A sliding-window layer (W = " + std::to_string(*la.window) + "): RoPE base " + whole_or_number(la.rope->base) + ".";
        L.q_name = words_.fused ? words_.fused_qkv : short_name(fam.names.query);
        L.k_name = words_.fused ? words_.fused_qkv : short_name(fam.names.key);
        k.layer = std::move(L);
        kept.push_back(std::move(k));
    }

    Recorder& rec_;
    const ModelSpec& spec_;
    const ModelInfo& info_;
    const Model& model_;
    const DecoderWeights& weights_;
    const DecoderConfig& config_;
    Words words_;
    std::size_t T_;
    bool explainable_;
    Cube stream_, normed_;  // the rows entering the current layer, and after its norm
};

// One generated token's pass: the shown layer's cache and its new row of attention.
class StepTap : public DecoderTap {
public:
    StepTap(Recorder& rec, const ModelSpec& spec, const DecoderConfig& config, std::size_t position, const std::string& token, const DecoderCache& cache)
        : rec_(rec), spec_(spec), formula_("α_t = softmax(q_t·K_cacheᵀ / " + (words_of(config).scale.empty() ? "√d_h" : words_of(config).scale) + ")"), position_(position), token_(token),
          cache_(cache) {}

    // The shown layer's new row of attention is read (attention()); the other layers' is not.
    bool keeps_attention(std::size_t layer) const override { return layer == spec_.layer; }

    // Latent attention: what its cache keeps is the latent and the rotary key, not every head's keys.
    void latent(std::size_t l, const LatentForward& f) override {
        if (l != spec_.layer) return;
        latent_ = true;
        const std::size_t S = f.latent.shape(1), r = f.latent.shape(2), rope = f.k_rope.shape(2);
        Cube kept = Cube::from_shape({1, S, r + rope});
        for (std::size_t s = 0; s < S; ++s) {
            for (std::size_t i = 0; i < r; ++i) kept(0, s, i) = f.latent(0, s, i);
            for (std::size_t i = 0; i < rope; ++i) kept(0, s, r + i) = f.k_rope(0, s, i);
        }
        rec_.add("step" + std::to_string(position_ + 1) + ".keys_cache",
                 "Token " + std::to_string(position_ + 1) + " (\"" + token_ + "\"): layer " + std::to_string(l + 1) + "'s latent cache, one row longer: c_KV (" +
                     std::to_string(r) + ") then k_rope (" + std::to_string(rope) + ")",
                 "cache = concat(cache, [c_KV,t | k_rope,t])", kept, tokens_features)
            .note = "Every head's keys and values are made from these rows again at each step (kv_b_proj).";
    }

    void attention(std::size_t l, const Forward& f) override {
        if (l != spec_.layer) return;
        const std::string N = "step" + std::to_string(position_ + 1) + ".", L = std::to_string(l + 1);
        const bool streaming = cache_.layers.at(l).streaming();  // StreamingLLM: the row over the tokens kept, named by them
        const std::size_t first = position_ + 1 - f.kh.shape(2);  // the oldest token kept (0 but on a sliding layer)
        if (!streaming && !latent_) {
            const std::string grown = f.window ? ", the last " + std::to_string(f.window) + " kept (sliding window)" : ", one row longer";
            rec_.add(N + "keys_cache", "Token " + std::to_string(position_ + 1) + " (\"" + token_ + "\"): layer " + L + "'s key cache" + grown,
                     "K_cache = concat(K_cache, k_t)", f.kh, head_tokens_features)
                .first_row = first;
        }
        const std::string title = "Its new row of attention in layer " + L + (spec_.head ? ", head " + std::to_string(*spec_.head + 1) : "") +
                                  (streaming ? ", over the tokens the cache kept" : "");
        const Cube rows = xt::view(f.weights, xt::all(), xt::all(), 0, xt::all());
        Step& w = spec_.head ? rec_.add_with_row_sums(N + "weights", title, formula_, Mat(xt::view(rows, xt::all(), *spec_.head)), {Axis::token})
                             : rec_.add_with_row_sums(N + "weights", title, formula_, rows, {Axis::head, Axis::token});
        w.query = position_;
        if (!streaming) {
            w.first_key = first;
            return;
        }
        const std::vector<std::size_t> kept = cache_.layers[l].positions();
        for (std::size_t p : kept) w.labels.push_back(p < rec_.trace().tokens.size() ? rec_.trace().tokens[p] : "#" + std::to_string(p));
        if (!kept.empty() && (kept.front() != 0 || kept.back() + 1 - kept.front() != kept.size()))
            w.note = "The cache keeps " + std::to_string(kept.size()) + " of the " + std::to_string(position_ + 1) +
                     " tokens: the first ones and the most recent. Each key was rotated at its index in the cache, 0 … " + std::to_string(kept.size() - 1) +
                     ", and the query at the last, not at the tokens' own positions.";
    }

private:
    Recorder& rec_;
    const ModelSpec& spec_;
    std::string formula_;
    std::size_t position_;
    const std::string& token_;
    const DecoderCache& cache_;
    bool latent_ = false;  // the layer shown is latent attention: its cache was recorded by latent()
};

// Every layer by the one forward with its T×T tensors (never the blocked path): the
// reference the cached generation is checked against.
class FullAttention : public DecoderTap {
public:
    bool keeps_attention(std::size_t) const override { return true; }
};

void record_view(Recorder& rec, const ModelSpec& spec, const ModelInfo& info, const DecoderConfig& config, const xt::xtensor<float, 5>& grid,
                 std::size_t T) {
    const auto& stat_names = head_stat_names();
    const std::size_t L = info.layers, H = info.heads;
    rec.mask_from_here(CellMask{});
    Step& g = rec.add("attention_grid", "Every head of every layer", "A[layer, head]", grid, {Axis::layer, Axis::head, Axis::token, Axis::token});
    g.heads_grid = true;
    rec.mask_from_here(std::nullopt);
    std::string sliding, global;  // Gemma 3: local (sliding-window) and global layers
    std::size_t window = 0;
    for (std::size_t l = 0; l < L && l < config.layer_attention.size(); ++l) {
        std::string& list = config.layer_attention[l].window ? sliding : global;
        list += (list.empty() ? "" : ", ") + std::to_string(l + 1);
        window = config.layer_attention[l].window.value_or(window);
    }
    if (!sliding.empty())
        g.note = "Sliding-window layers (each token sees the last " + std::to_string(window) + "): " + sliding + "; global layers: " +
                 (global.empty() ? "none" : global) + ".";
    std::vector<Cube> stats(stat_names.size(), Cube::from_shape({1, L, H}));
    for (std::size_t l = 0; l < L; ++l)
        for (std::size_t h = 0; h < H; ++h) {
            const auto v = head_stats(&grid(0, l, h, 0, 0), T);
            for (std::size_t k = 0; k < v.size(); ++k) stats[k](0, l, h) = static_cast<float>(v[k]);
        }
    const char* titles[] = {"Entropy of each head's rows (nats; low = focused)", "Largest weight of each row, averaged",
                            "Weight on the first token (the attention sink)", "Weight on the previous token", "Weight on the token itself"};
    const char* formulas[] = {"mean_i −Σ_j a_ij·ln a_ij", "mean_i max_j a_ij", "mean_i a_i,1", "mean_(i≥2) a_i,i−1", "mean_i a_ii"};
    for (std::size_t k = 0; k < stat_names.size(); ++k)
        rec.add("head_" + stat_names[k], titles[k], formulas[k], stats[k], {Axis::layer, Axis::head});
    // The emergent sink by depth: token 0's own row has nowhere else to look, so the rows from 1 on
    if (T > 1) {
        Mat depth = Mat::from_shape({1, L});
        // what rows spread evenly over the keys each sees would give the first token: 1/(i + 1) from row i (from 0),
        // 0 once a sliding window has left it behind
        const auto even = [&](std::size_t l) {
            const std::size_t W = l < config.layer_attention.size() ? config.layer_attention[l].window.value_or(0) : 0;
            double u = 0.0;
            for (std::size_t i = 1; i < T; ++i)
                if (!W || i < W) u += 1.0 / static_cast<double>(i + 1);
            return u / static_cast<double>(T - 1);
        };
        std::string sinks;  // the layers whose later tokens give token 0 half their weight, and twice what even rows would
        for (std::size_t l = 0; l < L; ++l) {
            double sum = 0.0;
            for (std::size_t h = 0; h < H; ++h)
                for (std::size_t i = 1; i < T; ++i) sum += grid(0, l, h, i, 0);
            depth(0, l) = static_cast<float>(sum / static_cast<double>(H * (T - 1)));
            if (depth(0, l) >= std::max(0.5, 2.0 * even(l))) sinks += (sinks.empty() ? "" : ", ") + std::to_string(l + 1);
        }
        Step& d = rec.add("sink_by_depth", "The attention sink by depth: weight on the first token from the later ones", "mean_h mean_(i≥2) a_i,1",
                          depth, {Axis::layer});
        const std::string baseline = "twice what rows spread evenly over the keys they see would give it (" + format_number(even(L - 1)) +
                                     " in layer " + std::to_string(L) + ")";
        d.note = !sinks.empty() ? "In layer" + std::string(sinks.find(',') == std::string::npos ? " " : "s ") + sinks +
                                      " the later tokens give the first token half their weight or more, and at least " + baseline +
                                      ": it has become a sink, a place to put weight a head does not need elsewhere."
                                : "No layer's later tokens give the first token half their weight and " + baseline + ".";
    }
    if (spec.sort.empty()) return;
    const std::size_t key = static_cast<std::size_t>(std::find(stat_names.begin(), stat_names.end(), spec.sort) - stat_names.begin());
    std::vector<std::pair<std::size_t, std::size_t>> order;
    for (std::size_t l = 0; l < L; ++l)
        for (std::size_t h = 0; h < H; ++h) order.emplace_back(l, h);
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
        return stats[key](0, a.first, a.second) > stats[key](0, b.first, b.second);
    });
    Mat table = Mat::from_shape({order.size(), 2 + stat_names.size()});
    for (std::size_t r = 0; r < order.size(); ++r) {
        table(r, 0) = static_cast<float>(order[r].first + 1);  // layer and head as the text counts them, from 1
        table(r, 1) = static_cast<float>(order[r].second + 1);
        for (std::size_t k = 0; k < stat_names.size(); ++k) table(r, 2 + k) = stats[k](0, order[r].first, order[r].second);
    }
    Step& st = rec.add_plain("heads_sorted", "The heads ranked by " + spec.sort + ", highest first", "sort by " + spec.sort, to_trace(table),
                             {Axis::rank, Axis::feature});
    st.tensor.integer_columns = 2;
    st.labels = {"layer", "head"};
    st.labels.insert(st.labels.end(), stat_names.begin(), stat_names.end());
    rec.trace().set_param("sort", spec.sort);
}

// The next token's candidates from the last logits: their summary, the top k with their
// logits and probabilities (softmax at the temperature), the top-p cut in a note.
void record_candidates(Recorder& rec, const ModelSpec& spec, const Mat& logits, const DecoderConfig& config) {
    const std::size_t V = logits.shape(1);
    const Words words = words_of(config);
    const std::string head = config.tied_head ? words.embed : short_name(config.family->names.head);  // the token embeddings, or the file's own head
    const Summary ls = summary_of(logits);
    rec.add_summary("logits", "The logits of the next token (last position × " + head + "ᵀ)", "logits = " + words.final_norm + "(x)_T·" + head + "ᵀ", {V}, 1,
                    {Axis::feature}, ls, false);
    const std::vector<double> p = token_probabilities(logits.data(), V, spec.temperature);
    const std::vector<std::size_t> order = top_k(p, spec.top_k);
    const std::size_t k = order.size();
    Mat top_logits = Mat::from_shape({1, k}), top_p = Mat::from_shape({1, k});
    for (std::size_t i = 0; i < k; ++i) {
        top_logits(0, i) = logits(0, order[i]);
        top_p(0, i) = static_cast<float>(p[order[i]]);
    }
    const std::vector<std::string> names = token_labels(order, spec.tokenizer);  // the candidates' text names the columns
    rec.add_plain("top_k_ids", "The " + std::to_string(k) + " most likely next tokens", "argsort(p)[:k]",
                  integer_tensor({order.begin(), order.end()}, {k}), {Axis::feature})
        .labels = names;
    rec.add("top_k_logits", "Their logits", "logits[top_k_ids]", top_logits, {Axis::feature}).labels = names;
    Step& ps = rec.add("top_k_probs", "Their probabilities", "p = softmax(logits / " + format_number(spec.temperature) + ")", top_p,
                       {Axis::feature});
    ps.labels = names;
    if (spec.top_p) {
        const Nucleus n = nucleus(p, order, *spec.top_p);
        ps.note = "top-p " + format_number(*spec.top_p) + ": the first " + std::to_string(n.count) + " of these (probability " +
                  format_number(n.mass) + (n.mass < *spec.top_p ? ", more than top-k shows" : "") + ") are kept for sampling.";
    }
}

// The logit lens (nostalgebraist; TransformerLens's accumulated_resid(apply_ln=True) with
// the final norm recomputed for each row): every residual stream through the final norm
// and the unembedding, per position the top token, its probability, and the rank there of
// the model's own final prediction.
void record_logit_lens(Recorder& rec, const ModelSpec& spec, const DecoderWeights& w, const std::vector<Cube>& residuals) {
    const DecoderConfig& c = w.config;
    const std::size_t K = residuals.size(), T = residuals.front().shape(1);
    std::vector<ull> top(T * K), rank(T * K);  // (T, K): a row per position, a column per depth
    Mat prob = Mat::from_shape({T, K});
    std::vector<std::size_t> final_top(T);
    for (std::size_t k = K; k-- > 0;) {  // the last first: its top tokens are the model's predictions
        const Cube normed = normalise(residuals[k], w.final_norm, c.norm, c.norm_eps);
        const Cube logits = project(normed, w.output_head());  // (1,T,V)
        const std::size_t V = logits.shape(2);
        for (std::size_t t = 0; t < T; ++t) {
            const float* row = &logits(0, t, 0);
            const std::vector<double> p = token_probabilities(row, V, 1.0);
            const std::size_t best = top_k(p, 1).front();
            if (k == K - 1) final_top[t] = best;
            std::size_t above = 0;  // ties broken by the id, as a stable sort ranks them
            for (std::size_t v = 0; v < V; ++v) above += row[v] > row[final_top[t]] || (row[v] == row[final_top[t]] && v < final_top[t]);
            top[t * K + k] = best;
            prob(t, k) = static_cast<float>(p[best]);
            rank[t * K + k] = above + 1;
        }
    }
    std::vector<std::string> depths{"embeddings"};
    for (std::size_t k = 1; k < K; ++k) depths.push_back("layer " + std::to_string(k));
    const Words words = words_of(c, &w);
    const std::string through = words.final_norm + "(x_l)·" + (c.tied_head ? words.embed : short_name(c.family->names.head)) + "ᵀ";
    Step& ids = rec.add_plain("lens_top_ids", "The logit lens: each position's top token, layer by layer", "argmax softmax(" + through + ")",
                              integer_tensor(top, {T, K}), {Axis::token, Axis::layer});
    ids.labels = depths;
    std::string table;  // the tokens as text, one line per position
    for (std::size_t t = 0; t < T; ++t) {
        const std::vector<std::string> names =
            token_labels({top.begin() + static_cast<std::ptrdiff_t>(t * K), top.begin() + static_cast<std::ptrdiff_t>((t + 1) * K)}, spec.tokenizer);
        table += std::string(t ? "; " : "") + rec.trace().tokens[t] + " →";
        for (const std::string& n : names) table += " " + n;
    }
    ids.note = "Row t: what the stream at position t predicts for token t + 1, from the embeddings to the last layer. As text: " + table + ".";
    rec.add_plain("lens_top_probs", "Its probability (temperature 1)", "max softmax(" + through + ")", to_trace(prob), {Axis::token, Axis::layer}).labels = depths;
    Step& rk = rec.add_plain("lens_final_rank", "Where the model's final prediction ranks, layer by layer", "rank of argmax(logits_L) in logits_l",
                             integer_tensor(rank, {T, K}), {Axis::token, Axis::layer});
    rk.labels = depths;
    rk.note = "1: the final prediction is already on top at that depth (the last column is all 1s).";
}

// Ablation: the prompt's loss (the mean of −log p(token t+1) over the positions before the
// last), and the next token's logit and probability at the last position, for `target`.
struct Effect {
    double logit = 0, prob = 0, loss = 0;
};
Effect effect_of(const DecoderWeights& w, const std::vector<std::size_t>& ids, const Ablation* ablation, std::size_t target) {
    const Cube xf = decoder_forward(w, ids, nullptr, nullptr, ablation);
    const Cube logits = project(xf, w.output_head());  // (1,T,V)
    const std::size_t T = ids.size(), V = logits.shape(2);
    Effect e;
    for (std::size_t t = 0; t < T; ++t) {
        const std::vector<double> p = token_probabilities(&logits(0, t, 0), V, 1.0);
        if (t + 1 < T) e.loss -= std::log(p[ids[t + 1]]) / static_cast<double>(T - 1);
        if (T == 1) e.loss = std::numeric_limits<double>::quiet_NaN();  // no next token in the prompt: no loss
        if (t + 1 == T) {
            e.logit = logits(0, t, target);
            e.prob = p[target];
        }
    }
    return e;
}

std::string signed_text(double v) { return (v > 0 ? "+" : "") + format_number(static_cast<float>(v)); }

void record_ablation(Recorder& rec, const ModelSpec& spec, const DecoderWeights& w, const std::vector<std::size_t>& ids, std::size_t target) {
    const std::size_t L = w.config.layers, H = w.config.heads;
    const Effect base = effect_of(w, ids, nullptr, target);
    const std::vector<std::string> labels{"Δ logit", "Δ probability", "Δ loss"};
    const std::string who = token_labels({target}, spec.tokenizer).front();
    if (!spec.ablate.empty()) {
        Ablation off(L);
        std::string names;
        for (const auto& [layer, head] : spec.ablate) {
            const auto add = [&, l = layer](std::size_t h) {
                if (std::find(off[l].begin(), off[l].end(), h) == off[l].end()) off[l].push_back(h);
            };
            if (head) add(*head);
            else
                for (std::size_t h = 0; h < H; ++h) add(h);
            names += (names.empty() ? "" : ", ") + std::to_string(layer + 1) + "." + (head ? std::to_string(*head + 1) : std::string("*"));
        }
        const Effect a = effect_of(w, ids, &off, target);
        Step& s = rec.add_plain("ablation", "Heads " + names + " switched off", "Δ = ablated − original",
                                to_trace(Vec({static_cast<float>(a.logit - base.logit), static_cast<float>(a.prob - base.prob),
                                              static_cast<float>(a.loss - base.loss)})),
                                {Axis::feature});
        s.labels = labels;
        s.may_be_non_finite = ids.size() == 1;
        s.note = "Their outputs are zeroed before the output projection, in this step only (the candidates, the layer shown and "
                 "generation are the whole model's). The next token " + who + ": logit " + format_number(static_cast<float>(base.logit)) +
                 " → " + format_number(static_cast<float>(a.logit)) + ", probability " + format_number(static_cast<float>(base.prob)) + " → " +
                 format_number(static_cast<float>(a.prob)) + "; the prompt's loss " + format_number(static_cast<float>(base.loss)) + " → " +
                 format_number(static_cast<float>(a.loss)) + " nats (probabilities at temperature 1)." +
                 (ids.size() == 1 ? " A one-token prompt predicts none of its own tokens: it has no loss (nan)." : "");
    }
    if (spec.ablate_each) {
        const std::size_t layer = *spec.ablate_each;
        Mat table = Mat::from_shape({H, 3});
        std::size_t worst = 0;
        for (std::size_t h = 0; h < H; ++h) {
            Ablation off(L);
            off[layer] = {h};
            const Effect a = effect_of(w, ids, &off, target);
            table(h, 0) = static_cast<float>(a.logit - base.logit);
            table(h, 1) = static_cast<float>(a.prob - base.prob);
            table(h, 2) = static_cast<float>(a.loss - base.loss);
            if (table(h, 2) > table(worst, 2)) worst = h;
        }
        Step& s = rec.add_plain("ablation_per_head", "Each head of layer " + std::to_string(layer + 1) + " switched off alone", "Δ = ablated − original",
                                to_trace(table), {Axis::head, Axis::feature});
        s.labels = labels;
        s.may_be_non_finite = ids.size() == 1;
        s.note = ids.size() == 1 ? "For the next token " + who + " (temperature 1); a one-token prompt has no loss (nan)."
                                 : "For the next token " + who + " (temperature 1) and the prompt's loss (" + format_number(static_cast<float>(base.loss)) +
                                       " nats). The largest Δ loss: head " + std::to_string(worst + 1) + ", " + signed_text(table(worst, 2)) + " nats.";
    }
}

// Head roles (TransformerLens's induction, previous-token and duplicate-token scores): a
// random sequence r of n ids, the model run on r + r, and per layer and head the mean of
// the attention pattern's diagonal at offset 1 − n (induction), −1 (previous) and −n
// (duplicate).
class AllWeights : public DecoderTap {
public:
    std::vector<Hyper> weights;
    bool keeps_attention(std::size_t) const override { return true; }
    void attention(std::size_t, const Forward& f) override { weights.push_back(f.weights); }
};

void record_roles(Recorder& rec, const ModelSpec& spec, const DecoderWeights& w) {
    const std::size_t n = spec.roles, V = w.config.vocab, L = w.config.layers, H = w.config.heads;
    Generator gen(spec.roles_seed);
    const std::size_t lo = V >= 10000 ? 1000 : 0, hi = V >= 10000 ? 10000 : V;  // torch.randint(lo, hi, (n,))
    std::vector<std::size_t> ids(n);
    for (std::size_t& id : ids) id = lo + gen.random() % (hi - lo);
    ids.insert(ids.end(), ids.begin(), ids.end());
    AllWeights tap;
    decoder_forward(w, ids, nullptr, &tap);
    rec.trace().set_param("roles_length", static_cast<ull>(n));
    rec.trace().set_param("roles_seed", static_cast<ull>(spec.roles_seed));
    rec.trace().set_param("roles_bos", false);
    rec.add_plain("roles_ids", "Head roles: " + std::to_string(n) + " random ids, twice", "r = randint(" + std::to_string(lo) + ", " + std::to_string(hi) + ", n); r + r",
                  integer_tensor({ids.begin(), ids.end()}, {2 * n}), {Axis::feature});
    rec.trace().steps.back().labels = token_labels(ids, spec.tokenizer);
    rec.trace().steps.back().note = "torch.manual_seed(" + std::to_string(spec.roles_seed) + "), torch.randint(" + std::to_string(lo) + ", " + std::to_string(hi) + ", (" +
                std::to_string(n) + ",)), no BOS: as TransformerLens's induction demo draws them.";
    const auto stripe = [&](std::ptrdiff_t offset) {  // mean of the diagonal at `offset` (below the main one: negative)
        Mat m = Mat::from_shape({L, H});
        const std::size_t T = 2 * n, down = static_cast<std::size_t>(-offset);
        for (std::size_t l = 0; l < L; ++l)
            for (std::size_t h = 0; h < H; ++h) {
                float s = 0.0f;
                for (std::size_t i = down; i < T; ++i) s += tap.weights[l](0, h, i, i - down);
                m(l, h) = s / static_cast<float>(T - down);
            }
        return m;
    };
    const std::ptrdiff_t N = static_cast<std::ptrdiff_t>(n);
    const Mat induction = stripe(1 - N), previous = stripe(-1), duplicate = stripe(-N);
    std::string blind;  // sliding layers whose window ends before n − 1 tokens back
    std::size_t window = 0;
    for (std::size_t l = 0; l < L && l < w.config.layer_attention.size(); ++l)
        if (const auto W = w.config.layer_attention[l].window; W && *W <= n - 1) {
            blind += (blind.empty() ? "" : ", ") + std::to_string(l + 1);
            window = *W;
        }
    rec.add_plain("role_induction", "Induction score per layer and head", "mean_i A[i, i − (n − 1)]", to_trace(induction), {Axis::layer, Axis::head})
        .note = "In the second run each token's next token already appeared once, n − 1 positions back: an induction head attends there "
                "(and copies it). Near 1: an induction head." +
                (blind.empty() ? std::string()
                               : " Layer" + std::string(blind.find(',') == std::string::npos ? " " : "s ") + blind + " see only the last " +
                                     std::to_string(window) + " tokens (a sliding window): n − 1 = " + std::to_string(n - 1) +
                                     " back is out of their sight, so their induction and duplicate scores are 0 by construction.");
    rec.add_plain("role_previous", "Previous-token score per layer and head", "mean_i A[i, i − 1]", to_trace(previous), {Axis::layer, Axis::head});
    rec.add_plain("role_duplicate", "Duplicate-token score per layer and head", "mean_i A[i, i − n]", to_trace(duplicate), {Axis::layer, Axis::head})
        .note = "The weight on the same token's earlier copy, n positions back.";
    // every head ranked by its induction score, beside its other scores, its weight on the first token and its entropy
    const std::size_t T = 2 * n;
    std::vector<std::pair<std::size_t, std::size_t>> order;
    for (std::size_t l = 0; l < L; ++l)
        for (std::size_t h = 0; h < H; ++h) order.emplace_back(l, h);
    std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) { return induction(a.first, a.second) > induction(b.first, b.second); });
    Mat table = Mat::from_shape({L * H, 7});
    for (std::size_t r = 0; r < order.size(); ++r) {
        const auto [l, h] = order[r];
        double first = 0.0, entropy = 0.0;  // over the rows from 2 (row 1 has only itself)
        for (std::size_t i = 1; i < T; ++i) {
            first += tap.weights[l](0, h, i, 0);
            for (std::size_t j = 0; j <= i; ++j) {
                const double a = tap.weights[l](0, h, i, j);
                if (a > 0.0) entropy -= a * std::log(a);
            }
        }
        table(r, 0) = static_cast<float>(l + 1);
        table(r, 1) = static_cast<float>(h + 1);
        table(r, 2) = induction(l, h);
        table(r, 3) = previous(l, h);
        table(r, 4) = duplicate(l, h);
        table(r, 5) = static_cast<float>(first / static_cast<double>(T - 1));
        table(r, 6) = static_cast<float>(entropy / static_cast<double>(T - 1));
    }
    Step& ranked = rec.add_plain("roles_ranked", "The heads ranked by their induction score, highest first", "sort by induction", to_trace(table),
                                 {Axis::rank, Axis::feature});
    ranked.tensor.integer_columns = 2;
    ranked.labels = {"layer", "head", "induction", "previous", "duplicate", "first_token", "entropy"};
    ranked.note = "first_token: the mean weight on the first token, entropy: the rows' mean entropy in nats, both over the rows from 2 of the "
                  "same random run.";
}

// Attention rollout (Abnar & Zuidema 2020): each layer's weights averaged over the heads,
// the identity added for the residual connection, rows normalised, and the layers
// multiplied, R = Â_L ··· Â_1.
void record_rollout(Recorder& rec, const std::vector<Mat>& means) {
    const std::size_t T = means.front().shape(0);
    Mat R;
    for (const Mat& m : means) {
        Mat a = m;
        for (std::size_t i = 0; i < T; ++i) a(i, i) += 1.0f;
        for (std::size_t i = 0; i < T; ++i) {
            float s = 0.0f;
            for (std::size_t j = 0; j < T; ++j) s += a(i, j);
            for (std::size_t j = 0; j < T; ++j) a(i, j) /= s;
        }
        if (R.size() == 0) {
            R = a;
            continue;
        }
        Mat next = Mat::from_shape({T, T});
        next.fill(0.0f);
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t k = 0; k < T; ++k)
                for (std::size_t j = 0; j < T; ++j) next(i, j) += a(i, k) * R(k, j);
        R = std::move(next);
    }
    rec.mask_from_here(CellMask{});
    Step& s = rec.add_with_row_sums("rollout", "Attention rollout through all " + std::to_string(means.size()) + " layers",
                                    "R = Â_L···Â_1, Â_l = rownorm(mean_h A_l,h + I)", Cube(xt::view(R, xt::newaxis(), xt::all(), xt::all())),
                                    tokens_tokens);
    rec.mask_from_here(std::nullopt);
    s.note = "Row i: how much position i draws on each input token, the residual connection counted as attending to oneself "
             "(Abnar & Zuidema 2020). Each row sums to 1.";
}

// Greedy decoding with the KV cache: each new token runs through every layer alone, its
// key and value appended to that layer's cache; the shown layer's new row of attention
// and cache are recorded. At the end the whole sequence runs again without a cache.
// What the cache holds, its arithmetic true per layer kind: a sliding layer keeps only its
// window. "K and V of G·d_h = 16 floats per token and layer: 9 tokens in 2 layers, 4 (the
// window) in 2 → (9·2 + 4·2) × 2 × 16 × 4 bytes = 3328 bytes".
std::string cache_words(const DecoderCache& cache, const DecoderConfig& c, std::size_t tokens) {
    std::map<std::size_t, std::size_t, std::greater<>> layers_keeping;  // tokens kept → layers (softmax attention's)
    std::size_t linear_layers = 0;
    double linear_floats = 0.0;  // a Gated DeltaNet layer's state and convolution inputs
    for (std::size_t l = 0; l < cache.layers.size(); ++l) {
        if (l < c.layer_attention.size() && c.layer_attention[l].linear && l < cache.linear.size()) {
            ++linear_layers;
            linear_floats = cache.linear[l].bytes(1);
            continue;
        }
        ++layers_keeping[cache.layers[l].length()];
    }
    const std::size_t width = c.key_heads() * c.head_size();
    std::string groups, sum;
    for (const auto& [kept, n] : layers_keeping) {
        groups += (groups.empty() ? "" : ", ") + std::to_string(kept) + (groups.empty() ? (kept == 1 ? " token" : " tokens") : "") +
                  (kept < tokens ? " (the window)" : "") + " in " + std::to_string(n) + (n == 1 ? " layer" : " layers");
        sum += (sum.empty() ? "" : " + ") + std::to_string(kept) + "·" + std::to_string(n);
    }
    const bool one = layers_keeping.size() == 1;
    const std::string total = " = " + format_number(cache.bytes(4)) + " bytes";
    const std::string linear_words =
        linear_layers ? "; each of the " + std::to_string(linear_layers) + " Gated DeltaNet layers keeps its state and the convolution's last inputs instead, " +
                            format_number(linear_floats) + " floats whatever the length: + " + std::to_string(linear_layers) + " × " +
                            format_number(linear_floats) + " × 4 bytes"
                      : "";
    const Hyper& latent = cache.layers.front().keys();
    if (!c.family->names.kv_a.empty() && latent.dimension() == 4) {  // MLA: the latent and the rotated rotary key, for every head at once
        const std::size_t r = latent.shape(3), rope = cache.layers.front().values().shape(3);
        return "The cache keeps the latent c_KV (r = " + std::to_string(r) + ") and k_rope (" + std::to_string(rope) + "), " + std::to_string(r + rope) +
               " floats per token and layer, and makes every head's keys and values from them again: " + groups + " → " + (one ? sum : "(" + sum + ")") +
               " × " + std::to_string(r + rope) + " × 4 bytes" + linear_words + total;
    }
    return "The cache keeps K and V, G·d_h = " + std::to_string(width) + " floats each per token and layer: " + groups + " → " +
           (one ? sum : "(" + sum + ")") + " × 2 × " + std::to_string(width) + " × 4 bytes" + linear_words + total;
}

// StreamingLLM's cache against the full one, after generating `n` tokens past the prompt.
void record_streaming(Recorder& rec, const ModelSpec& spec, const DecoderCache& cache, std::size_t n, std::size_t prompt, const std::vector<float>& kl,
                      const std::vector<float>& overlap) {
    const auto [start, recent] = *spec.start_recent;
    Trace& trace = rec.trace();
    trace.set_param("cache_start", static_cast<ull>(start));
    trace.set_param("cache_recent", static_cast<ull>(recent));
    const std::vector<std::size_t> kept = cache.layers.front().positions();
    Step& k = rec.add_plain("cache_kept", "The " + std::to_string(kept.size()) + " tokens the cache keeps at the end (at most the first " + std::to_string(start) +
                                              " and the last " + std::to_string(recent) + ")",
                            "[0, start) ∪ [t − recent + 1, t]", integer_tensor({kept.begin(), kept.end()}, {kept.size()}), {Axis::feature});
    for (std::size_t p : kept) k.labels.push_back(trace.tokens[p]);
    k.note = "StreamingLLM (Xiao et al. 2023): the first tokens stay as attention sinks, the most recent as a window; each key is cached before RoPE "
             "and rotated at its index in the cache, so once tokens are evicted a generated token sees positions 0 … " + std::to_string(start + recent - 1) +
             " at most, however long the text (the prompt runs at its own positions).";
    if (n == 0) return;
    const std::vector<std::size_t> shape{n};
    Mat distance = Mat::from_shape({1, n});
    std::copy(kl.begin(), kl.end(), distance.begin());
    Step& d = rec.add("cache_kl", "How far the kept tokens move each next token's distribution from the full cache's",
                      "KL(p_full ‖ p_kept) = Σ_v p_full(v)·ln(p_full(v) / p_kept(v))", distance, {Axis::token});
    d.first_key = prompt;
    d.note = "In nats, after each generated token (greedy on the kept cache; the full cache reads the same tokens). 0 while nothing is evicted.";
    Step& o = rec.add_plain("cache_top_k_overlap", "How many of the full cache's " + std::to_string(spec.top_k) + " most likely next tokens the kept cache shares",
                            "|top_k(p_full) ∩ top_k(p_kept)|", integer_tensor(std::vector<unsigned long long>(overlap.begin(), overlap.end()), shape), {Axis::token});
    o.first_key = prompt;
}

void generate(Recorder& rec, const LoadedModel& m, std::vector<std::size_t> ids, DecoderCache cache, Mat logits, const ModelSpec& spec) {
    Trace& trace = rec.trace();
    const ModelInfo& info = m.info;
    const std::size_t prompt = ids.size();
    std::vector<std::size_t> generated;
    bool ended = false;
    // StreamingLLM: the same tokens through a cache that keeps everything, for the distance
    const bool streaming = spec.start_recent.has_value();
    DecoderCache full_cache = make_cache(m.weights.config);
    if (streaming) decoder_forward(m.weights, ids, &full_cache, nullptr);
    std::vector<float> kl, overlap;
    for (std::size_t g = 0; g < spec.generate && !ended; ++g) {
        const std::size_t next = argmax(logits.data(), logits.size()), pos = ids.size();
        if (pos >= info.context) break;  // the context is full
        ended = std::find(info.end_ids.begin(), info.end_ids.end(), next) != info.end_ids.end();  // generation_config.json's eos
        ids.push_back(next);
        generated.push_back(next);
        trace.tokens.push_back(token_labels({next}, spec.tokenizer).front());
        StepTap tap(rec, spec, m.weights.config, pos, trace.tokens[pos], cache);
        const Cube xf = decoder_forward(m.weights, {next}, &cache, &tap);
        logits = decoder_logits(m.weights, xf, 0);
        if (streaming) {  // the next token's distribution with every token kept, against the streamed one
            const Mat full = decoder_logits(m.weights, decoder_forward(m.weights, {next}, &full_cache, nullptr), 0);
            const std::size_t V = full.size();
            const std::vector<double> p = token_probabilities(full.data(), V, 1.0), q = token_probabilities(logits.data(), V, 1.0);
            double d = 0.0;
            for (std::size_t v = 0; v < V; ++v)
                if (p[v] > 0.0) d += p[v] * (std::log(p[v]) - std::log(q[v]));
            kl.push_back(static_cast<float>(std::max(d, 0.0)));
            const std::vector<std::size_t> a = top_k(p, spec.top_k), b = top_k(q, spec.top_k);
            std::size_t shared = 0;
            for (std::size_t v : a) shared += std::find(b.begin(), b.end(), v) != b.end();
            overlap.push_back(static_cast<float>(shared));
        }
    }
    Step& gs = rec.add_plain("generated_ids", "The generated tokens (greedy: the most likely each time)", "argmax(logits)",
                             integer_tensor({generated.begin(), generated.end()}, {generated.size()}), {Axis::token});
    gs.first_key = prompt;
    if (ended) gs.note = "Stopped at the end-of-text token " + std::to_string(generated.back()) + " (generation_config.json's eos_token_id).";
    else if (generated.size() < spec.generate) gs.note = "The context of " + std::to_string(info.context) + " tokens is full.";
    trace.set_param("generated", static_cast<ull>(generated.size()));
    if (streaming) {
        record_streaming(rec, spec, cache, generated.size(), prompt, kl, overlap);
        return;
    }
    FullAttention full_attention;
    const Cube full_x = decoder_forward(m.weights, ids, nullptr, &full_attention);
    const Mat full = decoder_logits(m.weights, full_x, ids.size() - 1);
    float diff = 0.0f;
    for (std::size_t v = 0; v < full.size(); ++v) diff = std::max(diff, std::fabs(full(0, v) - logits(0, v)));
    rec.add_plain("max_difference", "The last logits with the cache against the whole sequence recomputed", "max |logits_cached − logits_full|",
                  scalar_trace(diff), {})
        .note = cache_words(cache, m.weights.config, ids.size()) + "; " +
                (diff == 0.0f ? "equal bit for bit." : "equal up to float32 rounding (the products are summed in another order).");
}

}  // namespace

Cost model_walk_cost(const Model& model, std::size_t T, const ModelSpec& spec, const Recording& recording) {
    const bool explainable = recording.explainable && !recording.summary;  // as walk_model's tap keeps them
    const LoadedModel& m = *model;
    const DecoderConfig& c = m.weights.config;
    const double L = static_cast<double>(c.layers), C = static_cast<double>(c.width), H = static_cast<double>(c.heads);
    const double G = static_cast<double>(c.key_heads()), d = static_cast<double>(c.head_size()), V = static_cast<double>(c.vocab);
    // a mixture of experts (in every layer, or after DeepSeek's dense first ones): the router, and each token through its k experts
    const auto moe_block = std::find_if(m.weights.blocks.begin(), m.weights.blocks.end(), [](const BlockWeights& b) { return b.moe.has_value(); });
    const MoeWeights* moe = moe_block == m.weights.blocks.end() ? nullptr : &*moe_block->moe;
    const auto dense_block = std::find_if(m.weights.blocks.begin(), m.weights.blocks.end(), [](const BlockWeights& b) { return !b.moe; });
    const double dense_hidden = dense_block == m.weights.blocks.end() ? 0.0 : static_cast<double>(dense_block->up.out());
    const double expert_hidden = moe ? 2.0 * static_cast<double>(moe->experts.front().down.in()) : 0.0;  // an expert's gate and up, per token
    const double I = m.weights.blocks.empty() ? 4.0 * C : std::max(dense_hidden, expert_hidden);
    const double mlp = std::max(moe ? moe_work(*moe, 1) : 0.0, dense_block == m.weights.blocks.end() ? 0.0 : (gated(c.mlp) ? 3.0 : 2.0) * C * dense_hidden);
    const double per_token = L * (C * (H + 2.0 * G) * d + H * d * C + mlp);  // the layers' multiply-adds for one token
    const auto attention = [&](double queries, double keys) { return L * H * queries * keys * (2.0 * d + 16.0); };
    const double N = static_cast<double>(std::min<std::size_t>(spec.generate, c.context > T ? c.context - T : 0));
    const double t = static_cast<double>(T), all = t + N;
    Cost cost;
    // the prompt, every generated token against the cache, then the whole sequence again
    cost.work = per_token * t + attention(t, t) + V * C;
    if (N > 0) cost.work += per_token * N + attention(N, all) + N * V * C + per_token * all + attention(all, all) + V * C;
    // floats kept: a layer's working set (x, norms, q/k/v, the MLP's hidden), the layer shown
    // in full (its T×T tensors four times in the forward, twice in the trace), the view
    // (every layer's weights), summaries of the rest, the logits, the cache
    // (a mixture of experts: an expert's rows in, its gate and up, its hidden, its output)
    const double layer_rows = t * (10.0 * C + 3.0 * (H + 2.0 * G) * d + 2.0 * I + (moe ? 2.0 * C + 1.5 * I : 0.0));
    // (only summed: each core's scores and weights of one head at a time)
    const BlockWeights* shown_block = spec.layer < m.weights.blocks.size() ? &m.weights.blocks[spec.layer] : nullptr;
    const bool summed = sums_shown_layer(spec, recording.summary, explainable) && shown_block && shown_block->attends_with_heads() &&
                        sums_square_summaries(c.head_size(), T);
    // (a layer not shown makes no T×T tensor: the blocked path, or attend's sums where they are made)
    const double shown_squares = summed ? 2.0 * std::min(H, static_cast<double>(cores())) * t * t : 6.0 * H * t * t;
    const double shown = (spec.all_layers ? L : 1.0) * layer_rows + shown_squares;
    // latent attention (MLA) takes no blocked path: every layer makes its scores in two parts, their sum and the weights,
    // and its heads' keys and values from the latent
    const bool latent = std::any_of(m.weights.blocks.begin(), m.weights.blocks.end(), [](const BlockWeights& b) { return b.latent.has_value(); });
    const double latent_rows = latent ? 5.0 * H * t * t + 4.0 * t * H * d : 0.0;
    const double working = layer_rows + latent_rows + (spec.view ? 4.0 * H * t * t : 0.0);
    const double view = spec.view ? 2.0 * L * H * t * t : 0.0;
    const double cache = N > 0 ? 2.0 * 2.0 * L * G * d * all + 6.0 * H * all * all : 0.0;  // and the recomputation's T×T
    const bool sixteen = !m.weights.blocks.empty() && (m.weights.blocks.front().up.ext16 || m.weights.blocks.front().attn.query.ext16 ||
                                                       (m.weights.blocks.front().latent && m.weights.blocks.front().latent->kv_a_proj.ext16));  // 16-bit weights widened
    // a layer kept to be explained: its forward (the rows, Q, K, V and their heads, the T×T
    // tensors) and the rows entering it
    const double kept_layer = t * (2.0 * C + 3.0 * (H + 2.0 * G) * d) + 4.0 * H * t * t;
    const double kept = spec.explain || explainable ? (explainable && spec.view ? L : 1.0) * kept_layer : 0.0;
    // the logit lens: every layer's stream kept, each through the final norm and the head (T×V logits at a time)
    const double lens = spec.logit_lens ? (L + 1.0) * t * C * 2.0 + 2.0 * t * V + 4.0 * (L + 1.0) * t : 0.0;
    if (spec.logit_lens) cost.work += (L + 1.0) * t * V * (C + 16.0);
    const double rollout = spec.rollout ? (L + 4.0) * t * t + 4.0 * H * t * t : 0.0;  // every layer's mean, and its forward's T×T tensors
    if (spec.rollout) cost.work += L * t * t * (t + H);
    // ablation: the original and each ablated forward again, with all T rows of logits
    const double ablations = (spec.ablate.empty() ? 0.0 : 2.0) + (spec.ablate_each ? H + 1.0 : 0.0);
    cost.work += ablations * (per_token * t + attention(t, t) + t * V * (C + 16.0));
    const double ablation_bytes = ablations > 0 ? 2.0 * t * V + layer_rows + 4.0 * H * t * t : 0.0;
    const double r2 = 2.0 * static_cast<double>(spec.roles);  // head roles: every layer's weights for the 2n tokens
    if (spec.roles) cost.work += per_token * r2 + attention(r2, r2);
    const double roles_bytes = spec.roles ? L * H * r2 * r2 * 2.0 + r2 * (10.0 * C + 2.0 * I) : 0.0;
    // StreamingLLM's cache: a full cache beside it (the prompt again, each token again with its
    // logits), every cached key rotated again at each step
    double streamed = 0.0;
    if (spec.start_recent && N > 0) {
        cost.work += per_token * t + attention(t, t) + per_token * N + attention(N, all) + N * V * C + N * L * G * d * all * 4.0;
        streamed = 2.0 * 2.0 * L * G * d * all + 2.0 * G * d * all + 4.0 * V + 4.0 * N;
    }
    // 16-bit weights: each core's widened block, or a product's input de-interleaved for the kernel that
    // widens in registers; and each core's packed strip of 32 columns (products on the AVX-512 kernels:
    // float32 weights, or the weights times the values, over every key), kept by its thread
    const double threads = static_cast<double>(cores());
    const double widening = (sixteen ? threads * 1048576.0 + all * std::max(C, I) : 0.0) + threads * 32.0 * std::max({C, I, all});
    cost.bytes = 4.0 * (shown + working + view + cache + streamed + kept + lens + rollout + ablation_bytes + roles_bytes + 2.0 * V + widening);
    if (spec.tokenizer) cost.bytes += spec.tokenizer->memory_bytes();  // held through the walk: it names the tokens
    return cost;
}

Cost tokenize_cost(std::size_t n, const Tokenizer* tokenizer) {
    const double b = static_cast<double>(n);
    // the pieces, symbols and heap, and the tokenizer's tables; the merges
    return {256.0 * b + (tokenizer ? tokenizer->memory_bytes() : 0.0), 64.0 * b * (1.0 + std::log2(b + 1.0))};
}

Trace walk_model(const Model& model, const std::vector<std::size_t>& ids, const std::vector<std::string>& tokens, const ModelSpec& spec,
                 const Recording& recording) {
    const LoadedModel& m = *model;
    const ModelInfo& info = m.info;
    const std::size_t T = ids.size();
    check_prompt(m.weights.config, ids, 0);
    if (spec.generate && T + 1 > info.context)
        throw UsageError("no room to generate: the prompt fills the model's context of " + std::to_string(info.context));
    const GatedDeltaNetWeights* shown_linear = spec.layer < m.weights.blocks.size() && m.weights.blocks[spec.layer].linear ? &*m.weights.blocks[spec.layer].linear : nullptr;
    const std::size_t heads_shown = shown_linear ? shown_linear->v_heads : info.heads;  // a Gated DeltaNet layer: its value heads
    if (spec.head && *spec.head >= heads_shown)
        throw UsageError("head " + std::to_string(*spec.head + 1) + " is out of range: " +
                         (shown_linear ? "layer " + std::to_string(spec.layer + 1) + " (Gated DeltaNet) has " : std::string("the model has ")) +
                         std::to_string(heads_shown) + " heads, counted from 1");
    if (spec.layer >= info.layers)
        throw UsageError("layer " + std::to_string(spec.layer + 1) + " is out of range: the model has " + std::to_string(info.layers) +
                         " layers, counted from 1");
    if (!(spec.temperature > 0.0 && std::isfinite(spec.temperature))) throw UsageError("the temperature must be a positive number");
    for (const auto& [layer, head] : spec.ablate) {
        if (layer >= info.layers)
            throw UsageError("the ablated layer " + std::to_string(layer + 1) + " is out of range: the model has " + std::to_string(info.layers) + " layers");
        if (head && *head >= info.heads)
            throw UsageError("the ablated head " + std::to_string(*head + 1) + " is out of range: the model has " + std::to_string(info.heads) + " heads");
    }
    if (spec.roles && (spec.roles < 2 || 2 * spec.roles > info.context))
        throw UsageError("head roles run " + std::to_string(spec.roles) + " random tokens twice: between 2 and half the context (" +
                         std::to_string(info.context / 2) + ")");
    if (spec.ablate_each && *spec.ablate_each >= info.layers)
        throw UsageError("layer " + std::to_string(*spec.ablate_each + 1) + " is out of range: the model has " + std::to_string(info.layers) + " layers");
    if (spec.top_p && !(*spec.top_p > 0.0 && *spec.top_p <= 1.0)) throw UsageError("top-p must be in (0, 1]");
    const auto& stat_names = head_stat_names();
    if (spec.explain && (spec.explain->i >= T || spec.explain->j >= T))
        throw UsageError("cell " + std::to_string(spec.explain->i + 1) + "," + std::to_string(spec.explain->j + 1) + " is out of range: the prompt has " +
                         std::to_string(T) + " tokens, counted from 1");
    const auto linear = std::find_if(m.weights.blocks.begin(), m.weights.blocks.end(), [](const BlockWeights& b) { return b.linear.has_value(); });
    if (linear != m.weights.blocks.end()) {  // Gated DeltaNet layers have no softmax weights to gather, average or switch off by head
        const std::string first = std::to_string(static_cast<std::size_t>(linear - m.weights.blocks.begin()) + 1);
        const char* asked = spec.view ? "the model view" : spec.rollout ? "attention rollout" : spec.roles ? "head roles" : nullptr;
        if (asked)
            throw UsageError(std::string(asked) + " reads the softmax weights of every layer, and layer " + first +
                             " is a Gated DeltaNet layer (linear attention: a state, no softmax); show one layer instead, with its effective attention matrix");
        std::vector<std::size_t> ablated;
        for (const auto& a : spec.ablate) ablated.push_back(a.first);
        if (spec.ablate_each) ablated.push_back(*spec.ablate_each);
        for (std::size_t l : ablated)
            if (l < m.weights.blocks.size() && m.weights.blocks[l].linear)
                throw UsageError("layer " + std::to_string(l + 1) + " is a Gated DeltaNet layer, whose heads are not switched off here: ablate the heads of a "
                                 "full-attention layer");
        if (spec.explain && m.weights.blocks[spec.layer].linear)
            throw UsageError("layer " + std::to_string(spec.layer + 1) + " is a Gated DeltaNet layer, whose cells are not a softmax's: a cell is written out on a full-attention layer");
    }
    if (spec.explain && spec.layer < m.weights.blocks.size() && m.weights.blocks[spec.layer].latent)
        throw UsageError("layer " + std::to_string(spec.layer + 1) + " is latent attention (MLA), whose cells are not written out yet: its steps show "
                         "the latent, the queries and keys as [nope | rope] and the weights; a cell is written out for heads of q/k/v projections");
    if (!spec.sort.empty() && std::find(stat_names.begin(), stat_names.end(), spec.sort) == stat_names.end())
        throw UsageError("heads are ranked by entropy, max_weight, first_token, previous_token or diagonal, not \"" + spec.sort + "\"");

    Trace trace;
    trace.command = "model";  // the gpt2 command names itself
    trace.tokens = tokens;
    trace.set_param("model", info.file);
    trace.set_param("naming", info.naming);
    trace.set_param("layout", info.layout);
    trace.set_param("dtype", info.dtype);
    if (!info.biases) trace.set_param("biases", std::string("none in the file (bias=False): zeros"));
    trace.set_param("vocab", static_cast<ull>(info.vocab));
    trace.set_param("context", static_cast<ull>(info.context));
    trace.set_param("width", static_cast<ull>(info.width));
    trace.set_param("layers", static_cast<ull>(info.layers));
    trace.set_param("heads", static_cast<ull>(info.heads));
    if (info.kv_heads) trace.set_param("kv_heads", static_cast<ull>(info.kv_heads));
    if (info.head_dim) trace.set_param("head_dim", static_cast<ull>(info.head_dim));
    for (const auto& [field, value] : info.config) trace.set_param("config." + field, value);  // config.json, as the model read it
    trace.set_param("num_tokens", static_cast<ull>(T));
    trace.set_param("layer_index", Index{{spec.layer}, false, ""});
    if (spec.head) trace.set_param("head_index", Index{{*spec.head}, false, ""});
    trace.set_param("causal", true);
    trace.set_param("temperature", spec.temperature);
    {  // each layer's kind, where the layers differ (sliding and full, with and without RoPE)
        const auto& layers = m.weights.config.layer_attention;
        const bool windows = std::any_of(layers.begin(), layers.end(), [](const LayerAttention& la) { return la.window.has_value(); });
        const bool nope = m.weights.config.positions == PositionKind::rope &&
                          std::any_of(layers.begin(), layers.end(), [](const LayerAttention& la) { return !la.rope; });
        for (const LayerAttention& la : layers) {
            std::string kind = !windows ? "" : la.window ? "sliding window, W = " + std::to_string(*la.window) : "full attention";
            if (nope && !la.rope) kind += (kind.empty() ? "" : ", ") + std::string("no RoPE");
            trace.layer_kinds.push_back(kind);
        }
        if (!windows && !nope) trace.layer_kinds.clear();
    }
    Recorder rec(trace);

    Step& id_step = rec.add_plain("token_ids", "Token ids", "ids", integer_tensor({ids.begin(), ids.end()}, {T}), {Axis::token});
    if (!info.unused.empty()) {  // what the checkpoint holds that this model does not read
        std::string names;
        for (std::size_t i = 0; i < info.unused.size() && i < 8; ++i) names += (i ? ", " : "") + info.unused[i];
        if (info.unused.size() > 8) names += ", and " + std::to_string(info.unused.size() - 8) + " more";
        id_step.note = "The checkpoint also holds " + std::to_string(info.unused.size()) + " tensor" +
                       (info.unused.size() == 1 ? "" : "s") + " this model does not use: " + names + ".";
    }
    PromptTap tap(rec, spec, info, model, T, recording.explainable && !recording.summary);
    DecoderCache cache = spec.start_recent ? make_start_recent_cache(m.weights.config, spec.start_recent->first, spec.start_recent->second)
                                           : make_cache(m.weights.config);
    rec.summarise_from_here(recording.summary);  // the forward's steps: none ends the trace
    const Cube xf = decoder_forward(m.weights, ids, spec.generate ? &cache : nullptr, &tap);
    rec.summarise_from_here(false);
    if (spec.view) record_view(rec, spec, info, m.weights.config, tap.grid, T);
    if (spec.view && !tap.chosen_by_layer.empty()) {  // a mixture of experts: which experts each token went to, layer by layer
        std::vector<std::size_t> layers;  // the layers with experts (DeepSeek-V3 keeps a dense MLP in its first ones)
        for (std::size_t l = 0; l < tap.chosen_by_layer.size(); ++l)
            if (!tap.chosen_by_layer[l].empty()) layers.push_back(l);
        const std::size_t k = tap.chosen_by_layer[layers.front()].size() / T;
        std::vector<unsigned long long> all;
        for (std::size_t l : layers) all.insert(all.end(), tap.chosen_by_layer[l].begin(), tap.chosen_by_layer[l].end());
        const bool sigmoid = m.weights.blocks[layers.front()].moe->routing == RouterKind::sigmoid_grouped;
        Step& s = rec.add_plain("experts_by_layer", std::string("The experts each token went to, layer by layer (") +
                                                        (sigmoid ? "largest score + bias first" : "largest router logit first") + ")",
                                sigmoid ? "top_k(group_mask(σ(r_l) + b_corr), " + std::to_string(k) + ")" : "top_k(r_l, " + std::to_string(k) + ")",
                                integer_tensor(all, {layers.size(), T, k}), {Axis::layer, Axis::token, Axis::rank});
        s.note = "A token keeps no expert of its own: each layer's router picks again from the stream as it is there.";
        s.first_layer = layers.front();
        if (layers.front() > 0)
            s.note += " Only the layers with experts, " +
                      (layers.size() == 1 ? "layer " + std::to_string(layers.front() + 1) : std::to_string(layers.front() + 1) + " to " + std::to_string(layers.back() + 1)) +
                      ": the first " +
                      (layers.front() == 1 ? std::string("keeps") : std::to_string(layers.front()) + " keep") + " a dense MLP.";
    }
    const Words words = words_of(m.weights.config, &m.weights);
    rec.add("ln_f", "The final " + words.norm + " (" + words.final_norm + ")", words.final_norm + "(x)", xf, tokens_features);
    const Mat logits = decoder_logits(m.weights, xf, T - 1);  // the last position's
    record_candidates(rec, spec, logits, m.weights.config);
    if (!spec.ablate.empty() || spec.ablate_each) {
        std::size_t best = 0;
        for (std::size_t v = 1; v < logits.shape(1); ++v) best = logits(0, v) > logits(0, best) ? v : best;
        record_ablation(rec, spec, m.weights, ids, best);
    }
    if (spec.roles) record_roles(rec, spec, m.weights);
    if (spec.rollout) {
        trace.set_param("rollout", true);
        record_rollout(rec, tap.head_means);
    }
    if (spec.logit_lens) {
        trace.set_param("logit_lens", true);
        record_logit_lens(rec, spec, m.weights, tap.residuals);
    }
    if (spec.generate) generate(rec, m, ids, std::move(cache), logits, spec);
    if (spec.explain) {  // one cell of the layer shown, written out
        const std::size_t head = spec.head.value_or(0);
        trace.set_param("explain_index", Index{{spec.explain->i, spec.explain->j}, true, "weights"});
        trace.set_param("explain_head_index", Index{{head}, false, ""});
        const auto shown = std::find_if(tap.kept.begin(), tap.kept.end(), [&](const KeptAttention& k) { return k.layer->layer == spec.layer; });
        ExplainView v;
        v.f = &shown->f;
        v.x = &shown->x;
        v.weights = shown->weights.get();
        v.scale = shown->scale;
        v.layer = &*shown->layer;
        explain_cell(rec, CellRef{spec.layer, head, spec.explain->i, spec.explain->j}, v);
    }
    if (recording.explainable && !recording.summary) trace.explainer = keep_for_explaining(std::move(tap.kept));
    try {
        return finish(std::move(trace), recording);
    } catch (const RuntimeError&) {  // non-finite: a weight of the file, rather than an overflow?
        check_weights_finite(m);
        throw;
    }
}

}  // namespace attnwalk
