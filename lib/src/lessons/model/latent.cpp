// Latent attention (MLA) as the model walk narrates it: the latent and the shared rotary
// key, then the layer's heads as [nope | rope].
#include "model_walk.hpp"

namespace attnwalk::model_walk {

// A latent attention layer (MLA): the latent and the shared rotary key, then its heads as heads() records them.
void PromptTap::latent(std::size_t l, const LatentForward& f) {
    const LatentWeights& w = weights_.blocks[l].attention->get<LatentBlock>().w;
    if (keeps_cells(l)) latent_kept_ = latent_parts(f, w);  // its heads' hook keeps it with the Forward
    if (l != spec_.layer) return;
    const LatentPart& n = config_.family->latent;
    const std::string in = words_.pre ? words_.n1 + "(x)" : "x";
    Step& c = rec_.add("latent_kv", "Layer " + std::to_string(l + 1) + ": the latent c_KV, " + std::to_string(w.rank()) + " numbers per token (" +
                                        short_name(n.kv_a) + ", then " + short_name(n.kv_a_norm) + ")",
                       "c_KV = RMSNorm((" + in + "·W_DKVᵀ)[:r])", f.latent, tokens_features);
    c.note = "Latent attention (MLA): every head's keys and values are made from this one vector per token (" + short_name(n.kv_b) +
             " up-projects it), so a cache keeps r = " + std::to_string(w.rank()) + " numbers and the " + std::to_string(w.rope) +
             " of keys_rope per token and layer, where the heads' keys and values would take H·(d_nope + d_rope + d_v) = " +
             std::to_string(w.heads * (w.qk_head() + w.value)) + ".";
    const std::string interleave_field = n.interleave.empty() ? std::string("always, in this family") : n.interleave;
    rec_.add("keys_rope", "The rotary key part, one for every head, after RoPE (" + std::to_string(w.rope) + " features" +
                              (config_.latent_interleave ? ", pairs interleaved in the weights: " + interleave_field : std::string()) + ")",
             "k_rope = RoPE((" + in + "·W_DKVᵀ)[r:])", f.k_rope, tokens_features);
    if (f.index && f.top) indexer(l, f, *w.indexer);
}

// DeepSeek Sparse Attention's indexer in a latent layer (DeepSeek-V3.2): its queries from the
// query latent, its keys, its gates, the index scores, the keys each query keeps.
void PromptTap::indexer(std::size_t l, const LatentForward& f, const LatentIndexerWeights& w) {
    const IndexerForward& ix = *f.index;
    const TopKeys& top = *f.top;
    const std::string in = words_.pre ? words_.n1 + "(x)" : "x";
    const std::string H = std::to_string(w.heads), d = std::to_string(w.head_dim()), rope = std::to_string(w.rope);
    const std::string module = short_name(config_.family->latent.indexer);
    rec_.add("index_queries", "Layer " + std::to_string(l + 1) + ": the indexer's queries (" + module + ".wq_b on the query latent), " + heads_words(w.heads, w.head_dim()) +
                                  ", the first " + rope + " features after RoPE",
             "q^I_j = RoPE(c_Q·W_q_bᵀ)_j, c_Q = RMSNorm(" + in + "·W_qaᵀ)", ix.qh, head_tokens_features)
        .note = "DeepSeek Sparse Attention (DeepSeek-V3.2): a small attention of its own, the lightning indexer, chooses which keys each query attends to. "
                "Its queries come from the query latent the heads' queries come from; RoPE turns their first " + rope +
                " features in the half-split layout (feature c with c + " + std::to_string(w.rope / 2) + "), not the heads' interleaved one.";
    rec_.add("index_keys", "The indexer's keys: one per token for all " + H + " index heads (wk, then the LayerNorm k_norm, then RoPE on the first " + rope + ")",
             "k^I = RoPE(LayerNorm(" + in + "·W_kᵀ))", ix.k, tokens_features)
        .note = "d_I = " + d + " features per token: when generating, the cache keeps them beside the latent and k_rope.";
    Step& gates = rec_.add("index_gates", "Each index head's weight for every query (weights_proj)", "w = " + in + "·W_projᵀ · H_I^−½, H_I^−½ = " + format_number(ix.gate_scale),
                           ix.gates, tokens_features);
    for (std::size_t h = 0; h < w.heads; ++h) gates.labels.push_back("w_" + std::to_string(h + 1));
    gates.note = "A plain linear weight scaled by H_I^−½ (Hugging Face's DeepseekV32Indexer), not a softmax over the heads: a weight may be negative.";
    rec_.mask_from_here(CellMask{});
    Step& is = rec_.add("index_scores", "The index scores: the gated sum of the index heads", "I_ts = Σ_j w_tj·ReLU(q^I_tj·k^I_s · d_I^−½), d_I^−½ = " + format_number(ix.scale),
                        ix.scores, tokens_tokens);
    is.may_be_non_finite = true;
    is.note = "−∞ after the query (the causal mask, added before the selection). Each query keeps the " + config_.family->latent.index_topk + " = " + std::to_string(w.topk) +
              " keys it scores highest (torch.topk, ties as its CPU loop orders them); a row that sees no more keeps them all.";
    rec_.mask_from_here(std::nullopt);
    Step& kept_step = rec_.add("kept", "The keys each query keeps: " + std::to_string(top.k) + " at most (" + config_.family->latent.index_topk + " " + std::to_string(w.topk) + ")",
                          "M_ts = 1 if s ∈ topk(I_t) and s ≤ t", top.kept, tokens_tokens);
    kept_step.legend = "1 = kept, 0 = masked (not among the top k, or after the query)";
    const std::size_t T = top.kept.shape(1), S = top.kept.shape(2);
    std::size_t dropped = 0, pairs = 0;
    for (std::size_t t = 0; t < T; ++t)
        for (std::size_t s = 0; s <= t + (S - T) && s < S; ++s) {
            ++pairs;
            dropped += top.kept(0, t, s) == 0.0f ? 1 : 0;
        }
    kept_step.note = grouped(dropped) + " of the " + grouped(pairs) + " causal pairs dropped: every head's weight there is 0 (their scores get −∞ before the softmax).";
    index_kept_ = top.kept;
}

std::shared_ptr<LatentSource> PromptTap::latent_parts(const LatentForward& f, const LatentWeights& w) const {
    auto S = std::make_shared<LatentSource>();
    S->weights = std::shared_ptr<const LatentWeights>(model_, &w);
    S->f.scaling = f.scaling;  // the parts a cell reads; the T×T weights and the outputs are the Forward's
    S->f.q_a = f.q_a;
    S->f.q_a_normed = f.q_a_normed;
    S->f.q = f.q;
    S->f.kv_a = f.kv_a;
    S->f.latent = f.latent;
    S->f.q_nope = f.q_nope;
    S->f.q_rope_plain = f.q_rope_plain;
    S->f.q_rope = f.q_rope;
    S->f.k_rope_plain = f.k_rope_plain;
    S->f.k_rope = f.k_rope;
    S->f.k_nope = f.k_nope;
    S->f.tables = f.tables;
    S->f.scores_nope = f.scores_nope;
    S->f.scores_rope = f.scores_rope;
    S->interleave = config_.latent_interleave;
    const LatentPart& n = config_.family->latent;
    S->kv_a = short_name(n.kv_a);
    S->kv_b = short_name(n.kv_b);
    S->q_a = short_name(n.q_a);
    S->q_b = short_name(n.q_b);
    S->query = short_name(n.query);
    S->kv_a_norm = short_name(n.kv_a_norm);
    S->q_a_norm = short_name(n.q_a_norm);
    return S;
}

Scale PromptTap::latent_scale(std::size_t l, float scaling) const {
    const std::size_t d = config_.head_size();
    const double plain = 1.0 / std::sqrt(static_cast<double>(d)), mscale2 = static_cast<double>(scaling) / plain;
    Scale s;
    s.value = scaling;
    s.times = true;
    const std::string root = "1/√(d_nope + d_rope) = 1/√" + std::to_string(d);
    if (std::abs(mscale2 - 1.0) < 1e-6) {
        s.symbol = "1/√" + std::to_string(d);
        s.words = "the softmax scale " + root + " = " + format_number(scaling);
        return s;
    }
    const LayerSpec& la = config_.layer_specs[l];
    s.symbol = "mscale²/√" + std::to_string(d);
    s.words = "the softmax scale mscale²/√(d_nope + d_rope) = " + format_number(scaling);
    s.why = "The plain scale " + root + " = " + format_number(plain) + ", times mscale² = " + format_number(mscale2) + ": YaRN's mscale = 0.1·mscale_all_dim·ln(factor) + 1 = " +
            format_number(std::sqrt(mscale2)) + " for the context stretched " + (la.rope ? format_number(la.rope->scaling.factor) + " times" : std::string("by rope_scaling")) +
            " (rope_scaling's factor), squared because DeepSeek-V3 multiplies the softmax scale by it where YaRN would multiply q and k each; "
            "it sharpens the softmax as the longer context spreads it.";
    return s;
}

void PromptTap::latent_heads(std::size_t l, const Forward& f, const std::string& in) {
    const LatentWeights& lw = weights_.blocks[l].attention->get<LatentBlock>().w;
    const std::string H = std::to_string(f.heads), nope = std::to_string(lw.nope), rope = std::to_string(lw.rope);
    const std::string qsrc = lw.q_a_proj ? "RMSNorm(" + in + "·W_qaᵀ)·W_qbᵀ" : in + "·W_qᵀ";
    rec_.add("queries", "Layer " + std::to_string(l + 1) + ": queries, " + H + " heads, " + nope + " + " + rope + " features each (the last " + rope +
                            " turn with RoPE)" + (lw.q_a_proj ? ", through a query latent of " + std::to_string(lw.query_rank()) : ""),
             "Q = " + qsrc, f.q, tokens_features);
    rec_.add("keys", "Keys: per head [k_nope from c_KV·W_UKᵀ | the shared k_rope]", "K_h = [c_KV·W_UK,hᵀ | k_rope]", f.k, tokens_features);
    rec_.add("values", "Values: per head c_KV·W_UV,hᵀ (" + std::to_string(lw.value) + " features)", "V_h = c_KV·W_UV,hᵀ", f.v, tokens_features);
    rec_.add("queries_rotated", "Each head's query after RoPE on its last " + rope + " features" +
                                    (config_.latent_interleave ? " (their pairs de-interleaved first, as keys_rope's)" : ""),
             "Q_h = [q_nope | RoPE(q_rope)]", f.qh, head_tokens_features)
        .note = "The scores are these rows times the keys: ω_h = Q_h·K_hᵀ = q_nope·k_nopeᵀ + q_rope·k_ropeᵀ.";
}

}  // namespace attnwalk::model_walk
