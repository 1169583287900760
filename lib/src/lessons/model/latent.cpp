// Latent attention (MLA) as the model walk narrates it: the latent and the shared rotary
// key, then the layer's heads as [nope | rope].
#include "model_walk.hpp"

namespace attnwalk::model_walk {

// A latent attention layer (MLA): the latent and the shared rotary key, then its heads as heads() records them.
void PromptTap::latent(std::size_t l, const LatentForward& f) {
    if (l != spec_.layer) return;
    const LatentWeights& w = *weights_.blocks[l].latent;
    const LatentPart& n = config_.family->latent;
    const std::string in = words_.pre ? words_.n1 + "(x)" : "x";
    Step& c = rec_.add("latent_kv", "Layer " + std::to_string(l + 1) + ": the latent c_KV, " + std::to_string(w.rank()) + " numbers per token (" +
                                        short_name(n.kv_a) + ", then " + short_name(n.kv_a_norm) + ")",
                       "c_KV = RMSNorm((" + in + "·W_DKVᵀ)[:r])", f.latent, tokens_features);
    c.note = "Latent attention (MLA): every head's keys and values are made from this one vector per token (" + short_name(n.kv_b) +
             " up-projects it), so a cache keeps r = " + std::to_string(w.rank()) + " numbers and the " + std::to_string(w.rope) +
             " of keys_rope per token and layer, where the heads' keys and values would take H·(d_nope + d_rope + d_v) = " +
             std::to_string(w.heads * (w.qk_head() + w.value)) + ".";
    rec_.add("keys_rope", "The rotary key part, one for every head, after RoPE (" + std::to_string(w.rope) + " features" +
                              (config_.latent_interleave ? ", pairs interleaved in the weights: " + config_.family->latent.interleave : std::string()) + ")",
             "k_rope = RoPE((" + in + "·W_DKVᵀ)[r:])", f.k_rope, tokens_features);
}

void PromptTap::latent_heads(std::size_t l, const Forward& f, const std::string& in) {
    const BlockWeights& bw = weights_.blocks[l];
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
}

}  // namespace attnwalk::model_walk
