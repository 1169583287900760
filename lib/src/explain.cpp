// --explain I,J: one cell of the attention written out, step by step.
#include "attnwalk/explain.hpp"

#include <cmath>

#include "attnwalk/errors.hpp"
#include "attnwalk/setup.hpp"

namespace attnwalk {

namespace {

std::vector<float> row_of(const Cube& t, std::size_t i) {  // batch 0, row i
    return std::vector<float>(&t(0, i, 0), &t(0, i, 0) + t.shape(2));
}

Tensor vector_tensor(std::vector<float> values) {
    Tensor t;
    t.shape = {values.size()};
    t.data = std::move(values);
    return t;
}

Tensor scalar_tensor(float value) {
    Tensor t;
    t.data = {value};
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

std::pair<std::size_t, std::size_t> parse_cell(const std::string& text, const std::vector<std::string>& tokens) {
    const auto comma = text.find(',');
    if (comma == std::string::npos || text.find(',', comma + 1) != std::string::npos)
        throw UsageError("--explain '" + text + "' is not a cell: give I,J (query row, key column), e.g. --explain 1,2 or --explain journey,starts");
    return {resolve_query(text.substr(0, comma), tokens, "--explain"), resolve_query(text.substr(comma + 1), tokens, "--explain")};
}

void explain_cell(Recorder& rec, const ExplainInputs& in, ExplainDepth depth) {
    const Trace& trace = rec.trace();
    const std::size_t i = in.i, j = in.j, T = in.k->shape(1);
    const std::string I = std::to_string(i), J = std::to_string(j);
    const std::string qi = trace.tokens[i], kj = trace.tokens[j];
    const bool projected = in.qkv != nullptr;
    const std::string batch_note = trace.batched ? " (batch element 0)" : "";

    // The query and key vectors, from the embeddings through W_query and W_key.
    const std::vector<float> q = row_of(*in.q, i), k = row_of(*in.k, j);
    if (projected) {
        Step& sq = rec.add_plain("explain_query", "The query of " + quoted(qi) + ": its embedding times W_query",
                                 "q_" + I + " = Σ_c x_" + I + "c·W_query[c,:]" + (in.qkv->query.b.size() ? " + b_query" : ""),
                                 vector_tensor(q), {Axis::feature});
        sq.expansion.push_back(projection_expansion("q(" + qi + ")", row_of(*in.x, i), in.qkv->query, q));
        Step& sk = rec.add_plain("explain_key", "The key of " + quoted(kj) + ": its embedding times W_key",
                                 "k_" + J + " = Σ_c x_" + J + "c·W_key[c,:]" + (in.qkv->key.b.size() ? " + b_key" : ""),
                                 vector_tensor(k), {Axis::feature});
        sk.expansion.push_back(projection_expansion("k(" + kj + ")", row_of(*in.x, j), in.qkv->key, k));
    }

    // The score: one dot product, term by term.
    const float score = (*in.raw)(0, i, j);
    Expansion dot;
    dot.label = qi + "·" + kj;
    for (std::size_t c = 0; c < q.size(); ++c) dot.terms.push_back({q[c], {k[c]}});
    dot.result = {score};
    const std::string sym = projected ? "q_" + I + "·k_" + J : "x_" + I + "·x_" + J;
    Step& s = rec.add_plain("explain_score", "The score of " + quoted(qi) + " against " + quoted(kj) + batch_note,
                            "ω_" + I + "," + J + " = " + sym + " = Σ_c", scalar_tensor(score), {});
    s.expansion.push_back(std::move(dot));
    if (depth == ExplainDepth::score) return;

    if (in.scale != 1.0f)
        rec.add_plain("explain_scaled", "The score divided by " + in.scale_text, "ω_" + I + "," + J + " / " + in.scale_text,
                      scalar_tensor(score / in.scale), {});

    // The softmax of row i, with softmax.hpp's operations: shift, exp, sum, × 1/sum.
    const std::vector<float> row = row_of(*in.scores, i);
    float max = row[0];
    for (float v : row) max = std::max(max, v);
    std::vector<float> exps(T);
    float sum = 0.0f;
    for (std::size_t c = 0; c < T; ++c) sum += (exps[c] = std::exp(row[c] - max));
    const float inv = 1.0f / sum;
    const float weight = exps[j] * inv;

    rec.add_plain("explain_max", "The row maximum, subtracted only for numerical stability", "max_j ω_" + I + ",j",
                  scalar_tensor(max), {});
    Step& r = rec.add_plain("explain_row", "Row " + quoted(qi) + " as the softmax reads it" + (in.causal ? " (future masked)" : ""),
                            "ω_" + I + ",j" + (in.scale != 1.0f ? " / " + in.scale_text : "") + (in.causal ? ", −∞ for j > " + I : ""),
                            vector_tensor(row), {Axis::token});
    r.group = "explain_softmax";
    r.may_be_non_finite = in.causal;
    Step& e = rec.add_plain("explain_exp", "Each exponential, after subtracting the row maximum",
                            "exp(ω_" + I + ",j − max)", vector_tensor(exps), {Axis::token});
    e.group = "explain_softmax";
    if (in.causal && i + 1 < T) e.note = "exp(−∞) = 0: the future tokens add nothing to the sum.";
    Step& sm = rec.add_plain("explain_sum", "The sum of the exponentials", "Σ_j exp(ω_" + I + ",j − max)", scalar_tensor(sum), {});
    sm.note = "Added left to right in float32, as the softmax does.";
    Expansion div;
    div.label = "α(" + qi + "→" + kj + ")";
    div.terms.push_back({exps[j], {inv}});
    div.result = {weight};
    Step& w = rec.add_plain("explain_weight", "The weight of " + quoted(kj) + " for " + quoted(qi) + ": its exponential over the sum",
                            "α_" + I + "," + J + " = exp(ω_" + I + "," + J + " − max) · (1 / Σ)", scalar_tensor(weight), {});
    w.expansion.push_back(std::move(div));
    w.note = weight == (*in.weights)(0, i, j)
                 ? "Equal, bit for bit, to the weights matrix at row " + I + ", column " + J + ". Like PyTorch, the softmax multiplies by the reciprocal of the sum."
                 : "Differs from the weights matrix at row " + I + ", column " + J + ".";
    if (in.causal && j > i) w.note += " Column " + J + " is in the future of row " + I + ": masked, so its weight is 0.";
    if (depth == ExplainDepth::weight) return;

    // The context vector of token i: every value weighted by row i of the weights.
    Expansion z;
    z.label = "z(" + qi + ")";
    for (std::size_t c = 0; c < T; ++c) z.terms.push_back({(*in.weights)(0, i, c), row_of(*in.v, c)});
    z.result = row_of(*in.context, i);
    Step& ctx = rec.add_plain("explain_context", "The context vector of " + quoted(qi) + ": row " + I + " of the weights times the " + (projected ? "values" : "embeddings"),
                              "z_" + I + " = Σ_j α_" + I + ",j·" + (projected ? "v_j" : "x_j"), vector_tensor(z.result), {Axis::feature});
    ctx.expansion.push_back(std::move(z));
}

}  // namespace attnwalk
