// A Gated DeltaNet layer as the model walk narrates it: its inputs, gates, state and outputs.
#include "model_walk.hpp"

namespace attnwalk::model_walk {

// A Gated DeltaNet layer (Qwen3-Next's linear attention): its inputs, gates, state and outputs.
void PromptTap::linear(std::size_t l, const GatedDeltaNetForward& f) {
    if (keeps_cells(l) && f.effective.size()) keep_delta(l, f);
    if (l != spec_.layer) return;
    const GatedDeltaNetWeights& w = weights_.blocks[l].attention->get<DeltaNetBlock>().w;
    const std::string in = words_.pre ? words_.n1 + "(x)" : "x", L = std::to_string(l + 1);
    const std::string K = std::to_string(w.taps());
    rec_.add("queries", "Layer " + L + " (Gated DeltaNet): queries, " + heads_words(w.k_heads, w.d_k) + ", after a causal convolution of " + K +
                            " taps and SiLU", "q = SiLU(conv(" + in + "·W_qᵀ))", f.q, tokens_features)
        .note = "A linear-attention layer: no softmax and no cache of keys; each head keeps a state of d_k × d_v numbers that the delta rule "
                "writes token by token (see attnwalk deltanet).";
    rec_.add("keys", "Keys, likewise (L2-normalised inside the delta rule)", "k = SiLU(conv(" + in + "·W_kᵀ))", f.k, tokens_features);
    rec_.add("values", "Values, " + heads_words(w.v_heads, w.d_v), "v = SiLU(conv(" + in + "·W_vᵀ))", f.v, tokens_features);
    rec_.add_plain("beta", "Each token's write strength per value head", "β = σ(" + in + "·W_bᵀ)", to_trace(Mat(xt::view(f.beta, 0))),
                   {Axis::token, Axis::head});
    rec_.add_plain("decay", "Each token's decay per value head: how much of the state it keeps", "γ = exp(−exp(A_log)·softplus(" + in + "·W_aᵀ + dt_bias))",
                   to_trace(Mat(xt::view(f.decay, 0))), {Axis::token, Axis::head});
    // one value head chosen (a head asked for): its matrices; else every head's
    const std::optional<std::size_t> h = spec_.head && *spec_.head < w.v_heads ? spec_.head : std::nullopt;
    const std::size_t shown_head = h.value_or(0);  // read only where h has a value (gcc cannot see it through *h)
    const std::string of = h ? "Head " + std::to_string(shown_head + 1) + "'s " : "Each head's ";
    if (f.effective.size()) {
        const std::string title = h ? "Head " + std::to_string(shown_head + 1) + "'s effective attention matrix: o = A·V, the delta rule's terms kept"
                                    : "The effective attention matrix of every value head: o = A·V, the delta rule's terms kept";
        rec_.mask_from_here(CellMask{true, 0});  // causal: the keys after a query are no part of it
        if (h) rec_.add("effective_attention", title, "A_h (not a softmax: rows need not sum to 1)", Cube(xt::view(f.effective, xt::all(), shown_head)), tokens_tokens);
        else rec_.add("effective_attention", title, "A_h (not a softmax: rows need not sum to 1)", f.effective, head_tokens_tokens);
        rec_.mask_from_here(std::nullopt);
    }
    const std::string read = "outputs, read from its state: o_t = S_tᵀq̂_t";
    Step& ho = h ? rec_.add("head_outputs", of + read, "o_h", Cube(xt::view(f.outputs, xt::all(), shown_head)), tokens_features)
                 : rec_.add("head_outputs", of + read, "o_h", f.outputs, head_tokens_features);
    ho.note = "q̂ and k̂ are q and k L2-normalised, q̂ also × 1/√d_k = 1/√" + std::to_string(w.d_k) + "; value head h reads key head ⌈h / " +
              std::to_string(w.v_heads / w.k_heads) + "⌉ (both counted from 1)" +
              (h ? ": head " + std::to_string(shown_head + 1) + " reads key head " + std::to_string(shown_head / (w.v_heads / w.k_heads) + 1) : std::string()) + ".";
    Step& st = h ? rec_.add_plain("state", of + "state after the last token: all this layer keeps, whatever the length", "S_h (d_k × d_v)",
                                  to_trace(Mat(xt::view(f.state, 0, shown_head))), {Axis::feature, Axis::feature})
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

void PromptTap::keep_delta(std::size_t l, const GatedDeltaNetForward& f) {
    const GatedDeltaNetWeights& w = weights_.blocks[l].attention->get<DeltaNetBlock>().w;
    auto D = std::make_shared<DeltaSource>();
    D->f.q = f.q;  // what a cell reads: the rows before the delta rule, and the matrix it is checked against
    D->f.k = f.k;
    D->f.effective = f.effective;
    D->in = delta_rule_inputs(f, w);
    D->k_heads = w.k_heads;
    D->d_k = w.d_k;
    KeptAttention k;
    k.x = weights_.blocks[l].norm_1 ? normed_ : stream_;
    k.layer = layer_source(l);
    k.delta = std::move(D);
    kept.push_back(std::move(k));
}

}  // namespace attnwalk::model_walk
