// A mixture of experts as the model walk narrates it: the router, the chosen experts and their weights.
#include "model_walk.hpp"

namespace attnwalk::model_walk {

void PromptTap::experts(std::size_t l, const MoeOutput& r) {
    if (spec_.view) {
        chosen_by_layer.resize(config_.layers);
        chosen_by_layer[l] = r.chosen;
    }
    if (l != spec_.layer && !spec_.all_layers) return;
    const std::string L = "layer" + std::to_string(l + 1) + ".", Ls = std::to_string(l + 1);
    const std::size_t E = r.logits.shape(1), k = r.weights.shape(1), T = r.logits.shape(0);
    const MoeWeights& moe = weights_.blocks[l].feed_forward->get<ExpertsBlock>().w;
    const ExpertsPart& spec_names = *config_.family->experts;  // the tensors' and fields' names
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
        sc.note = "The experts are chosen by s + the correction bias (" + spec_names.router_bias + "): the " + std::to_string(moe.top_groups) + " of " +
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
                                                format_number(moe.routed_scale) + " (" + spec_names.routed_scale + ")"
                                          : "Their weights: the chosen probabilities" + (moe.normalise ? " over their sum (" + spec_names.normalise + ")" : std::string());
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

void record_experts_by_layer(Recorder& rec, const DecoderWeights& w, const std::vector<std::vector<std::size_t>>& chosen_by_layer, std::size_t T) {
    std::vector<std::size_t> layers;  // the layers with experts (DeepSeek-V3 keeps a dense MLP in its first ones)
    for (std::size_t l = 0; l < chosen_by_layer.size(); ++l)
        if (!chosen_by_layer[l].empty()) layers.push_back(l);
    const std::size_t k = chosen_by_layer[layers.front()].size() / T;
    std::vector<unsigned long long> all;
    for (std::size_t l : layers) all.insert(all.end(), chosen_by_layer[l].begin(), chosen_by_layer[l].end());
    const bool sigmoid = w.blocks[layers.front()].feed_forward->get<ExpertsBlock>().w.routing == RouterKind::sigmoid_grouped;
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

}  // namespace attnwalk::model_walk
