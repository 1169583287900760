#include "attnwalk/lessons/explain.hpp"

#include <cmath>

#include "attnwalk/lessons/lessons.hpp"

namespace attnwalk {

namespace {

// Batch element 0, head h, row i of a (B,H,R,·) tensor.
std::vector<float> row_of(const Hyper& t, std::size_t h, std::size_t i) {
    return std::vector<float>(&t(0, h, i, 0), &t(0, h, i, 0) + t.shape(3));
}

Tensor vector_tensor(std::vector<float> values) {
    Tensor t;
    t.shape = {values.size()};
    t.data = std::move(values);
    return t;
}

std::string quoted(const std::string& token) { return "\"" + token + "\""; }

// v_i = x_i·W (+ b): the projection of one token, row by row of W.
Expansion projection_expansion(const std::string& label, const std::vector<float>& x, const Linear& lin,
                               std::vector<float> result) {
    Expansion e;
    e.label = label;
    for (std::size_t c = 0; c < x.size(); ++c)
        e.terms.push_back({x[c], std::vector<float>(&lin.w(c, 0), &lin.w(c, 0) + lin.w.shape(1))});
    if (lin.b.size() != 0) e.terms.push_back({1.0f, std::vector<float>(lin.b.begin(), lin.b.end())});
    e.result = std::move(result);
    return e;
}

}  // namespace

void explain_cell(Recorder& rec, const Cell& cell, const Cube& x, const AttentionWeights* weights, const Forward& f,
                  const Scale& sc, ExplainDepth depth, std::size_t head) {
    const Trace& trace = rec.trace();
    const std::size_t i = cell.i, j = cell.j, T = f.kh.shape(2);
    // Math names tokens from 1, as the textbook does: x_2 is "journey", the second token.
    const std::string I = std::to_string(i + 1), J = std::to_string(j + 1);
    const std::string qi = trace.tokens[i], kj = trace.tokens[j];
    const std::size_t h = head;
    const std::string batch_note = std::string(f.heads > 1 ? " in head " + std::to_string(h + 1) : "") + (trace.batched ? " (batch 1)" : "");

    // The query and key vectors, from the embeddings through W_query and W_key.
    const std::size_t g = h / (f.heads / f.kv_heads);  // the key/value head of query head h
    const std::vector<float> q = row_of(f.qh, h, i), k = row_of(f.kh, g, j);
    // With RoPE the projections give q and k before their rotation.
    const std::vector<float> q0 = f.rope ? row_of(f.qh_plain, h, i) : q, k0 = f.rope ? row_of(f.kh_plain, g, j) : k;
    if (weights) {
        const std::vector<float> xi(&x(0, i, 0), &x(0, i, 0) + x.shape(2)), xj(&x(0, j, 0), &x(0, j, 0) + x.shape(2));
        const Linear wq = f.heads > 1 ? weights->head_columns(weights->query, h) : weights->query;
        const Linear wk = f.kv_heads > 1 ? weights->head_columns(weights->key, g) : weights->key;
        Step& sq = rec.add_plain("explain_query", "The query of " + quoted(qi) + batch_note + ": its embedding times W_query",
                                 "q_" + I + " = Σ_c x_" + I + "c·W_query[c,:]" + (weights->query.b.size() ? " + b_query" : ""),
                                 vector_tensor(q0), {Axis::feature});
        sq.expansion.push_back(projection_expansion("q(" + qi + ")", xi, wq, q0));
        Step& sk = rec.add_plain("explain_key", "The key of " + quoted(kj) + batch_note + ": its embedding times W_key",
                                 "k_" + J + " = Σ_c x_" + J + "c·W_key[c,:]" + (weights->key.b.size() ? " + b_key" : ""),
                                 vector_tensor(k0), {Axis::feature});
        sk.expansion.push_back(projection_expansion("k(" + kj + ")", xj, wk, k0));
    }
    if (f.rope) {  // each turned by its position's angles
        const std::size_t d = q.size(), half = d / 2;
        const auto angles = [&](std::size_t t) {
            std::string out;
            for (std::size_t c = 0; c < half; ++c) out += (c ? ", " : "") + format_number(f.rope->angles(t, c));
            return out;
        };
        // RoPE's angle is p·θ with the model's position id p, which counts from 0: the
        // first token is not turned.
        const std::string pi = std::to_string(i), pj = std::to_string(j);
        Step& rq = rec.add_plain("explain_query_rotated", "The query of " + quoted(qi) + ", rotated by its position id p = " + pi,
                                 "q′_" + I + " = q_" + I + "·cos φ(" + pi + ") + rotate_half(q_" + I + ")·sin φ(" + pi + ")",
                                 vector_tensor(q), {Axis::feature});
        rq.note = "Pairs (c, c + " + std::to_string(half) + ") turn by the angles φ(p) = p·θ = " + angles(i) +
                  " (radians); position ids count from 0, so token " + I + " has p = " + pi + ".";
        Step& rk = rec.add_plain("explain_key_rotated", "The key of " + quoted(kj) + ", rotated by its position id p = " + pj,
                                 "k′_" + J + " = k_" + J + "·cos φ(" + pj + ") + rotate_half(k_" + J + ")·sin φ(" + pj + ")",
                                 vector_tensor(k), {Axis::feature});
        rk.note = "Angles φ = " + angles(j) + ": the score below sees only their differences.";
    }

    // The score: one dot product, term by term.
    const float score = f.scores(0, h, i, j);
    Expansion dot;
    dot.label = qi + "·" + kj;
    for (std::size_t c = 0; c < q.size(); ++c) dot.terms.push_back({q[c], {k[c]}});
    dot.result = {score};
    const std::string qs = (weights ? "q" : "x") + std::string(f.rope ? "′_" : "_") + I,
                      ks = (weights ? "k" : "x") + std::string(f.rope ? "′_" : "_") + J;
    Step& s = rec.add_plain("explain_score", "The score of " + quoted(qi) + " against " + quoted(kj) + batch_note,
                            "ω_" + I + "," + J + " = " + qs + "·" + ks + " = Σ_c " + qs + "c·" + ks + "c", scalar_trace(score), {});
    s.expansion.push_back(std::move(dot));
    if (depth == ExplainDepth::score) return;

    // What the softmax reads: s = ω / scale, or ω itself.
    const std::string v = f.scale != 1.0f ? "s" : "ω";
    if (f.scale != 1.0f)
        rec.add_plain("explain_scaled", "The score divided by " + sc.words, "s_" + I + "," + J + " = ω_" + I + "," + J + " / " + sc.symbol,
                      scalar_trace(score / f.scale), {});

    // The softmax of row i: the forward's max and sum, each exponential shown.
    const std::vector<float> row = row_of(f.scaled, h, i);
    const float max = f.row_max(0, h, i), sum = f.row_sum(0, h, i);
    std::vector<float> exps(T);
    for (std::size_t c = 0; c < T; ++c) exps[c] = std::exp(row[c] - max);
    const float inv = 1.0f / sum;
    const float weight = f.weights(0, h, i, j);

    rec.add_plain("explain_max", "The row maximum, subtracted only for numerical stability",
                  "max_j " + v + "_" + I + ",j" + (f.causal ? " (over j ≤ " + I + ")" : ""), scalar_trace(max), {});
    Step& r = rec.add_plain("explain_row", "Row " + quoted(qi) + " as the softmax reads it" + (f.causal ? " (future masked)" : ""),
                            v + "_" + I + ",j" + (f.scale != 1.0f ? " = ω_" + I + ",j / " + sc.symbol : "") +
                                (f.causal ? ", −∞ for j > " + I : ""),
                            vector_tensor(row), {Axis::token});
    r.group = "explain_softmax";
    r.may_be_non_finite = f.causal;
    Step& e = rec.add_plain("explain_exp", "Each exponential, after subtracting the row maximum",
                            "exp(" + v + "_" + I + ",j − max)", vector_tensor(exps), {Axis::token});
    e.group = "explain_softmax";
    if (f.causal && i + 1 < T) e.note = "exp(−∞) = 0: the future tokens add nothing to the sum.";
    Step& sm = rec.add_plain("explain_sum", "The sum of the exponentials", "Σ = Σ_j exp(" + v + "_" + I + ",j − max)", scalar_trace(sum), {});
    sm.note = "Added left to right in float32, as the softmax does.";
    Expansion div;
    div.label = "α(" + qi + "→" + kj + ")";
    div.terms.push_back({exps[j], {inv}, "1/Σ"});
    div.result = {exps[j] * inv};
    Step& w = rec.add_plain("explain_weight", "The weight of " + quoted(kj) + " for " + quoted(qi) + ": its exponential over the sum",
                            "α_" + I + "," + J + " = exp(" + v + "_" + I + "," + J + " − max) · (1/Σ)", scalar_trace(exps[j] * inv), {});
    w.expansion.push_back(std::move(div));
    w.note = exps[j] * inv == weight
                 ? "Equal, bit for bit, to the weights matrix at row " + I + ", column " + J + ". Like PyTorch, the softmax multiplies by the reciprocal of the sum."
                 : "Differs from the weights matrix at row " + I + ", column " + J + ".";
    if (f.causal && j > i) w.note += " Column " + J + " is in the future of row " + I + ": masked, so its weight is 0.";
    if (depth == ExplainDepth::weight) return;

    // The context vector of token i: every value weighted by row i of the weights.
    Expansion z;
    z.label = "z(" + qi + ")";
    // the weights the values are mixed with: after dropout when there was one
    const Hyper& a = f.final_weights();
    for (std::size_t c = 0; c < T; ++c) z.terms.push_back({a(0, h, i, c), row_of(f.vh, g, c)});
    z.result = row_of(f.head_outputs, h, i);
    Step& ctx = rec.add_plain("explain_context", "The context vector of " + quoted(qi) + ": row " + I + " of the weights times the " + (weights ? "values" : "embeddings"),
                              "z_" + I + " = Σ_j α_" + I + ",j·" + (weights ? "v_j" : "x_j"), vector_tensor(z.result), {Axis::feature});
    ctx.expansion.push_back(std::move(z));
}

}  // namespace attnwalk
