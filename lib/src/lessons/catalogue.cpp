#include "attnwalk/lessons/catalogue.hpp"

#include <cctype>

namespace attnwalk {

const std::vector<StepInfo>& step_catalogue() {
    static const std::vector<StepInfo> steps = {
        // the projections
        {"W_query", "the query projection, d_in×d_out in x·W layout (a parameter)"},
        {"W_key", "the key projection (a parameter)"},
        {"W_value", "the value projection (a parameter)"},
        {"b_query", "the query bias (a parameter)"},
        {"b_key", "the key bias (a parameter)"},
        {"b_value", "the value bias (a parameter)"},
        {"headN.W_query", "the wrapper's per-head query projection (a parameter)"},
        {"headN.W_key", "the wrapper's per-head key projection (a parameter)"},
        {"headN.W_value", "the wrapper's per-head value projection (a parameter)"},
        {"headN.b_query", "the wrapper's per-head query bias (a parameter)"},
        {"headN.b_key", "the wrapper's per-head key bias (a parameter)"},
        {"headN.b_value", "the wrapper's per-head value bias (a parameter)"},
        {"W_qkv", "the combined projection W_query | W_key | W_value, d_in×3·d_out (a parameter)"},
        {"b_qkv", "the combined bias b_query | b_key | b_value (a parameter)"},
        {"out_proj.weight", "the output projection, x·W layout (a parameter)"},
        {"out_proj.bias", "the output projection's bias (a parameter)"},
        {"queries", "Q = X·W_query (+ b)"},
        {"keys", "K = X·W_key (+ b)"},
        {"values", "V = X·W_value (+ b)"},
        {"qkv", "queries, keys and values from the combined projection, X·W_qkv (+ b)"},
        {"queries_split", "the queries viewed as heads"},
        {"keys_split", "the keys viewed as heads"},
        {"values_split", "the values viewed as heads"},
        // scores and their normalisation
        {"scores_loop", "one query's scores, one dot product at a time"},
        {"scores", "ω = Q·Kᵀ (X·Xᵀ without projections)"},
        {"scores_scaled", "ω divided by the scale"},
        {"scores_shifted", "ω minus its row maximum"},
        {"weights_sum", "ω divided by its row sum"},
        {"weights_naive", "exp(ω) divided by its row sum"},
        {"weights", "the attention weights: the softmax of the (masked, scaled) scores, before any dropout"},
        // the causal mask
        {"mask", "the mask: 1 where a query may attend (causal: on and below the diagonal; a window: the band)"},
        {"weights_unmasked", "(a) softmax over every token"},
        {"weights_masked", "(a) future weights set to 0"},
        {"weights_renormalised", "(a) each row divided by its sum"},
        {"scores_masked", "(b) scores with −∞ above the diagonal"},
        {"max_difference", "the largest |difference| between two ways that must agree (causal: (a) and (b))"},
        // dropout
        {"ones", "the matrix of ones dropout is shown on (in place of the weights)"},
        {"dropout_mask", "1 = kept, 0 = dropped"},
        {"dropout_scale", "1/(1 − p) in float32"},
        {"weights_dropped", "the weights after dropout: kept values × 1/(1 − p) (unchanged in eval mode)"},
        // the context
        {"head_outputs", "each head's context vectors A_h·V_h"},
        {"context", "the context vectors (heads concatenated)"},
        {"output", "the output projection of the context (or the context itself)"},
        // kvcache: decoding token by token (N = the token's position)
        {"stepN.query", "the new token's query, every head"},
        {"stepN.key", "the new token's key, every key/value head"},
        {"stepN.value", "the new token's value, every key/value head"},
        {"stepN.keys_cache", "the keys cached so far, the new one appended"},
        {"stepN.values_cache", "the values cached so far, the new one appended"},
        {"stepN.scores", "the new query against every cached key, per head"},
        {"stepN.weights", "the new row of attention weights, per head"},
        {"stepN.output", "the new token's output"},
        {"output_full", "the same layer run on the whole sequence at once (causal), for comparison"},
        {"cache_bytes", "the KV cache's size in bytes for the configuration"},
        // rope
        {"rope_frequencies", "RoPE's inverse frequencies base^(−2i/d_h)"},
        {"rope_angles", "the rotation angles, position × frequency"},
        {"rope_cos", "cos of the angles"},
        {"rope_sin", "sin of the angles"},
        {"queries_normed", "QK-norm: each head's queries after their RMSNorm (q_norm), before RoPE"},
        {"keys_normed", "QK-norm: each key head's keys after their RMSNorm (k_norm), before RoPE"},
        {"queries_rotated", "the queries after RoPE"},
        {"keys_rotated", "the keys after RoPE"},
        {"scores_position_shift", "the scores with every position shifted by k"},
        // flash: online softmax over blocks of keys (N = the block)
        {"blockN.scores", "the scores of the queries against this block of keys"},
        {"blockN.max", "the running row maximum m after this block"},
        {"blockN.rescale", "exp(m_old − m_new): what the earlier sum and accumulator are multiplied by"},
        {"blockN.sum", "the running sum ℓ of exponentials after this block"},
        {"blockN.accumulator", "the running unnormalised output O after this block"},
        {"flash_output", "O / ℓ: the context, from the blocks"},
        // sdpa
        {"attn_mask", "the attn_mask as given (bool: True = attend; float: added)"},
        {"attn_bias", "what SDPA adds to the scaled scores: 0 or −∞ (bool), the floats, the causal −∞"},
        {"mask_mha", "the same mask in nn.MultiheadAttention's convention: True = blocked"},
        {"causal_top_left", "is_causal's mask for L queries and S keys: tril(ones(L, S))"},
        {"causal_bottom_right", "the causal mask aligned to the last key: tril(ones(L, S), diagonal = S − L)"},
        {"weights_safe", "the weights with fully masked rows set to 0 (PyTorch ≥ 2.5's SDPA)"},
        {"weights_large_fill", "the weights with a large negative fill instead of −∞"},
        {"output_large_fill", "the output with the large negative fill"},
        // params
        {"count_query", "parameters of the query projection"},
        {"count_key", "parameters of the key projection"},
        {"count_value", "parameters of the value projection"},
        {"count_out_proj", "parameters of the output projection"},
        {"count_total", "all parameters of the layer"},
        // gpt2: a pretrained model (N = the layer)
        {"token_ids", "the input's token ids"},
        {"token_embeddings", "the rows of wte for the ids"},
        {"position_embeddings", "the rows 0…T−1 of wpe"},
        {"embeddings", "token plus position embeddings: the input of layer 0"},
        {"layerN.ln_1", "LayerNorm before the attention"},
        {"layerN.attention", "the attention's output (c_proj)"},
        {"layerN.attention_norm", "Gemma 3: the RMSNorm of the attention's output (post_attention_layernorm)"},
        {"layerN.residual_1", "the layer's input plus the attention"},
        {"layerN.ln_2", "LayerNorm before the MLP"},
        {"layerN.mlp_hidden", "GELU of the first MLP layer (4C)"},
        {"layerN.mlp", "the MLP's output"},
        {"layerN.mlp_norm", "Gemma 3: the RMSNorm of the MLP's output (post_feedforward_layernorm)"},
        {"layerN.residual_2", "the layer's output: residual_1 plus the MLP"},
        {"attention_grid", "every layer's and head's attention weights (the model view)"},
        {"head_entropy", "per head: the mean entropy of its rows"},
        {"head_max_weight", "per head: the mean largest weight of a row"},
        {"head_first_token", "per head: the mean weight on token 0 (the attention sink)"},
        {"head_previous_token", "per head: the mean weight on the previous token"},
        {"head_diagonal", "per head: the mean weight on the token itself"},
        {"heads_sorted", "the heads ranked by one of those numbers"},
        {"ln_f", "the final LayerNorm"},
        {"logits", "the next token's logits (last position × wteᵀ)"},
        {"top_k_ids", "the ids of the most likely next tokens"},
        {"generated_ids", "the tokens generated greedily, each through the KV cache"},
        {"top_k_logits", "their logits"},
        {"top_k_probs", "their probabilities, softmax(logits / temperature)"},
        // one cell written out
        {"explain_input_query", "a model: the query's row entering the layer, through the layer's norm (or the stream itself, post-norm)"},
        {"explain_input_key", "a model: the key's row entering the layer, likewise (when the key is another token)"},
        {"explain_query", "the query of row I, row by row of W_query"},
        {"explain_key", "the key of column J, row by row of W_key"},
        {"explain_query_normed", "QK-norm: the query of row I after its RMSNorm"},
        {"explain_key_normed", "QK-norm: the key of column J after its RMSNorm"},
        {"explain_query_rotated", "RoPE: the query of row I rotated by its position"},
        {"explain_key_rotated", "RoPE: the key of column J rotated by its position"},
        {"explain_score", "the score of the cell, term by term"},
        {"explain_mask", "1 when key J is visible to query I (causal, inside the window), 0 when masked"},
        {"explain_scaled", "the score divided by the scale"},
        {"explain_max", "the maximum of row I"},
        {"explain_row", "row I as the softmax reads it"},
        {"explain_exp", "exp(row − max)"},
        {"explain_sum", "the sum of the exponentials"},
        {"explain_weight", "the weight of the cell: its exponential times 1/sum"},
        {"explain_context", "the context vector of row I, as a weighted sum"},
        {"explain_share", "α_IJ·v_J: what key J adds to the context of row I, and its share"},
    };
    return steps;
}

const StepInfo* find_step(const std::string& id) {
    std::string key = id;
    for (const std::string prefix : {"head", "step", "block", "layer"}) {  // headN.name -> headN.name with the literal N
        if (id.rfind(prefix, 0) != 0) continue;
        std::size_t end = prefix.size();
        while (end < id.size() && std::isdigit(static_cast<unsigned char>(id[end]))) ++end;
        if (end > prefix.size() && end < id.size() && id[end] == '.') key = prefix + "N" + id.substr(end);
    }
    for (const StepInfo& s : step_catalogue())
        if (key == s.id) return &s;
    return nullptr;
}

}  // namespace attnwalk
