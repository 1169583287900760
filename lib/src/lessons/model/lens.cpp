// The logit lens: every layer's residual stream through the final norm and the unembedding.
#include "model_walk.hpp"

namespace attnwalk::model_walk {

// The logit lens (nostalgebraist; TransformerLens's accumulated_resid(apply_ln=True) with
// the final norm recomputed for each row): every residual stream through the final norm
// and the unembedding, per position the top token, its probability, and the rank there of
// the model's own final prediction.
void record_logit_lens(Recorder& rec, const ModelSpec& spec, const DecoderWeights& w, const std::vector<Cube>& residuals) {
    const DecoderConfig& c = w.config;
    const std::size_t K = residuals.size(), T = residuals.front().shape(1);
    std::vector<ull> top(T * K), rank(T * K);  // (T, K): a row per position, a column per depth
    Mat prob = Mat::from_shape({T, K});
    std::vector<std::size_t> final_top(T);
    for (std::size_t k = K; k-- > 0;) {  // the last first: its top tokens are the model's predictions
        const Cube normed = normalise(residuals[k], w.final_norm, c.norm, c.norm_eps);
        const Cube logits = decoder_all_logits(w, normed);  // (1,T,V)
        const std::size_t V = logits.shape(2);
        for (std::size_t t = 0; t < T; ++t) {
            const float* row = &logits(0, t, 0);
            const std::vector<double> p = token_probabilities(row, V, 1.0);
            const std::size_t best = top_k(row, V, 1).front();
            if (k == K - 1) final_top[t] = best;
            std::size_t above = 0;  // ties broken by the id, as a stable sort ranks them
            for (std::size_t v = 0; v < V; ++v) above += row[v] > row[final_top[t]] || (row[v] == row[final_top[t]] && v < final_top[t]);
            top[t * K + k] = best;
            prob(t, k) = static_cast<float>(p[best]);
            rank[t * K + k] = above + 1;
        }
    }
    std::vector<std::string> depths{"embeddings"};
    for (std::size_t k = 1; k < K; ++k) depths.push_back("layer " + std::to_string(k));
    const Words words = words_of(c, &w);
    const std::string through = words.final_norm + "(x_l)·" + (c.tied_head ? words.embed : short_name(c.family->names.head)) + "ᵀ" + words.logit_scale;
    Step& ids = rec.add_plain("lens_top_ids", "The logit lens: each position's top token, layer by layer", "argmax softmax(" + through + ")",
                              integer_tensor(top, {T, K}), {Axis::token, Axis::layer});
    ids.labels = depths;
    ids.tensor.words = token_labels(std::vector<std::size_t>(top.begin(), top.end()), spec.tokenizer);  // the tokens as text, in place of their ids
    ids.note = "Row t: what the stream at position t predicts for token t + 1, from the embeddings to the last layer (the JSON keeps the ids, "
               "`words` their text).";
    rec.add_plain("lens_top_probs", "Its probability (temperature 1)", "max softmax(" + through + ")", to_trace(prob), {Axis::token, Axis::layer}).labels = depths;
    Step& rk = rec.add_plain("lens_final_rank", "Where the model's final prediction ranks, layer by layer", "rank of argmax(logits_L) in logits_l",
                             integer_tensor(rank, {T, K}), {Axis::token, Axis::layer});
    rk.labels = depths;
    rk.note = "1: the final prediction is already on top at that depth (the last column is all 1s).";
}

}  // namespace attnwalk::model_walk
