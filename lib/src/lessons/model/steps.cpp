// The model walk's declaration: the steps the gpt2 and model lessons record, under two names.
#include "model_walk.hpp"

namespace attnwalk {

using namespace steps;

// gpt2 and model run the same walk: one declaration of its steps, under two names.
const std::vector<StepDecl>& model_steps() {
    constexpr Models beyond = Models::beyond_gpt2;  // a step only today's families record (the gpt2 lesson leaves it out)
    static const std::vector<StepDecl> steps = joined({{
        {"token_ids", "the input's token ids"},
        {"token_embeddings", "the rows of wte for the ids"},
        {"position_embeddings", "the rows 1…T of wpe (wpe[0:T])"},
        {"embeddings", "token plus position embeddings: the input of layer 1"},
        {"per_layer_embeddings", "per-layer inputs (Gemma 4 E2B, E4B): each token's row of embed_tokens_per_layer × √P, P features for every layer", detail, beyond},
        {"per_layer_projection", "per-layer inputs: the embeddings projected to L·P features (per_layer_model_projection) × C^(−1/2), each layer's P through per_layer_projection_norm", detail, beyond},
        {"per_layer_inputs", "per-layer inputs: (projection + embeddings) × 2^(−1/2), every layer's input", detail, beyond},
        {"layerN.ln_1", "LayerNorm before the attention"},
        {"queries", "Q = X·W_query (+ b)"},
        {"keys", "K = X·W_key (+ b)"},
        {"values", "V = X·W_value (+ b)"},
        {"queries_normed", "QK-norm: each head's queries after their RMSNorm (q_norm), before RoPE", detail, beyond},
        {"keys_normed", "QK-norm: each key head's keys after their RMSNorm (k_norm), before RoPE", detail, beyond},
        {"rope_angles", "the rotation angles, position × frequency", detail, beyond},
        {"latent_kv", "latent attention (DeepSeek-V3): c_KV, each token's latent after its RMSNorm, what the cache keeps (with keys_rope)", detail, beyond},
        {"keys_rope", "latent attention: the rotary key part every head shares, after RoPE (cached too)", detail, beyond},
        {"index_queries", "DeepSeek Sparse Attention's indexer (DeepSeek-V3.2): its queries per index head, wq_b on the query latent, the first d_rope features after RoPE", detail, beyond},
        {"index_keys", "the indexer's keys, one per token for every index head: wk, the LayerNorm k_norm, RoPE (cached when generating)", detail, beyond},
        {"index_gates", "the indexer's weight of each index head for every query, weights_proj(x)·H_I^−½ (not softmaxed)", detail, beyond},
        {"index_scores", "the index scores I_ts = Σ_j w_tj·ReLU(q^I_tj·k^I_s·d_I^−½), −∞ after the query", detail, beyond},
        {"kept", "the keys each query keeps: 1 among its top-k index scores (and not after it), 0 elsewhere; the weights are 0 there", detail, beyond},
        {"queries_rotated", "the queries after RoPE", detail, beyond},
        {"keys_rotated", "the keys after RoPE", detail, beyond},
        {"scores", "ω = Q·Kᵀ (X·Xᵀ without projections)"},
        {"weights", "the attention weights: the softmax of the (masked, scaled) scores, before any dropout", headline | opening},
        {"head_outputs", "each head's context vectors A_h·V_h"},
        {"context", "the context vectors (heads concatenated)"},
        {"gate", "gated attention (Qwen3-Next): the output gate, the second half of each head's q_proj", detail, beyond},
        {"gated", "gated attention: the context times σ(gate), what o_proj reads", detail, beyond},
        {"beta", "a Gated DeltaNet layer (Qwen3-Next): each token's write strength per head, β = σ(x·W_b)", detail, beyond},
        {"decay", "a Gated DeltaNet layer: each token's decay per head, γ = exp(−exp(A_log)·softplus(x·W_a + dt_bias))", detail, beyond},
        {"effective_attention", "a Gated DeltaNet layer: the effective attention matrix per head (the delta rule's terms kept), o = A·V", opening, beyond},
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
        {"layerN.per_layer_input", "per-layer inputs: the layer's P features of per_layer_inputs", detail, beyond},
        {"layerN.per_layer_gated", "per-layer inputs: act(x·W_gateᵀ) ⊙ the layer's input, x the stream after the MLP (per_layer_input_gate)", detail, beyond},
        {"layerN.per_layer_output", "per-layer inputs: the gated features projected back to C (per_layer_projection) through post_per_layer_input_norm, added to the stream", detail, beyond},
        {"layerN.residual_2", "the layer's output: residual_1 plus the MLP"},
        {"attention_grid", "every layer's and head's attention weights (the model view)", view_headline},
        {"head_entropy", "per head: the mean entropy of its rows", view_headline},
        {"head_max_weight", "per head: the mean largest weight of a row", view_headline},
        {"head_first_token", "per head: the mean weight on token 1 from the later tokens (the attention sink)", view_headline},
        {"head_previous_token", "per head: the mean weight on the previous token", view_headline},
        {"head_diagonal", "per head: the mean weight on the token itself", view_headline},
        {"sink_by_depth", "per layer: the weight on token 1 from the later tokens, averaged over the heads (how the sink grows with depth)", view_headline},
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
        {"ablation_per_head", "ablation: the same changes for each head of one layer switched off alone", headline},
        {"roles_ids", "head roles: the random ids, run twice in a row"},
        {"role_induction", "head roles: per layer and head the mean weight n − 1 tokens back, from the first run's last token on (in the second run: the token after the current one's first occurrence)", headline},
        {"role_previous", "head roles: per layer and head the mean weight on the previous token"},
        {"role_duplicate", "head roles: per layer and head the mean weight on the same token's first occurrence"},
        {"roles_ranked", "head roles: every head ranked by its induction score, with its other scores, its weight on the first token and its entropy", headline},
        {"rollout", "attention rollout: how much each position draws on each input token through all the layers", headline},
        {"attribution_heads", "direct logit attribution: each head's share of the answer's logit (or logit difference) at the last position, the final norm's scale frozen", headline},
        {"attribution_layers", "direct logit attribution: each layer's attention and MLP share", headline},
        {"attribution_terms", "direct logit attribution: the embeddings', attention's, MLPs' and biases' terms, their sum and the model's logit", headline},
        {"explain_attribution_output", "direct logit attribution written out: one head's (or layer's part's) output at the last position"},
        {"explain_attribution_direction", "direct logit attribution written out: the direction it is read along, γ ⊙ (W_U[a] − W_U[b])"},
        {"explain_attribution_term", "direct logit attribution written out: its term, the dot product over σ"},
        {"patching_metric", "activation patching: the metric on the clean and on the corrupted prompt", headline},
        {"patching_resid", "activation patching: the stream entering each layer patched at each position, normalised (patched − corrupted)/(clean − corrupted)", headline},
        {"patching_resid_raw", "activation patching: the same, the metric itself"},
        {"patching_heads", "activation patching: each head's output patched at every position, normalised", headline},
        {"patching_heads_raw", "activation patching: the same, the metric itself"},
        {"explain_patching_swap", "activation patching written out: what one patch swaps, the clean and the corrupted numbers"},
        {"explain_patching_metric", "activation patching written out: the patched run's metric and its parts"},
        {"explain_patching_value", "activation patching written out: the metric normalised, (patched − corrupted)/(clean − corrupted)"},
        {"patching_layers", "activation patching: each layer's attention output and MLP output patched, normalised", headline},
        {"patching_layers_raw", "activation patching: the same, the metric itself"},
        {"circuit_qk", "a head's QK circuit: W_Q,h·W_K,gᵀ between the prompt's tokens' embeddings (query × key), the norms' weights folded in", headline},
        {"circuit_qk_offset", "RoPE: the QK circuit with the query Δ positions after the key", headline, beyond},
        {"circuit_ov", "a head's OV circuit: W_V,g·W_O,h from each prompt token's embedding to each prompt token's unembedding", headline},
        {"circuit_ov_eigenvalues", "the eigenvalues of the head's OV circuit over the whole vocabulary (real, imaginary)"},
        {"circuit_copying", "the OV copying score Σ Re λ / Σ |λ|, with its two sums", headline},
    }, explain_steps()});
    return steps;
}
ATTNWALK_LESSON(gpt2, 210) {  // GPT-2 alone: no QK-norm, no RoPE, no norms after the sublayers
    static const LessonDecl lesson{"gpt2", "A pretrained GPT-2 (safetensors): every layer, one layer's attention in full, the next token.", [] {
                                       std::vector<StepDecl> steps;
                                       for (const StepDecl& s : model_steps())
                                           if (s.models == Models::all) steps.push_back(s);
                                       return steps;
                                   }()};
    return lesson;
}
ATTNWALK_LESSON(model, 220) {
    // the families counted from the registry (the command's help lists each by its model_type)
    static const LessonDecl lesson{"model", "A Hugging Face model folder, of any of the " + std::to_string(families().size()) +
                                                " families the loader reads (Llama, Qwen, Gemma, OLMo, SmolLM, gpt-oss, DeepSeek-V3, Cohere, GPT-2): every layer, "
                                                "one in full, the next token.",
                                   model_steps()};
    return lesson;
}


const std::vector<std::string>& head_stat_names() {
    static const std::vector<std::string> names = {"entropy", "max_weight", "first_token", "previous_token", "diagonal"};
    return names;
}

}  // namespace attnwalk
