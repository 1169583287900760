// Attention heads (MHA, GQA, MQA; windows, sinks, an output gate, QK-norm, RoPE) as the
// model walk narrates them: the layer shown with mha's step ids.
#include "model_walk.hpp"

namespace attnwalk::model_walk {

void PromptTap::heads(std::size_t l, const Forward& f) {
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
    const HeadsBlock* heads = bw.attention->as<HeadsBlock>();     // heads,
    const LatentBlock* latent = bw.attention->as<LatentBlock>();  // or latent attention, whose heads latent_heads records
    const std::string in = words_.pre ? words_.n1 + "(x)" : "x", t = words_.t;
    const auto bias = [&](const Linear* lin, const char* name) { return lin && lin->b.size() != 0 ? std::string(" + b_") + name : std::string(); };
    const std::string qf = "Q = " + in + "·W_q" + t + bias(heads ? &heads->w.query : nullptr, "q"),
                      kf = "K = " + in + "·W_k" + t + bias(heads ? &heads->w.key : nullptr, "k"),
                      vf = "V = " + in + "·W_v" + t + bias(heads ? &heads->w.value : nullptr, "v");
    const LayerSpec& la = config_.layer_specs[l];
    if (la.attention == AttentionKind::latent) {  // MLA: each head's query and key are [nope | rope], its value from the latent
        latent_heads(l, f, in);
    } else if (words_.fused) {
        rec_.add("queries", "Layer " + std::to_string(l + 1) + ": queries (columns 1…C of " + words_.fused_qkv + ")", qf, f.q, tokens_features);
        rec_.add("keys", "Keys (columns C + 1…2C of " + words_.fused_qkv + ")", kf, f.k, tokens_features);
        rec_.add("values", "Values (columns 2C + 1…3C of " + words_.fused_qkv + ")", vf, f.v, tokens_features);
    } else {
        const HeadsPart& n = config_.family->heads;
        const std::string H = std::to_string(f.heads), G = std::to_string(f.kv_heads), d = std::to_string(f.d_h);
        Step& q = rec_.add("queries", "Layer " + std::to_string(l + 1) + ": queries (" + short_name(n.query) + ": " + heads_words(f.heads, f.d_h) + ")", qf, f.q,
                           tokens_features);
        if (config_.positions == PositionKind::rope && !la.rope) {
            const LayersPart& lp = config_.family->layers;
            const std::string why = lp.rope_on_sliding_only && !la.window ? "a full-attention layer: this family rotates only its sliding-window layers"
                                    : !lp.no_rope_layers.empty()        ? lp.no_rope_layers
                                                                        : "its partial_rotary_factor turns no feature";
            q.note = "This layer applies no RoPE (" + why +
                     "): its queries and keys are not rotated, so its scores see no positions; the causal mask alone orders the tokens.";
        }
        if (la.kv_from) {  // cross-layer KV sharing: no keys or values of its own
            const std::string from = std::to_string(*la.kv_from + 1);
            q.note = "Cross-layer KV sharing (" + n.shared_layers + "): this layer has no " + short_name(n.key) + " or " + short_name(n.value) +
                     "; it reads the keys and values layer " + from + " made (the last earlier " + (la.window ? "sliding-window" : "full-attention") +
                     " layer), already normalised and rotated, and caches none of its own.";
        }
        const bool own_kv = !la.kv_from;
        if (own_kv) {
            Step& k = rec_.add("keys", "Keys (" + short_name(n.key) + ": " + G + " key/value head" + (f.kv_heads == 1 ? ", " : "s, ") + d + (f.d_h == 1 ? " feature" : " features") + (f.kv_heads == 1 ? "" : " each") + ")", kf,
                               f.k, tokens_features);
            if (f.kv_heads < f.heads)
                k.note = "Grouped-query attention: " + G + " key/value head" + (f.kv_heads == 1 ? "" : "s") + " for " + H + " query heads; query head h reads key/value head ⌈h / " +
                         std::to_string(f.heads / f.kv_heads) + "⌉ (both counted from 1).";
            const bool v_is_k = !n.keys_as_values.empty() && f.v.size() != 0 && f.v == f.k;  // attention_k_eq_v: W_k makes both
            Step& v = rec_.add("values", v_is_k ? "Values (" + short_name(n.key) + ": the keys' projection, " + n.keys_as_values + ")" : "Values (" + short_name(n.value) + ")",
                               v_is_k ? "V = K" : vf, f.v, tokens_features);
            if (heads->w.v_norm) v.note = "Each head's values pass an RMSNorm without a scale (v_norm) before the weights average them.";
        }
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
            if (heads->w.qk_norm_whole) {
                heads_or_one("queries_normed", "QK-norm: " + words_.norm + " over all the queries at once (" + short_name(n.q_norm) + ", H·d_k = " +
                                                   std::to_string(f.heads * f.d_h) + " features), then split into heads" +
                                                   (qh ? ": head " + q_sub : ""),
                             qh ? "q_norm(Q)_" + q_sub : "q_norm(Q) split into heads", qn, qh);
                heads_or_one("keys_normed", "And over all the keys (" + short_name(n.k_norm) + ", G·d_k = " + std::to_string(f.kv_heads * f.d_h) + ")" +
                                                (kh ? ": key head " + k_sub : ""),
                             kh ? "k_norm(K)_" + k_sub : "k_norm(K) split into heads", kn, kh);
            } else {
                heads_or_one("queries_normed", "QK-norm: " + words_.norm + " of " + q_of + " (" + short_name(n.q_norm) + ")", "q_norm(Q_" + q_sub + ")",
                             qn, qh);
                if (own_kv) heads_or_one("keys_normed", "And of " + k_of + " (" + short_name(n.k_norm) + ")", "k_norm(K_" + k_sub + ")", kn, kh);
            }
        }
        if (f.rope) {
            const std::size_t rotated = f.rope->dims();
            Step& a = rec_.add_plain("rope_angles", "RoPE: the angles, position × θ_c (base " + whole_or_number(la.rope->base) + ")",
                               f.rope->interleaved ? "φ_p,c = p·θ_c for features 2c − 1 and 2c" : "φ_p,c = p·θ_c for features c and c + " + std::string(rotated == f.d_h ? "d_k" : "r") + "/2",
                               to_trace(f.rope->angles), tokens_features);
            a.note = f.rope->interleaved ? "The interleaved layout: feature 2c − 1 is rotated with feature 2c, as the checkpoints store " +
                                               short_name(n.query) + " and " + short_name(n.key) + "."
                                         : "Hugging Face's layout (rotate_half): feature c is rotated with feature c + " + std::to_string(rotated / 2) +
                                               ", as the checkpoints store " + short_name(n.query) + " and " + short_name(n.key) + ".";
            if (la.rope->proportion > 0.0)
                a.note += " Proportional RoPE (rope_type proportional): the frequencies are base^(−2c/d_k) over the whole head, and only the first " +
                          std::to_string(static_cast<std::size_t>(std::floor(la.rope->proportion * static_cast<double>(f.d_h) / 2.0))) + " of the " +
                          std::to_string(f.d_h / 2) + " pairs turn (partial_rotary_factor " + format_number(la.rope->proportion) + "); the others' angle is 0.";
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
            if (la.window && config_.layer_specs.size() > l && std::any_of(config_.layer_specs.begin(), config_.layer_specs.end(), [](const LayerSpec& o) { return !o.window; }))
                a.note += " A sliding-window layer: its RoPE is " + std::string(sc.kind == RopeScaling::Kind::none ? "not rescaled" : "rescaled too") + ".";
            heads_or_one("queries_rotated", qh ? "Head " + q_sub + "'s queries after RoPE" : "The queries after RoPE",
                         "Q_" + q_sub + "·cos + rotate_half(Q_" + q_sub + ")·sin", f.qh, qh);
            heads_or_one("keys_rotated", (kh ? "Key head " + k_sub + "'s keys after RoPE" : "The keys after RoPE") +
                                             (own_kv ? std::string() : ": layer " + std::to_string(*la.kv_from + 1) + "'s, shared"),
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
    const std::string sink_note = "Learned sinks (" + config_.family->heads.sinks +
                                  "): each head's sink logit joins every row as one more column before the softmax and is dropped after, so "
                                  "a row's weights sum to 1 minus the sink's share (sink_share).";
    CellMask weights_mask{true, f.window};  // with an indexer (DeepSeek-V3.2): the keys it dropped hatched too
    if (latent && index_kept_.size()) {
        weights_mask.keys = index_kept_.shape(2);
        for (float v : index_kept_) weights_mask.kept.push_back(v != 0.0f ? 1 : 0);
    }
    const std::string index_note = "DeepSeek Sparse Attention: only the keys the indexer kept (kept) take part; the others' scores get −∞ before the softmax, "
                                   "so their weights are 0 in every head.";
    if (spec_.head) {  // one head: its T×T matrices
        const std::size_t h = *spec_.head;
        const std::string of = " of head " + std::to_string(h + 1);
        rec_.add("scores", "Scores" + of, "ω_" + std::to_string(h + 1) + " = Q_" + std::to_string(h + 1) + "·K_" + std::to_string(h / (f.heads / f.kv_heads) + 1) + "ᵀ", Cube(xt::view(f.scores, xt::all(), h)),
                 tokens_tokens);
        rec_.mask_from_here(weights_mask);
        Step& w = rec_.add_with_row_sums("weights", kind + of + " (one of " + heads_words(f.heads, f.d_h) + ")", formula,
                                         Cube(xt::view(f.weights, xt::all(), h)), tokens_tokens);
        rec_.mask_from_here(std::nullopt);
        if (!weights_mask.kept.empty()) w.note = index_note;
        if (sinks) {
            w.note = sink_note;
            rec_.add("sink_share", "The sink's share of every row" + of, "1 − Σ_j A_h,ij", Mat(xt::view(f.sink_share, xt::all(), h, xt::all())), {Axis::token});
        }
        rec_.add("head_outputs", "Its context vectors", "Z_h = A_h·V" + group, Cube(xt::view(f.head_outputs, xt::all(), h)), tokens_features);
    } else {
        const std::string weights_title = kind + " of every head (" + heads_words(f.heads, f.d_h) + ")";
        const std::string scores_title = "Scores of every head", scores_formula = "ω_h = Q_h·K" + group + "ᵀ";
        if (f.square_summarised) {  // only their statistics were made
            const std::vector<std::size_t> square = {f.heads, f.rows, f.kh.shape(2)};
            rec_.add_summary("scores", scores_title, scores_formula, square, f.qh.shape(0), head_tokens_tokens, f.scores_stats);
            rec_.mask_from_here(weights_mask);
            rec_.add_summary("weights", weights_title, formula, square, f.qh.shape(0), head_tokens_tokens, f.weights_stats);
        } else {  // a summary: summed where they are
            rec_.add("scores", scores_title, scores_formula, f.scores, head_tokens_tokens);
            rec_.mask_from_here(weights_mask);
            rec_.add_with_row_sums("weights", weights_title, formula, f.weights, head_tokens_tokens);
            if (!weights_mask.kept.empty()) rec_.trace().steps.back().note = index_note;
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
        rec_.add("gate", "The output gate: the second half of each head's " + short_name(config_.family->heads.query) + " rows", "G = " +
                             (words_.pre ? words_.n1 + "(x)" : std::string("x")) + "·W_gateᵀ", f.gate, tokens_features);
        rec_.add("gated", "The context through the gate", "Z ⊙ σ(G)", f.gated, tokens_features);
    }
    rec_.add("output", "The attention's output: " + words_.out, std::string(f.gate.size() ? "(Z ⊙ σ(G))" : "Z") + "·W_o" + words_.t +
                                                                    bias(latent ? &latent->w.o_proj : &heads->w.out_proj.value(), "o"),
             f.output, tokens_features);
}

}  // namespace attnwalk::model_walk
