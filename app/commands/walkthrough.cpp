// attnwalk walkthrough: the chapter in order, each part one command line of this tool
// (so that "run this part alone" gives exactly the same trace) and a paragraph.
#include "walkthrough.hpp"

#include "commands.hpp"

namespace attnwalk::app {

const std::vector<SectionPlan>& walkthrough_plan() {
    static const std::vector<SectionPlan> plan = {
        {"scores", "Attention scores",
         "Self-attention starts by asking, for every token, how well it matches every other token. Without any "
         "trainable weights the match is the dot product of two embeddings: large when the vectors point the same "
         "way. One query against every token gives one row of scores; all queries at once are a single matrix "
         "product of the embeddings with their own transpose.",
         "ω_ij = x_i·x_j, all at once ω = X·Xᵀ", "scores"},
        {"softmax", "From scores to weights",
         "Scores are turned into weights that are positive and sum to 1 along each row. Dividing by the sum works "
         "only for positive scores; the softmax works for any, and the stable softmax subtracts the row maximum "
         "first so that exp never overflows. The three are shown side by side, each row's sum beside it.",
         "α_ij = exp(ω_ij − max_k ω_ik) / Σ_k exp(ω_ik − max_k ω_ik)", "softmax"},
        {"context", "Context vectors",
         "Each token's context vector is the weighted sum of all the embeddings, using that token's row of weights. "
         "It is the token's embedding enriched with what the other tokens contribute. For all tokens at once this is "
         "the weights matrix times the embeddings.",
         "z_i = Σ_j α_ij·x_j, all at once Z = A·X", "context"},
        {"projections", "Trainable projections: queries, keys, values",
         "Real attention does not compare raw embeddings. Three trainable matrices project each token into a query, "
         "a key and a value; scores are queries times keys, scaled by the square root of the key size so that the "
         "softmax does not saturate, and the context mixes the values. The weights here are drawn like the "
         "textbook's SelfAttention_v1 after torch.manual_seed(123).",
         "Q = X·W_q, K = X·W_k, V = X·W_v, A = softmax(Q·Kᵀ / √d_k), Z = A·V", "context --seed 123 --init rand"},
        {"causal", "Causal attention",
         "A language model predicts the next token, so a token must not see the tokens after it. Two ways: take the "
         "softmax, zero the future and renormalise each row; or set the future scores to minus infinity before the "
         "softmax. They give the same weights. The weights are drawn like the textbook's SelfAttention_v2 after "
         "torch.manual_seed(789).",
         "A = softmax(ω / √d_k with ω_ij = −∞ for j > i)", "causal --seed 789"},
        {"dropout", "Dropout on the attention weights",
         "During training, dropout zeroes random attention weights so that the model does not lean on a few "
         "connections. With rate p each weight is kept with probability 1 − p, and the kept ones are multiplied by "
         "1/(1 − p) so that the expected row sum stays the same. At inference dropout does nothing. Here it acts on "
         "a 6×6 matrix of ones after torch.manual_seed(123), as in the textbook.",
         "A′ = A ⊙ keep / (1 − p), keep_ij ~ Bernoulli(1 − p)", "dropout --ones 6 --dropout-seed 123"},
        {"mha", "Multi-head attention",
         "Several causal attention heads run side by side, each with its own projections, and their outputs are "
         "concatenated. The efficient form projects once, splits the result into heads with view and transpose, "
         "attends per head, merges the heads back and mixes them with an output projection. The input is stacked "
         "into a batch of two, as in the textbook's MultiHeadAttention after torch.manual_seed(123).",
         "head_k = softmax(Q_h·K_hᵀ / √d_k + M)·V_h, output = concat(head_1 … head_H)·W_o + b_o",
         "mha --batch 2 --seed 123 --heads 2"},
    };
    return plan;
}

const std::vector<SectionPlan>& beyond_plan() {
    static const std::vector<SectionPlan> plan = {
        {"kvcache", "Beyond the chapter: the KV cache",
         "A model that writes one token at a time would recompute every key and value at every step. The cache keeps "
         "them: each step projects only the new token, appends its key and value, and attends with the one new query. "
         "The outputs are those of the causal multi-head attention on the whole sentence.",
         "K_cache = [K_cache; x_t·W_k], α_t = softmax(q_t·K_cacheᵀ / √d_k)", "kvcache --compact"},
        {"gqa", "Beyond the chapter: grouped-query attention",
         "Query heads can share keys and values: G key/value heads serve H query heads (G = 1 is multi-query "
         "attention). The layer has fewer parameters and, above all, a smaller KV cache.",
         "ω_h = Q_h·K_gᵀ with g = ⌈h / (H/G)⌉, heads counted from 1", "mha --heads 4 --d-out 8 --kv-heads 2 --steps keys,keys_split,weights"},
        {"window", "Beyond the chapter: sliding-window attention",
         "Each token sees only itself and the W − 1 tokens before it: the causal mask becomes a band, and a cache "
         "needs to hold only W entries.",
         "mask_ij = 1 if i − W < j ≤ i", "mha --window 3 --steps mask,weights"},
        {"rope", "Beyond the chapter: rotary position embeddings",
         "Instead of adding position vectors to the input, RoPE rotates each query and key by an angle proportional "
         "to its position. A dot product of two rotated vectors sees only the difference of their angles, so the "
         "scores depend on relative positions: shifting every position changes nothing.",
         "q′ = q·cos(p·θ) + rotate_half(q)·sin(p·θ), θ_c = base^(−2(c − 1)/d_k)", "rope --compact"},
        {"flash", "Beyond the chapter: the online softmax of FlashAttention",
         "The softmax needs a row's maximum and sum, which seem to need the whole row. The online softmax goes block "
         "by block of keys: it keeps a running maximum, a running sum and a running output, rescaling the last two "
         "whenever the maximum grows. The result is the same, without ever holding the T×T matrix.",
         "m′ = max(m, rowmax s_b), ℓ′ = ℓ·e^(m−m′) + Σ e^(s_b−m′), O′ = O·e^(m−m′) + e^(s_b−m′)·V_b",
         "flash --block 2 --causal --steps block1.*,flash_output,context,max_difference"},
        {"sdpa", "Beyond the chapter: PyTorch's scaled_dot_product_attention",
         "In practice attention is one call. Its masks have conventions worth knowing: a bool attn_mask is True "
         "where a query may attend (nn.MultiheadAttention's is True where it may not), and is_causal aligns the mask "
         "top-left, which is wrong for the last queries of a longer sequence.",
         "softmax(Q·Kᵀ·scale + attn_bias)·V", "sdpa --queries 2 --is-causal --compact"},
        {"mla", "Beyond the chapter: multi-head latent attention",
         "DeepSeek's attention caches one small latent per token instead of every head's keys and values, and makes "
         "each head's key and value from it again; a small rotary part, shared by the heads, carries the positions. "
         "The queries can absorb the up-projection, so that attention runs on the latents themselves.",
         "c_KV = x·W_DKV, k_h = c_KV·W_UK,h, v_h = c_KV·W_UV,h, ω_h = q_h,nope·k_h + q_h,rope·k_rope", "mla --compact"},
        {"deltanet", "Beyond the chapter: Gated DeltaNet",
         "A linear-attention layer keeps a fixed-size state instead of a cache that grows: each token decays the "
         "state, reads what it predicts for its key, and writes the error back with strength β. Unrolled, the "
         "recurrence is one T×T matrix per head, without a softmax, whose rows need not sum to 1.",
         "S ← γ_t·S, S ← S + β_t·k_t·(v_t − Sᵀk_t)ᵀ, o_t = Sᵀq_t", "deltanet --decay-rate 0.1 --compact"},
        {"kvshare", "Beyond the chapter: keys and values shared across layers",
         "Grouped-query attention shares keys and values between the heads of one layer; Gemma 4's smaller models also "
         "share them between layers. The last layers of the stack make no keys or values at all: each keeps its own "
         "queries and attends with the keys and values an earlier layer left in its cache, so only the producing layers "
         "keep a cache. Handing those keys and values over explicitly gives the same output, bit for bit.",
         "Q_l = X_l·W_q,l for every layer l; K_l, V_l = K_P, V_P for l > P", "kvshare --compact"},
        {"dsa", "Beyond the chapter: DeepSeek Sparse Attention",
         "DeepSeek-V3.2 lets each query attend to at most k keys. A small lightning indexer scores every earlier key "
         "cheaply, with a few ReLU heads weighted per query; the k best keys are kept, and the ordinary softmax runs "
         "over them alone. A query that sees no more than k keys is unchanged; the others lose the weight of the keys "
         "they dropped.",
         "I_ts = Σ_j w_tj·ReLU(q^I_tj·k^I_s), A = softmax((ω + M_DSA) / √d_k) with M_DSA = 0 on the top k of I_t, −∞ elsewhere",
         "dsa --compact"},
    };
    return plan;
}

ATTNWALK_COMMAND(walkthrough) {
    // the walkthrough runs the chapter's lessons in turn: no lesson of its own
    CLI::App* sub = cli.add_subcommand("walkthrough", "The whole chapter in order: scores, softmax, context, projections, causal, dropout, multi-head.");
    add_shell_options(OptionBuilder(*sub), shell, false);
    sub->footer(std::string("Examples:\n") +
                                "  attnwalk walkthrough                 # every section with the textbook's numbers\n"
                                "  attnwalk walkthrough --step          # pause after each section (press Enter)\n"
                                "  attnwalk walkthrough --beyond        # then KV cache, GQA, windows, RoPE, FlashAttention, SDPA, MLA,\n"
                                "                                       # DeltaNet, KV sharing across layers, sparse attention\n"
                                "  attnwalk walkthrough --text \"cats climb trees during\" --vocab data/vocab.json\n"
                                "  attnwalk walkthrough --html chapter.html   # one page: every part, a click explains a cell\n");
    sub->add_flag("--step", shell.step, "Pause after each section until Enter (only when stdin is a terminal)")
        ->excludes(sub->get_option("--json"));
    sub->add_option("--html", shell.html,
                    "Also write the whole walkthrough as one self-contained HTML page: each part's paragraph, formula and its "
                    "own page of heatmaps (no network needed)")
        ->check(non_empty());
    sub->add_flag("--beyond", shell.beyond, "After the chapter, the attention of today's LLMs (kvcache, gqa, window, rope, flash, sdpa, mla, deltanet, kvshare, dsa)");
    sub->callback([&shell] { shell.walkthrough = true; });
}

}  // namespace attnwalk::app
