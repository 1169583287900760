// The explanation engine on a Gated DeltaNet layer (Qwen3-Next, Qwen3.5): a cell of its
// effective attention matrix, as the delta rule builds it — the query and key it reads, how
// strongly the query reads each later token's write (decay × q̂·k̂), how much of value J each
// write carries (β and the corrections), and their sum. The numbers are the forward's own
// inputs to the delta rule (delta_rule_inputs) through ops' delta_rule_cell, which the
// effective matrix is built with: the sum equals its entry bit for bit.
#include <cmath>

#include "attnwalk/errors.hpp"
#include "attnwalk/ops/delta_rule.hpp"
#include "explain_parts.hpp"
#include "steps.hpp"

namespace attnwalk::explain_parts {

namespace {

std::string list(const std::vector<double>& v) {
    std::string out;
    for (std::size_t c = 0; c < v.size(); ++c) out += (c ? ", " : "") + num(v[c]);
    return out;
}
std::vector<float> floats(const std::vector<double>& v) { return std::vector<float>(v.begin(), v.end()); }

}  // namespace

void explain_delta_cell(Recorder& rec, const CellRef& cell, const ExplainView& v) {
    const DeltaSource& D = *v.delta;
    const DeltaInputs& in = D.in;
    const std::size_t H = in.q.shape(1), T = in.q.shape(2), i = cell.query, j = cell.key, h = cell.head;
    if (h >= H || i >= T || j >= T)
        throw UsageError("cell " + std::to_string(i + 1) + "," + std::to_string(j + 1) + " of value head " + std::to_string(h + 1) +
                         " is not in this layer");
    const Trace& trace = rec.trace();
    const CellNames n = names_of(trace, cell, v.layer, H, "value head");
    const std::string &I = n.I, &J = n.J, &qi = n.qi, &kj = n.kj;
    const std::size_t group = H / D.k_heads, g = h / group, dk = D.d_k;
    explain_inputs(rec, cell, v, n);

    // ---- the query and key the delta rule reads ----------------------------------------------------
    const auto length = [&](const Cube& x, std::size_t t) { return rms_of(&x(0, t, g * dk), dk) * std::sqrt(static_cast<double>(dk)); };
    const std::string heads = "key head " + std::to_string(g + 1) + " (value head " + std::to_string(h + 1) + " reads key head ⌈" + std::to_string(h + 1) +
                              " / " + std::to_string(group) + "⌉)";
    Step& q = rec.add_plain("explain_delta_query", "The query of " + quoted(qi) + n.where + " as the delta rule reads it",
                            "q̂_" + I + " = q_" + I + " / ‖q_" + I + "‖ · 1/√d_k", vector_tensor(row_of(in.q, h, i)), {Axis::feature});
    q.note = "Row " + I + " of queries, the " + std::to_string(dk) + " features of " + heads +
             ", after the causal convolution and SiLU; divided by its length ‖q‖ = " + num(length(D.f.q, i)) + " and by √d_k = √" + std::to_string(dk) + ".";
    Step& k = rec.add_plain("explain_delta_key", "The key of " + quoted(kj) + ", likewise", "k̂_" + J + " = k_" + J + " / ‖k_" + J + "‖",
                            vector_tensor(row_of(in.k, h, j)), {Axis::feature});
    k.note = "Row " + J + " of keys, " + heads + "; divided by its length ‖k‖ = " + num(length(D.f.k, j)) + ": a key of length 1, so writing it and reading it back agree.";
    const float matrix = D.f.effective.size() ? D.f.effective(0, h, i, j) : std::nanf("");
    if (j > i) {
        Step& a = rec.add_plain("explain_effective", "The effective attention of " + quoted(qi) + " on " + quoted(kj) + n.where, "A_" + I + "," + J + " = 0",
                                scalar_trace(0.0f), {});
        a.note = "Key " + J + " comes after query " + I + ": the state has not been written with it when query " + I + " reads it, so A_" + I + "," + J + " = 0.";
        return;
    }

    // ---- the delta rule's terms: read × written, for every token from J to I ---------------------
    const DeltaCell c = delta_rule_cell(in, 0, h, i, j);
    std::vector<std::string> labels;
    for (std::size_t t = j; t <= i; ++t) labels.push_back(trace.tokens.at(t));
    std::vector<double> decays(i - j + 1);  // α of each token, for the note
    for (std::size_t t = j; t <= i; ++t) decays[t - j] = std::exp(static_cast<double>(in.g(0, h, t)));
    Step& p = rec.add_plain("explain_delta_read", "How strongly the query of " + quoted(qi) + " reads what each token from " + quoted(kj) + " on wrote",
                            "P_" + I + ",j = γ_" + I + ",j·(q̂_" + I + "·k̂_j), j = " + J + "…" + I, vector_tensor(floats(c.read)), {Axis::token});
    p.labels = labels;
    p.note = "γ_" + I + ",j = γ_j+1·…·γ_" + I + ", what the state keeps of token j's write by token " + I + " (each token's decay γ, from " + J + " on: " +
             list(decays) + "): " + list(c.decay) + ". q̂_" + I + "·k̂_j: " + list(std::vector<double>(c.qk.begin(), c.qk.end())) +
             ". In double, as the forward builds the matrix.";
    Step& u = rec.add_plain("explain_delta_written", "How much of the value of " + quoted(kj) + " each write from " + quoted(kj) + " on carries",
                            "U_" + J + "," + J + " = β_" + J + "; U_j," + J + " = −β_j·Σ_m<j γ_j,m·(k̂_j·k̂_m)·U_m," + J, vector_tensor(floats(c.written)),
                            {Axis::token});
    u.labels = labels;
    u.note = "Token " + J + " writes β_" + J + " = " + num(in.beta(0, h, j)) + " of its value; each later token j writes the error of what the state "
             "predicts for its own key (v_j − Sᵀk̂_j, times β_j), which takes back part of value " + J + " where k̂_j resembles the keys before it. In double, as the forward.";
    Expansion e;
    e.label = "A(" + qi + "→" + kj + ")";
    for (std::size_t t = 0; t < c.terms.size(); ++t) e.terms.push_back({static_cast<float>(c.read[t]), {static_cast<float>(c.written[t])}});
    e.result = {c.value};
    elide(e);
    Step& a = rec.add_plain("explain_effective", "The effective attention of " + quoted(qi) + " on " + quoted(kj) + n.where + ": read × written, summed",
                            "A_" + I + "," + J + " = Σ_j=" + J + "…" + I + " P_" + I + ",j·U_j," + J, scalar_trace(c.value), {});
    a.expansion.push_back(std::move(e));
    a.note = std::string(c.value == matrix ? "Equal, bit for bit, to effective_attention at row " + I + ", column " + J
                                           : "Differs from effective_attention at row " + I + ", column " + J) +
             ": each product taken in double and rounded to float32, then added in float32 from j = " + J + " on, as the forward builds the matrix. "
             "Not a softmax weight: it may be negative, and a row need not sum to 1; the head's output o_" + I + " = Σ_j A_" + I + ",j·v_j is what the "
             "state, read with q̂_" + I + ", gives.";
}

}  // namespace attnwalk::explain_parts
