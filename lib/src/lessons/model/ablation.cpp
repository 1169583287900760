// Ablation: heads switched off, and what changes in the next token and the prompt's loss.
#include "model_walk.hpp"

namespace attnwalk::model_walk {

namespace {

// Ablation: the prompt's loss (the mean of −log p(token t+1) over the positions before the
// last), and the next token's logit and probability at the last position, for `target`.
struct Effect {
    double logit = 0, prob = 0, loss = 0;
};
Effect effect_of(const DecoderWeights& w, const std::vector<std::size_t>& ids, const Ablation* ablation, std::size_t target) {
    const Cube xf = decoder_forward(w, ids, nullptr, nullptr, ablation);
    const Cube logits = decoder_all_logits(w, xf);  // (1,T,V)
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

}  // namespace

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

}  // namespace attnwalk::model_walk
