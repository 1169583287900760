// The explanation engine (lessons/explain.hpp) and the cell a step's entry shows
// (lessons/explainer.hpp).
#include "attnwalk/lessons/explain.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>

#include "attnwalk/errors.hpp"
#include "attnwalk/lessons/lessons.hpp"
#include "explain_parts.hpp"
#include "steps.hpp"

namespace attnwalk {

namespace explain_parts {

// Batch element 0, head h, row i of a (B,H,R,·) tensor.
std::vector<float> row_of(const Hyper& t, std::size_t h, std::size_t i) {
    return std::vector<float>(&t(0, h, i, 0), &t(0, h, i, 0) + t.shape(3));
}
// Columns [c0, c0 + n) of row i of a (B,T,·) tensor.
std::vector<float> slice_of(const Cube& t, std::size_t i, std::size_t c0, std::size_t n) {
    return std::vector<float>(&t(0, i, c0), &t(0, i, c0) + n);
}

Tensor vector_tensor(std::vector<float> values) {
    Tensor t;
    t.shape = {values.size()};
    t.data = std::move(values);
    return t;
}

std::string quoted(const std::string& token) { return "\"" + token + "\""; }

std::string num(double v) { return format_number(v); }
// A number after an operator: a negative one in parentheses, as a written-out sum writes it ("− (-0.1095)").
std::string operand(double v) { return v < 0.0 ? "(" + num(v) + ")" : num(v); }

Expansion dot_of(const std::string& label, const std::vector<float>& a, const std::vector<float>& b, float result) {
    Expansion e;
    e.label = label;
    for (std::size_t c = 0; c < a.size(); ++c) e.terms.push_back({a[c], {b[c]}});
    e.result = {result};
    elide(e);
    return e;
}

// Past this many terms a sum is shown by its first two and its last: a model's 2048.
constexpr std::size_t long_sum = 12;

void elide(Expansion& e) {
    const std::size_t n = e.terms.size();
    if (n <= long_sum) return;
    e.omitted = n - 3;
    e.omitted_after = 2;
    e.terms.erase(e.terms.begin() + 2, e.terms.end() - 1);
}

// v = x·W (+ b), row by row of W: the projection of one token into the n columns of W
// from col0 on (one head's). A long sum keeps its first two rows and its last: only those
// rows of W are read.
Expansion projection_expansion(const std::string& label, const std::vector<float>& x, const Linear& lin, std::size_t col0, std::size_t n,
                               std::vector<float> result) {
    Expansion e;
    e.label = label;
    const std::size_t d_in = x.size();
    const auto row = [&](std::size_t c) {
        std::vector<float> r(n);
        for (std::size_t k = 0; k < n; ++k) r[k] = lin.at(c, col0 + k);
        return r;
    };
    const bool elided = d_in > long_sum;
    for (std::size_t c = 0; c < d_in; ++c) {
        if (elided && c == 2) c = d_in - 1;  // the rows in between: counted in `omitted`
        e.terms.push_back({x[c], row(c)});
    }
    if (elided) {
        e.omitted = d_in - 3;
        e.omitted_after = 2;
    }
    if (lin.b.size() != 0) e.terms.push_back({1.0f, std::vector<float>(lin.b.begin() + static_cast<std::ptrdiff_t>(col0), lin.b.begin() + static_cast<std::ptrdiff_t>(col0 + n))});
    e.result = std::move(result);
    return e;
}

double rms_of(const float* x, std::size_t n) {
    double s = 0.0;
    for (std::size_t c = 0; c < n; ++c) s += static_cast<double>(x[c]) * x[c];
    return n ? std::sqrt(s / static_cast<double>(n)) : 0.0;
}

}  // namespace explain_parts

namespace {

using namespace explain_parts;

// The row of a model layer entering its attention, written out through its norm.
void explain_input(Recorder& rec, const std::string& id, const LayerSource& L, const Cube& normed, std::size_t t, const std::string& token,
                   const std::string& role) {
    const std::size_t C = L.stream.shape(2);
    const std::string T = std::to_string(t + 1), layer = std::to_string(L.layer + 1);
    if (!L.norm) {  // post-norm: the attention reads the stream itself
        Step& s = rec.add_plain(id, "The " + role + " row " + quoted(token) + " entering layer " + layer + ": the residual stream itself",
                                "x_" + T, vector_tensor(slice_of(L.stream, t, 0, C)), {Axis::feature});
        s.note = "This family normalises after each sublayer (post-norm), so the attention projects the residual stream as it is.";
        return;
    }
    const float* x = &L.stream(0, t, 0);
    const std::string w = L.norm_adds_one ? "(1 + w)" : "w";
    Step& s = rec.add_plain(id, "The " + role + " row " + quoted(token) + " entering layer " + layer + ", through " + L.norm_words + " (" + L.norm_name + ")",
                            L.norm_kind == NormKind::rms_norm ? "a_" + T + " = x_" + T + " / √(mean_c x_" + T + "c² + ε) ⊙ " + w
                            : L.norm_kind == NormKind::layer_norm ? "a_" + T + " = (x_" + T + " − μ) / √(σ² + ε) ⊙ w + b"
                                                                  : "a_" + T + " = (x_" + T + " − μ) / √(σ² + ε) ⊙ w",
                            vector_tensor(slice_of(normed, t, 0, C)), {Axis::feature});
    const float scale0 = L.norm->scale(0);
    if (L.norm_kind == NormKind::rms_norm) {
        const double rms = std::sqrt(rms_of(x, C) * rms_of(x, C) + static_cast<double>(L.eps));
        s.note = "Over its C = " + std::to_string(C) + " features: √(mean(x²) + ε) = √(" + num(rms_of(x, C) * rms_of(x, C)) + " + " + num(L.eps) + ") = " +
                 num(rms) + ". Feature 1: " + num(x[0]) + " / " + num(rms) + " × " +
                 (L.norm_adds_one ? "(1 + " + operand(scale0 - 1.0f) + ")" : operand(scale0)) + " = " + num(normed(0, t, 0)) + ".";
    } else {
        double mean = 0.0, var = 0.0;
        for (std::size_t c = 0; c < C; ++c) mean += x[c];
        mean /= static_cast<double>(C);
        for (std::size_t c = 0; c < C; ++c) var += (x[c] - mean) * (x[c] - mean);
        var /= static_cast<double>(C);
        s.note = "Over its C = " + std::to_string(C) + " features: μ = " + num(mean) + ", σ² = " + num(var) + ". Feature 1: (" + num(x[0]) + " − " +
                 operand(mean) + ") / √(" + num(var) + " + " + num(L.eps) + ") × " + operand(scale0) +
                 (L.norm->shift.size() ? " + " + operand(L.norm->shift(0)) : std::string()) + " = " + num(normed(0, t, 0)) + ".";
    }
}

}  // namespace

const std::vector<StepDecl>& explain_steps() {
    static const std::vector<StepDecl> steps = {
        {"explain_input_query", "a model: the query's row entering the layer, through the layer's norm (or the stream itself, post-norm)"},
        {"explain_input_key", "a model: the key's row entering the layer, likewise (when the key is another token)"},
        {"explain_query", "the query of row I, row by row of W_query"},
        {"explain_key", "the key of column J, row by row of W_key"},
        {"explain_query_normed", "QK-norm: the query of row I after its RMSNorm", detail, Models::beyond_gpt2},
        {"explain_key_normed", "QK-norm: the key of column J after its RMSNorm", detail, Models::beyond_gpt2},
        {"explain_query_rotated", "RoPE: the query of row I rotated by its position", detail, Models::beyond_gpt2},
        {"explain_key_rotated", "RoPE: the key of column J rotated by its position", detail, Models::beyond_gpt2},
        {"explain_query_latent", "latent attention (MLA): the query's own latent c_Q of row I, through its RMSNorm", detail, Models::beyond_gpt2},
        {"explain_key_latent", "latent attention: the key's latent c_KV of column J, through its RMSNorm (what the cache keeps)", detail, Models::beyond_gpt2},
        {"explain_key_nope", "latent attention: the key's content part k_nope of column J, c_KV up-projected by the head's W_UK", detail, Models::beyond_gpt2},
        {"explain_value_latent", "latent attention: the value of column J for the head, the same c_KV up-projected by the head's W_UV", detail, Models::beyond_gpt2},
        {"explain_key_rope", "latent attention: the rotary key of column J that every head shares, before RoPE", detail, Models::beyond_gpt2},
        {"explain_score_nope", "latent attention: the content part of the score, q_nope·k_nope", detail, Models::beyond_gpt2},
        {"explain_score_rope", "latent attention: the position part of the score, q_rope′·k_rope′", detail, Models::beyond_gpt2},
        {"explain_score", "the score of the cell, term by term"},
        {"explain_mask", "1 when key J is visible to query I (causal, inside the window), 0 when masked"},
        {"explain_scaled", "the score divided by the scale"},
        {"explain_max", "the maximum of row I"},
        {"explain_row", "row I as the softmax reads it"},
        {"explain_exp", "exp(row − max)"},
        {"explain_sink", "with a learned sink: its exponential, one more term of the sum"},
        {"explain_sum", "the sum of the exponentials"},
        {"explain_weight", "the weight of the cell: its exponential times 1/sum"},
        {"explain_context", "the context vector of row I, as a weighted sum"},
        {"explain_share", "α_IJ·v_J: what key J adds to the context of row I, and its share"},
        {"explain_delta_query", "Gated DeltaNet: the query of row I as the delta rule reads it, L2-normalised and × 1/√d_k", detail, Models::beyond_gpt2},
        {"explain_delta_key", "Gated DeltaNet: the key of column J as the delta rule reads it, L2-normalised", detail, Models::beyond_gpt2},
        {"explain_delta_read", "Gated DeltaNet: for j = J…I, how strongly query I reads token j's write, γ_Ij·(q̂_I·k̂_j)", detail, Models::beyond_gpt2},
        {"explain_delta_written", "Gated DeltaNet: for j = J…I, how much of value J token j's write carries, U_jJ", detail, Models::beyond_gpt2},
        {"explain_effective", "Gated DeltaNet: the effective attention cell A_IJ = Σ_j γ_Ij·(q̂_I·k̂_j)·U_jJ", detail, Models::beyond_gpt2},
    };
    return steps;
}

namespace explain_parts {

CellNames names_of(const Trace& trace, const CellRef& cell, const LayerSource* L, std::size_t heads, const std::string& head_word) {
    // Math names tokens from 1, as the textbook does: x_2 is "journey", the second token.
    CellNames n;
    n.I = std::to_string(cell.query + 1);
    n.J = std::to_string(cell.key + 1);
    n.qi = trace.tokens.at(cell.query);
    n.kj = trace.tokens.at(cell.key);
    n.where = (L ? " in layer " + std::to_string(L->layer + 1) + ", " + head_word + " " + std::to_string(cell.head + 1)
                 : heads > 1 ? " in " + head_word + " " + std::to_string(cell.head + 1) : std::string()) +
              (trace.batched ? " (batch 1)" : "");
    return n;
}

void explain_inputs(Recorder& rec, const CellRef& cell, const ExplainView& v, const CellNames& n) {
    if (!v.layer || !v.x) return;
    explain_input(rec, "explain_input_query", *v.layer, *v.x, cell.query, n.qi, "query's");
    if (cell.key != cell.query) explain_input(rec, "explain_input_key", *v.layer, *v.x, cell.key, n.kj, "key's");
}

std::vector<Expansion> rotation_pairs(const std::string& v, const std::vector<float>& plain, const std::vector<float>& rotated, const Rope& rope,
                                      std::size_t t, std::string* left_out, bool weights_pairs) {
    const std::size_t half = rope.dims() / 2, shown_first = half > 16 ? 4 : half, shown_last = half > 16 ? 2 : 0;
    std::vector<Expansion> out;
    for (std::size_t i = 0; i < half; ++i) {
        if (i == shown_first && i + shown_last < half) {  // the pairs in between: said in `left_out`
            if (left_out)
                *left_out = "Pairs " + std::to_string(shown_first + 1) + " to " + std::to_string(half - shown_last) + " of " + std::to_string(half) +
                            " turn alike and are left out here; the step's vector holds every feature.";
            i = half - shown_last;
        }
        // the pair's first member turns by −its partner, the second by +its partner
        const std::size_t a = rope.interleaved ? 2 * i : i, b = rope.partner(a);
        Expansion e;
        e.label = weights_pairs ? v + "[" + std::to_string(2 * i + 1) + "," + std::to_string(2 * i + 2) + "]"
                                : v + "[" + std::to_string(a + 1) + "," + std::to_string(b + 1) + "]";
        e.terms.push_back({plain[a], {rope.cos(t, a), rope.sin(t, b)}});
        e.terms.push_back({plain[b], {-rope.sin(t, a), rope.cos(t, b)}});
        e.result = {rotated[a], rotated[b]};
        out.push_back(std::move(e));
    }
    return out;
}

std::string frequency_words(const Rope& rope, const std::optional<RopeParams>& params) {
    const std::size_t half = rope.dims() / 2;
    std::string theta;
    for (std::size_t c = 0; c < half; ++c) theta += (c ? ", " : "") + format_number(rope.inv_freq(c));
    if (!params) return "θ = " + theta;
    std::string plain;
    for (std::size_t c = 0; c < half; ++c)
        plain += (c ? ", " : "") + format_number(std::pow(params->base, -2.0 * static_cast<double>(c) / static_cast<double>(rope.dims())));
    const std::string base = "base^(−2(c − 1)/d) for the pairs c = 1 … d/2, with the config's base " + format_number(params->base) + " and d = " + std::to_string(rope.dims());
    const RopeScaling& sc = params->scaling;
    switch (sc.kind) {
        case RopeScaling::Kind::none: return "θ_c = " + base + ": " + theta;
        case RopeScaling::Kind::linear:
            return "θ_c = " + base + " = " + plain + ", each divided by " + format_number(sc.factor) + " (rope_scaling linear, to stretch the context): " + theta;
        case RopeScaling::Kind::llama3:
            return "θ_c = " + base + " = " + plain + ", rescaled as Llama 3 does (rope_scaling llama3, factor " + format_number(sc.factor) +
                   "): a frequency whose wavelength 2π/θ is longer than the original context over low_freq_factor (" + format_number(sc.original_context) +
                   " / " + format_number(sc.low_freq_factor) + ") is divided by the factor, one shorter than the context over high_freq_factor (" +
                   format_number(sc.original_context) + " / " + format_number(sc.high_freq_factor) + ") is kept, those between are blended: " + theta;
        case RopeScaling::Kind::yarn:
            return "θ_c = " + base + " = " + plain + ", rescaled by YaRN (rope_scaling yarn, factor " + format_number(sc.factor) +
                   "): the low frequencies divided by the factor, the high ones kept, those between blended: " + theta;
    }
    return "θ = " + theta;
}

}  // namespace explain_parts

void explain_cell(Recorder& rec, const CellRef& cell, const ExplainView& v) {
    if (v.delta) return explain_delta_cell(rec, cell, v);
    const Trace& trace = rec.trace();
    const Forward& f = *v.f;
    const std::size_t i = cell.query, j = cell.key, h = cell.head, T = f.kh.shape(2);
    if (h >= f.heads || j >= T || i < f.row0 || i - f.row0 >= f.rows)
        throw UsageError("cell " + std::to_string(i + 1) + "," + std::to_string(j + 1) + " of head " + std::to_string(h + 1) +
                         " is not in this attention");
    const std::size_t r = i - f.row0;  // the row of the forward's (B,H,R,T) tensors
    const LayerSource* L = v.layer;
    const CellNames names = names_of(trace, cell, L, f.heads);
    const std::string &I = names.I, &J = names.J, &qi = names.qi, &kj = names.kj, &where = names.where;
    const std::size_t group = f.heads / f.kv_heads, g = h / group;  // the key/value head of query head h
    const std::size_t d = f.d_h;

    // ---- a model: the rows entering the layer ------------------------------------------
    explain_inputs(rec, cell, v, names);
    const float score = v.latent ? explain_latent_score(rec, cell, v, names) : f.scores(0, h, r, j);
    if (!v.latent) {
    // ---- the query and key vectors ----------------------------------------------------------
    const std::vector<float> q = row_of(f.qh, h, i), k = row_of(f.kh, g, j);
    const bool rope = f.rope.has_value();
    const bool shared = L && !L->shared_kv.empty();  // cross-layer KV sharing: the keys are an earlier layer's, normalised and rotated
    // before QK-norm and RoPE: the projections themselves
    const std::vector<float> q_proj = v.weights ? slice_of(f.q, i, h * d, d) : q, k_proj = v.weights && !shared ? slice_of(f.k, j, g * d, d) : k;
    if (v.weights) {
        const std::vector<float> xi(&(*v.x)(0, i, 0), &(*v.x)(0, i, 0) + v.x->shape(2)), xj(&(*v.x)(0, j, 0), &(*v.x)(0, j, 0) + v.x->shape(2));

        const std::string by = L ? " its normalised row times the " + L->q_name + " columns of head " + std::to_string(h + 1)
                                 : " its embedding times W_query";
        const std::string n = L && L->norm ? "n" : "x";
        Step& sq = rec.add_plain("explain_query", "The query of " + quoted(qi) + where + ":" + by,
                                 "q_" + I + " = Σ_c " + n + "_" + I + "c·W_query[c,:]" + (v.weights->query.b.size() ? " + b_query" : ""), vector_tensor(q_proj),
                                 {Axis::feature});
        sq.expansion.push_back(projection_expansion("q(" + qi + ")", xi, v.weights->query, h * d, d, q_proj));
        if (shared) {
            Step& sk = rec.add_plain("explain_key", "The key of " + quoted(kj) + where + ": " + L->shared_kv + "'s, shared (this layer projects no keys)",
                                     "k′_" + J + " = " + L->shared_kv + "'s k′_" + J, vector_tensor(k), {Axis::feature});
            sk.note = "Cross-layer KV sharing: this layer has no " + L->k_name + " and reads the keys and values " + L->shared_kv +
                      " made, already normalised and rotated; only its queries are its own.";
        } else {
            Step& sk = rec.add_plain("explain_key", "The key of " + quoted(kj) + where + ":" +
                                                        (L ? " its normalised row times the " + L->k_name + " columns of key/value head " + std::to_string(g + 1)
                                                           : std::string(" its embedding times W_key")),
                                     "k_" + J + " = Σ_c " + n + "_" + J + "c·W_key[c,:]" + (v.weights->key.b.size() ? " + b_key" : ""), vector_tensor(k_proj),
                                     {Axis::feature});
            sk.expansion.push_back(projection_expansion("k(" + kj + ")", xj, v.weights->key, g * d, d, k_proj));
            if (L && group > 1)
                sk.note = "Grouped-query attention: query head " + std::to_string(h + 1) + " reads key/value head " + std::to_string(g + 1) + " (⌈" +
                          std::to_string(h + 1) + " / " + std::to_string(group) + "⌉), shared with " + std::to_string(group - 1) + " other query head" +
                          (group == 2 ? "" : "s") + ".";
        }
    }

    // ---- QK-norm -----------------------------------------------------------------------------
    if (f.qk_normed && v.weights) {
        const bool whole = v.weights->qk_norm_whole;
        const std::vector<float> qn = row_of(rope ? f.qh_plain : f.qh, h, i), kn = shared ? k : row_of(rope ? f.kh_plain : f.kh, g, j);
        const auto note = [&](const Cube& raw, std::size_t t, std::size_t c0, const std::string& what) {
            const std::size_t n = whole ? raw.shape(2) : d;
            const double ms = rms_of(&raw(0, t, whole ? 0 : c0), n);
            return "RMSNorm over " + (whole ? "all " + std::to_string(n) + " " + what + " features of the token (every head at once)"
                                             : "this head's " + std::to_string(n) + " features") +
                   ": √(mean(" + what.substr(0, 1) + "²) + ε) = " + num(std::sqrt(ms * ms + static_cast<double>(v.weights->qk_norm_eps))) +
                   "; then × the norm's scale, feature by feature.";
        };
        Step& a = rec.add_plain("explain_query_normed", "QK-norm: the query of " + quoted(qi) + " normalised", "q̂_" + I + " = q_norm(q_" + I + ")",
                                vector_tensor(qn), {Axis::feature});
        a.note = note(f.q, i, h * d, "query");
        if (!shared) {
            Step& b = rec.add_plain("explain_key_normed", "QK-norm: the key of " + quoted(kj) + " normalised", "k̂_" + J + " = k_norm(k_" + J + ")",
                                    vector_tensor(kn), {Axis::feature});
            b.note = note(f.k, j, g * d, "key");
        }
    }

    // ---- RoPE --------------------------------------------------------------------------------
    if (rope) {  // each turned by its position's angles
        const std::size_t dims = f.rope->dims(), half = dims / 2;
        const auto angles = [&](std::size_t t) {
            std::string out;
            for (std::size_t c = 0; c < half; ++c) out += (c ? ", " : "") + format_number(f.rope->angles(t, f.rope->interleaved ? 2 * c : c));
            return out;
        };
        // RoPE's angle is p·θ with the model's position id p, which counts from 0: the
        // first token is not turned.
        const std::size_t pq = f.q_position0 + i, pk = j;
        const std::string pi = std::to_string(pq), pj = std::to_string(pk);
        const std::string qs = f.qk_normed ? "q̂" : "q", ks = f.qk_normed ? "k̂" : "k";
        Step& rq = rec.add_plain("explain_query_rotated", "The query of " + quoted(qi) + ", rotated by its position id p = " + pi,
                                 "q′_" + I + " = " + qs + "_" + I + "·cos φ(" + pi + ") + rotate_half(" + qs + "_" + I + ")·sin φ(" + pi + ")",
                                 vector_tensor(q), {Axis::feature});
        rq.note = std::string(f.rope->interleaved ? "Pairs (2c − 1, 2c)" : "Pairs (c, c + " + std::to_string(half) + ")") +
                  " of features (from 1) turn together, each pair written out below with its partner beside it, by the angles φ(p) = p·θ = " + angles(i) +
                  " (radians; " + frequency_words(*f.rope, L ? L->rope : std::nullopt) + "); position ids count from 0, so token " + I + " has p = " + pi + ".";
        if (dims < d) rq.note += " Partial rotary: only the first " + std::to_string(dims) + " of " + std::to_string(d) + " features turn.";
        if (f.rope->attention_scaling != 1.0f)
            rq.note += " cos and sin are multiplied by YaRN's attention factor " + format_number(f.rope->attention_scaling) + ".";
        if (L && !L->rope_words.empty()) rq.note += " " + L->rope_words;
        std::string left_out;
        rq.expansion = rotation_pairs(qs, row_of(f.qh_plain, h, i), q, *f.rope, i, &left_out);
        if (!left_out.empty()) rq.note += " " + left_out;
        if (!shared) {  // a shared layer's keys were rotated where they were made
            Step& rk = rec.add_plain("explain_key_rotated", "The key of " + quoted(kj) + ", rotated by its position id p = " + pj,
                                     "k′_" + J + " = " + ks + "_" + J + "·cos φ(" + pj + ") + rotate_half(" + ks + "_" + J + ")·sin φ(" + pj + ")",
                                     vector_tensor(k), {Axis::feature});
            rk.note = "Angles φ = " + angles(j) + ": the score below sees only their differences.";
            rk.expansion = rotation_pairs(ks, row_of(f.kh_plain, g, j), k, *f.rope, j, nullptr);
        }
    }

    // ---- the score: one dot product, term by term ---------------------------------------------
    Expansion dot;
    dot.label = qi + "·" + kj;
    for (std::size_t c = 0; c < q.size(); ++c) dot.terms.push_back({q[c], {k[c]}});
    dot.result = {score};
    elide(dot);  // a model's head of 64: its first two terms and its last
    const std::string qs = (v.weights ? "q" : "x") + std::string(rope ? "′_" : "_") + I, ks = (v.weights ? "k" : "x") + std::string(rope ? "′_" : "_") + J;
    Step& s = rec.add_plain("explain_score", "The score of " + quoted(qi) + " against " + quoted(kj) + where,
                            "ω_" + I + "," + J + " = " + qs + "·" + ks + " = Σ_c " + qs + "c·" + ks + "c", scalar_trace(score), {});
    s.expansion.push_back(std::move(dot));
    if (L && !L->layer_has_rope)
        s.note = "This layer applies no RoPE: q and k are not rotated, so the score sees what the tokens are, not where they stand; "
                 "the causal mask alone orders them.";
    }
    if (v.depth == ExplainDepth::score) return;

    // ---- the mask's verdict ----------------------------------------------------------------------
    const std::size_t position = f.q_position0 + i;  // the query's place among the keys
    // a key a selection dropped (DeepSeek Sparse Attention's indexer): −∞ in what the softmax read, though the causal mask shows it
    const bool dropped = !masked_out(position, j, f.causal, f.window) && f.scaled.size() && std::isinf(f.scaled(0, h, r, j));
    const bool masked = masked_out(position, j, f.causal, f.window) || dropped;
    if (L || f.window) {  // the chapter's causal mask is its own lesson (causal); a model's layer or a window says its verdict
        std::string rule = f.causal ? "j ≤ i" : "";
        if (f.window) rule += std::string(rule.empty() ? "" : " and ") + "i − j < " + std::to_string(f.window);
        Step& m = rec.add_plain("explain_mask", std::string(masked ? "Masked: " : "Visible: ") + quoted(kj) + " (key " + J + ") for the query " + quoted(qi) +
                                                    " (" + I + ")",
                                "visible when " + rule, integer_tensor({masked ? 0ull : 1ull}, {}), {});
        if (f.causal && j > position) m.note = "Key " + J + " comes after query " + I + ": the causal mask hides the future (score −∞, weight 0).";
        else if (dropped) m.note = "Key " + J + " is visible to query " + I + " but not among the keys its indexer kept (kept): score −∞, weight 0.";
        else if (masked) m.note = "Key " + J + " is " + std::to_string(position - j) + " tokens back, outside the window of " + std::to_string(f.window) +
                                  " (itself and the " + std::to_string(f.window - 1) + " before it): score −∞, weight 0.";
        else m.note = "Key " + J + " is " + (position == j ? "the query itself" : std::to_string(position - j) + " token" + (position - j == 1 ? "" : "s") + " back") +
                      (f.window ? ", inside the window of " + std::to_string(f.window) : "") + ".";
    }

    // What the softmax reads: s = ω / scale, or ω itself.
    const std::string sv = f.scale != 1.0f ? "s" : "ω";
    // latent attention multiplies by its softmax scale; the others divide by theirs
    const auto scaled = [&](float x) { return v.scale.times ? x * v.scale.value : x / f.scale; };
    const std::string by = v.scale.times ? " · " : " / ";
    if (f.scale != 1.0f) {
        Step& sc = rec.add_plain("explain_scaled", std::string(v.scale.times ? "The score times " : "The score divided by ") + v.scale.words,
                                 "s_" + I + "," + J + " = ω_" + I + "," + J + by + v.scale.symbol, scalar_trace(scaled(score)), {});
        sc.note = v.scale.why;
    }

    // ---- the softmax of row i: the forward's max and sum, each exponential shown --------------
    std::vector<float> row;
    if (f.scaled.size()) {
        row = row_of(f.scaled, h, r);
    } else {  // the decoder keeps no scaled scores: the same mask and division, again
        row = row_of(f.scores, h, r);
        for (std::size_t c = 0; c < T; ++c) row[c] = masked_out(position, c, f.causal, f.window) ? -std::numeric_limits<float>::infinity() : scaled(row[c]);
    }
    const float max = f.row_max(0, h, r), sum = f.row_sum(0, h, r);
    std::vector<float> exps(T);
    for (std::size_t c = 0; c < T; ++c) exps[c] = std::exp(row[c] - max);
    const float inv = 1.0f / sum;
    const float weight = f.weights(0, h, r, j);
    const bool masking = f.causal || f.window;

    const bool causal_only = f.causal && !f.window;
    const bool sink = f.sinks.size() > 0;  // learned sinks (gpt-oss): one more logit in the row
    rec.add_plain("explain_max", "The row maximum, subtracted only for numerical stability",
                  "max_j " + sv + "_" + I + ",j" + (causal_only ? " (over j ≤ " + I + ")" : masking ? " (over the visible keys)" : "") +
                      (sink ? ", and sink_h" : ""),
                  scalar_trace(max), {});
    Step& rs = rec.add_plain("explain_row", "Row " + quoted(qi) + " as the softmax reads it" + (causal_only ? " (future masked)" : masking ? " (masked keys −∞)" : ""),
                             sv + "_" + I + ",j" + (f.scale != 1.0f ? " = ω_" + I + ",j" + by + v.scale.symbol : "") + (f.causal ? ", −∞ for j > " + I : "") +
                                 (f.window ? std::string(f.causal ? " or" : ", −∞ for") + " j ≤ " + I + " − " + std::to_string(f.window) : ""),
                             vector_tensor(row), {Axis::token});
    rs.group = "explain_softmax";
    rs.may_be_non_finite = masking;
    Step& e = rec.add_plain("explain_exp", "Each exponential, after subtracting the row maximum", "exp(" + sv + "_" + I + ",j − max)", vector_tensor(exps),
                            {Axis::token});
    e.group = "explain_softmax";
    if (causal_only && position + 1 < T) e.note = "exp(−∞) = 0: the future tokens add nothing to the sum.";
    else if (masking && std::any_of(row.begin(), row.end(), [](float x) { return std::isinf(x); }))
        e.note = "exp(−∞) = 0: the masked keys add nothing to the sum.";
    if (sink) {
        Step& sk = rec.add_plain("explain_sink", "The sink's exponential: one more term of the sum, with no value behind it",
                                 "exp(sink_h − max), sink_h = " + format_number(f.sinks(h)), scalar_trace(std::exp(f.sinks(h) - max)), {});
        sk.group = "explain_softmax";
        sk.note = "The sink's column is dropped after the softmax: its share of the row goes to no value, so the weights sum to less than 1.";
    }
    Step& sm = rec.add_plain("explain_sum", "The sum of the exponentials", "Σ = Σ_j exp(" + sv + "_" + I + ",j − max)" + (sink ? " + exp(sink_h − max)" : ""),
                             scalar_trace(sum), {});
    sm.note = std::string("Added left to right in float32, as the softmax does") + (sink ? ", the sink's last." : ".");
    Expansion div;
    div.label = "α(" + qi + "→" + kj + ")";
    div.terms.push_back({exps[j], {inv}, "1/Σ"});
    div.result = {exps[j] * inv};
    Step& w = rec.add_plain("explain_weight", "The weight of " + quoted(kj) + " for " + quoted(qi) + ": its exponential over the sum",
                            "α_" + I + "," + J + " = exp(" + sv + "_" + I + "," + J + " − max) · (1/Σ)", scalar_trace(exps[j] * inv), {});
    w.expansion.push_back(std::move(div));
    w.note = exps[j] * inv == weight
                 ? "Equal, bit for bit, to the weights matrix at row " + I + ", column " + J + ". Like PyTorch, the softmax multiplies by the reciprocal of the sum."
                 : "Differs from the weights matrix at row " + I + ", column " + J + ".";
    if (f.causal && j > position) w.note += " Column " + J + " is in the future of row " + I + ": masked, so its weight is 0.";
    else if (dropped) w.note += " Key " + J + " is not among the keys row " + I + "'s indexer kept: masked, so its weight is 0.";
    else if (masked) w.note += " Key " + J + " is outside row " + I + "'s window: masked, so its weight is 0.";
    if (v.depth == ExplainDepth::weight) return;

    // ---- the context vector of token i: every value weighted by row i of the weights -----------
    Expansion z;
    z.label = "z(" + qi + ")";
    const Hyper& a = f.final_weights();  // after dropout when there was one
    for (std::size_t c = 0; c < T; ++c) z.terms.push_back({a(0, h, r, c), row_of(f.vh, g, c)});
    z.result = row_of(f.head_outputs, h, r);
    elide(z);
    const std::string values = v.weights || v.latent ? "values" : "embeddings";
    Step& ctx = rec.add_plain("explain_context", "The context vector of " + quoted(qi) + (L ? where : "") + ": row " + I + " of the weights times the " + values,
                              "z_" + I + " = Σ_j α_" + I + ",j·" + (v.weights || v.latent ? "v_j" : "x_j"), vector_tensor(z.result), {Axis::feature});
    ctx.expansion.push_back(std::move(z));
    if (L || T > long_sum) {  // α_ij·v_j's share of the context
        const std::vector<float> vj = row_of(f.vh, g, j);
        std::vector<float> part(vj.size());
        for (std::size_t c = 0; c < vj.size(); ++c) part[c] = a(0, h, r, j) * vj[c];
        double mine = 0.0, all = 0.0;
        for (std::size_t c = 0; c < T; ++c) {
            double n = 0.0;
            for (std::size_t e2 = 0; e2 < vj.size(); ++e2) {
                const double x = static_cast<double>(a(0, h, r, c)) * f.vh(0, g, c, e2);
                n += x * x;
            }
            all += std::sqrt(n);
            if (c == j) mine = std::sqrt(n);
        }
        Step& sh = rec.add_plain("explain_share", "What " + quoted(kj) + " adds to the context of " + quoted(qi) + ": α·v", "α_" + I + "," + J + "·v_" + J,
                                 vector_tensor(part), {Axis::feature});
        char percent[32];
        std::snprintf(percent, sizeof percent, "%.1f", all > 0.0 ? 100.0 * mine / all : 0.0);
        sh.note = std::string("Its length is ") + percent + " % of the lengths of all " + std::to_string(T) + " terms α_" + I + ",j·v_j added together.";
    }
}

void explain_cell(Recorder& rec, const Cell& cell, const Cube& x, const AttentionWeights* weights, const Forward& f, const Scale& scale,
                  ExplainDepth depth, std::size_t head) {
    ExplainView v;
    v.f = &f;
    v.x = &x;
    v.weights = weights;
    v.scale = scale;
    v.depth = depth;
    explain_cell(rec, CellRef{0, head, cell.i, cell.j}, v);
}

namespace {

// A kept attention's heads and the query rows and keys it holds.
struct Extent {
    std::size_t heads, row0, rows, keys;
};
Extent extent_of(const KeptAttention& k) {
    if (k.delta) return {k.delta->in.q.shape(1), 0, k.delta->in.q.shape(2), k.delta->in.q.shape(2)};
    return {k.f.heads, k.f.row0, k.f.rows, k.f.kh.shape(2)};
}

class KeptAttentions : public Explainer {
public:
    explicit KeptAttentions(std::vector<KeptAttention> kept) : kept_(std::move(kept)) {}

    std::vector<Step> explain(const CellRef& cell, const std::vector<std::string>& tokens) const override {
        for (const KeptAttention& k : kept_) {
            const std::size_t layer = k.layer ? k.layer->layer : 0;
            const Extent e = extent_of(k);
            if (layer != cell.layer || cell.head >= e.heads || cell.key >= e.keys || cell.query < e.row0 || cell.query - e.row0 >= e.rows) continue;
            Trace scratch;
            scratch.tokens = tokens;
            scratch.batched = k.batched;
            Recorder rec(scratch);
            explain_cell(rec, cell, view_of(k));
            return std::move(scratch.steps);
        }
        return {};
    }

    std::vector<std::pair<std::size_t, std::size_t>> covered() const override {
        std::vector<std::pair<std::size_t, std::size_t>> out;
        for (const KeptAttention& k : kept_)
            for (std::size_t h = 0; h < extent_of(k).heads; ++h) out.emplace_back(k.layer ? k.layer->layer : 0, h);
        return out;
    }

private:
    std::vector<KeptAttention> kept_;
};

// The index of param `name` (an Index), or none.
std::optional<std::size_t> index_param(const Trace& trace, const std::string& name) {
    for (const auto& [n, v] : trace.params)
        if (n == name)
            if (const Index* at = std::get_if<Index>(&v); at && !at->at.empty()) return static_cast<std::size_t>(at->at[0]);
    return std::nullopt;
}

}  // namespace

ExplainView view_of(const KeptAttention& k) {
    ExplainView v;
    v.f = &k.f;
    v.x = &k.x;
    v.weights = k.weights.get();
    v.scale = k.scale;
    v.depth = k.depth;
    v.layer = k.layer ? &*k.layer : nullptr;
    v.latent = k.latent.get();
    v.delta = k.delta.get();
    return v;
}

std::shared_ptr<const Explainer> keep_for_explaining(std::vector<KeptAttention> kept) {
    return std::make_shared<const KeptAttentions>(std::move(kept));
}

std::optional<CellRef> cell_of(const Trace& trace, const Step& step, std::size_t panel, std::size_t row, std::size_t col) {
    const std::size_t r = step.axes.size();
    if (step.kind != StepKind::result || r < 2 || r != step.tensor.shape.size() || step.axes[r - 1] != Axis::token) return std::nullopt;
    // A token × token step that names its own axes (a head's circuit tables: its weights between
    // the prompt's tokens) is no attention's: no query and key of a forward to write out.
    if (!step.row_axis.empty() || !step.col_axis.empty()) return std::nullopt;
    CellRef c;
    c.layer = index_param(trace, "layer_index").value_or(0);
    const bool square = step.axes[r - 2] == Axis::token;
    if (!square && !(step.query && step.axes[r - 2] == Axis::head)) return std::nullopt;
    // the panel's index along each axis before the last two, the last varying fastest
    for (std::size_t a = r - 2; a-- > 0;) {
        const std::size_t n = step.tensor.shape[a], at = panel % n;
        panel /= n;
        if (step.axes[a] == Axis::head) c.head = at;
        else if (step.axes[a] == Axis::layer) c.layer = at;
        else if (step.axes[a] == Axis::batch && at != 0) return std::nullopt;  // batch 1 only
    }
    if (square) {
        c.query = step.first_row + row;
    } else {  // one query's row per head (kvcache's stepN.*)
        c.head = row;
        c.query = *step.query;
    }
    c.key = step.first_key + col;
    return c;
}

std::vector<Step> explain(const Trace& trace, const CellRef& cell) {
    std::vector<Step> steps = trace.explainer ? trace.explainer->explain(cell, trace.tokens) : std::vector<Step>{};
    steps::check_declared("", steps);  // the catalogue's ids: the explorer reaches depths its command's lesson need not declare
    return steps;
}

std::vector<Step> explain_at(const Trace& trace, const Step& step, std::size_t panel, std::size_t row, std::size_t col) {
    if (const std::optional<CellRef> cell = cell_of(trace, step, panel, row, col)) return explain(trace, *cell);
    const std::vector<std::size_t>& shape = step.tensor.shape;
    if (!trace.explainer || step.kind != StepKind::result || shape.empty() || step.summarised) return {};
    const std::size_t rows = shape.size() >= 2 ? shape[shape.size() - 2] : 1, cols = shape.back();
    if (row >= rows || col >= cols) return {};
    std::vector<Step> steps = trace.explainer->explain_entry(EntryRef{step.id, (panel * rows + row) * cols + col}, trace.tokens);
    steps::check_declared("", steps);
    return steps;
}

namespace {

// Two explainers asked in turn.
class Combined : public Explainer {
public:
    Combined(std::shared_ptr<const Explainer> a, std::shared_ptr<const Explainer> b) : a_(std::move(a)), b_(std::move(b)) {}
    std::vector<Step> explain(const CellRef& cell, const std::vector<std::string>& tokens) const override {
        std::vector<Step> steps = a_->explain(cell, tokens);
        return steps.empty() ? b_->explain(cell, tokens) : steps;
    }
    std::vector<std::pair<std::size_t, std::size_t>> covered() const override {
        std::vector<std::pair<std::size_t, std::size_t>> both = a_->covered(), more = b_->covered();
        for (const auto& lh : more)
            if (std::find(both.begin(), both.end(), lh) == both.end()) both.push_back(lh);
        return both;
    }
    std::vector<Step> explain_entry(const EntryRef& entry, const std::vector<std::string>& tokens) const override {
        std::vector<Step> steps = a_->explain_entry(entry, tokens);
        return steps.empty() ? b_->explain_entry(entry, tokens) : steps;
    }
    bool writes_out(const std::string& step) const override { return a_->writes_out(step) || b_->writes_out(step); }

private:
    std::shared_ptr<const Explainer> a_, b_;
};

}  // namespace

std::shared_ptr<const Explainer> combined(std::shared_ptr<const Explainer> first, std::shared_ptr<const Explainer> second) {
    if (!first) return second;
    if (!second) return first;
    return std::make_shared<const Combined>(std::move(first), std::move(second));
}

}  // namespace attnwalk
