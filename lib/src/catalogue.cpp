#include "attnwalk/catalogue.hpp"

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
        {"out_proj.weight", "the output projection, x·W layout (a parameter)"},
        {"out_proj.bias", "the output projection's bias (a parameter)"},
        {"queries", "Q = X·W_query (+ b)"},
        {"keys", "K = X·W_key (+ b)"},
        {"values", "V = X·W_value (+ b)"},
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
        {"mask", "the causal mask: 1 on and below the diagonal"},
        {"weights_unmasked", "(a) softmax over every token"},
        {"weights_masked", "(a) future weights set to 0"},
        {"weights_renormalised", "(a) each row divided by its sum"},
        {"scores_masked", "(b) scores with −∞ above the diagonal"},
        {"max_difference", "the largest difference between (a) and (b)"},
        // dropout
        {"ones", "the matrix of ones dropout is shown on (in place of the weights)"},
        {"dropout_mask", "1 = kept, 0 = dropped"},
        {"dropout_scale", "1/(1 − p) in float32"},
        {"weights_dropped", "the weights after dropout: kept values × 1/(1 − p) (unchanged in eval mode)"},
        // the context
        {"head_outputs", "each head's context vectors A_h·V_h"},
        {"context", "the context vectors (heads concatenated)"},
        {"output", "the output projection of the context (or the context itself)"},
        // one cell written out
        {"explain_query", "the query of row I, row by row of W_query"},
        {"explain_key", "the key of column J, row by row of W_key"},
        {"explain_score", "the score of the cell, term by term"},
        {"explain_scaled", "the score divided by the scale"},
        {"explain_max", "the maximum of row I"},
        {"explain_row", "row I as the softmax reads it"},
        {"explain_exp", "exp(row − max)"},
        {"explain_sum", "the sum of the exponentials"},
        {"explain_weight", "the weight of the cell: its exponential times 1/sum"},
        {"explain_context", "the context vector of row I, as a weighted sum"},
    };
    return steps;
}

const StepInfo* find_step(const std::string& id) {
    std::string key = id;
    if (id.rfind("head", 0) == 0) {  // headN.name -> headN.name with the literal N
        std::size_t end = 4;
        while (end < id.size() && std::isdigit(static_cast<unsigned char>(id[end]))) ++end;
        if (end > 4 && end < id.size() && id[end] == '.') key = "headN" + id.substr(end);
    }
    for (const StepInfo& s : step_catalogue())
        if (key == s.id) return &s;
    return nullptr;
}

}  // namespace attnwalk
