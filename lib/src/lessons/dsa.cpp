// dsa: DeepSeek Sparse Attention (ops/sparse_attention.hpp) on seeded weights, as the
// textbook's bonus material ch04/09_dsa builds it: the lightning indexer's score of every
// earlier key, the top k keys each query keeps, the softmax attention over them, its
// distance from full causal attention, and the work of the indexer against the attention.
#include <algorithm>
#include <cmath>
#include <iomanip>
#include <limits>
#include <memory>
#include <sstream>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xmath.hpp>
#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/weights.hpp"
#include "attnwalk/lessons/dsa.hpp"
#include "attnwalk/ops/sparse_attention.hpp"
#include "steps.hpp"

namespace attnwalk {

using namespace steps;

ATTNWALK_LESSON(dsa, 125) {
    static const LessonDecl lesson{"dsa", "DeepSeek Sparse Attention (DeepSeek-V3.2): a lightning indexer scores the earlier keys, each query keeps its top k; the work it saves.",
        joined({{
            {"W_query", "the query projection, d_in×d_out, x·W layout (a parameter)"},
            {"W_key", "the key projection, d_in×d_out, x·W layout (a parameter)"},
            {"W_value", "the value projection, d_in×d_out, x·W layout (a parameter)"},
            {"out_proj.weight", "the output projection, x·W layout (a parameter)"},
            {"out_proj.bias", "the output projection's bias (a parameter)"},
            {"W_q_index", "the indexer's query projection, d_in×H_I·d_I, x·W layout (a parameter)"},
            {"W_k_index", "the indexer's key projection, d_in×d_I: one key per token for every index head, x·W layout (a parameter)"},
            {"W_weights", "the indexer's gate projection, d_in×H_I: one weight per index head and token, x·W layout (a parameter)"},
        }, projection_steps(), {
            {"index_queries", "the indexer's queries, per index head: q^I = X·W_q_index"},
            {"index_keys", "the indexer's keys, one per token shared by the index heads: k^I = X·W_k_index"},
            {"index_dots", "per index head ReLU(q^I·k^I · d_I^−½), every query and key"},
            {"index_gates", "the index heads' weights per query, w = softmax_j(X·W_weights): normalised across the index heads"},
            {"index_scores", "the index scores I = Σ_j w_j·ReLU(q^I_j·k^I · d_I^−½), −∞ after the query", headline},
            {"index_topk", "the keys each query keeps, as torch.topk returns them (highest first; positions)"},
            {"index_kth", "the k-th highest index score of each row: the bar a key must reach (−∞: the row keeps every key it sees)"},
            {"kept", "the kept-keys mask: 1 where the query keeps the key (among its top k and not after it)"},
            {"scores", "ω = Q·Kᵀ per head, before the mask"},
            {"weights", "the attention weights: the softmax of the scaled scores over the kept keys", headline | opening},
            {"head_outputs", "each head's context vectors A_h·V_h"},
            {"context", "the context vectors (heads concatenated)"},
            {"output", "the output projection of the context"},
            {"output_full", "the same layer with every earlier key kept: full causal attention"},
            {"full_difference", "per query, max |output − output_full|: 0 where the query kept every key it sees", headline},
            {"work_per_query", "multiply-adds for the last query: the indexer, full attention, top-k attention, indexer + top-k"},
            {"work_per_sequence", "multiply-adds for every query of the sequence, the same four"},
        }, explain_steps(), {
            {"explain_index_heads", "the indexer's heads for the cell: q^I·k^I, ReLU(q^I·k^I · d_I^−½), the gate w and their product"},
            {"explain_index_score", "the cell's index score, the index heads' terms added (equal to index_scores)"},
            {"explain_topk", "1 when the query keeps the key (among its top k), 0 when not; the k-th score it is measured against"},
        }})};
    return lesson;
}

namespace {

// The indexer's forward and its choice, kept for writing out cells after the walk.
struct Selection {
    IndexerForward ix;
    TopKeys top;
    std::size_t asked = 0;  // k as given (top.k: capped at T)
};

std::string ordinal(std::size_t n) {
    const std::size_t tens = n % 100, ones = n % 10;
    const char* suffix = tens >= 11 && tens <= 13 ? "th" : ones == 1 ? "st" : ones == 2 ? "nd" : ones == 3 ? "rd" : "th";
    return std::to_string(n) + suffix;
}

std::string token_at(const std::vector<std::string>& tokens, std::size_t i) {
    return (i < tokens.size() ? quoted(tokens[i]) : "token") + " (" + std::to_string(i + 1) + ")";
}

// The indexer's part of cell (i, j): each index head's term, the score, and the top-k verdict.
void explain_selection(Recorder& rec, const Selection& sel, const Cell& cell, const std::vector<std::string>& tokens) {
    const IndexerForward& ix = sel.ix;
    const std::size_t i = cell.i, j = cell.j, H = ix.gates.shape(2), T = ix.scores.shape(2), k = sel.top.k;
    const std::string I = std::to_string(i + 1), J = std::to_string(j + 1), qi = token_at(tokens, i), kj = token_at(tokens, j);
    const bool future = j > i;
    Tensor heads;
    heads.shape = {H, 4};
    const std::vector<float> terms = index_terms(ix, 0, i, j);
    for (std::size_t h = 0; h < H; ++h)
        for (float v : {index_dot(ix, 0, h, i, j), ix.dots(0, h, i, j), ix.gates(0, i, h), terms[h]}) heads.data.push_back(v);
    Step& hs = rec.add_plain("explain_index_heads", "The indexer's heads for query " + qi + " and key " + kj,
                             "R_j = ReLU(q^I_" + I + ",j·k^I_" + J + " · d_I^−½), w_" + I + ",j = softmax_j(x_" + I + "·W_weights)",
                             std::move(heads), {Axis::head, Axis::feature});
    hs.labels = {"q·k", "R_j", "w_j", "w_j·R_j"};
    hs.note = "d_I^−½ = " + format_number(ix.scale) +
              ". The ReLU drops a head that finds the key irrelevant (a negative dot product) instead of letting it vote against it; the gate w, "
              "a softmax across the index heads of a linear function of the query's token, says how much each head counts (positive, summing to 1).";
    if (future) hs.note += " The key comes after the query: the causal mask makes its index score −∞ whatever these are.";

    const float score = ix.scores(0, i, j);
    Step& sc = rec.add_plain("explain_index_score", "The index score of key " + kj + " for query " + qi,
                             "I_" + I + "," + J + " = Σ_j w_" + I + ",j·R_j" + std::string(future ? " → −∞ (after the query)" : ""), scalar_trace(score), {});
    sc.may_be_non_finite = future;
    if (!future) {
        Expansion e;
        e.label = "I(" + (i < tokens.size() ? tokens[i] : I) + "→" + (j < tokens.size() ? tokens[j] : J) + ")";
        for (std::size_t h = 0; h < H; ++h) e.terms.push_back({ix.gates(0, i, h), {ix.dots(0, h, i, j)}, ""});
        e.result = {index_score(ix, 0, i, j)};
        sc.expansion.push_back(std::move(e));
        sc.note = index_score(ix, 0, i, j) == score ? "Added in float32 head by head; equal, bit for bit, to index_scores at row " + I + ", column " + J + "."
                                                    : "Differs from index_scores at row " + I + ", column " + J + ".";
    }

    // The verdict, with the row ranked as torch.topk ranked it.
    const bool kept = sel.top.kept(0, i, j) != 0.0f;
    const float kth = sel.top.kth(0, i);
    std::string title;
    if (future) title = "Not kept: key " + J + " comes after query " + I + " (causal), before any selection";
    else if (kept && std::isinf(kth)) title = "Kept: row " + I + " sees " + std::to_string(i + 1) + (i == 0 ? " key" : " keys") + ", no more than k = " + std::to_string(k) + ", so it keeps them all";
    else if (kept) title = "Kept: among the top k = " + std::to_string(k) + " of row " + I + " (its index score " + format_number(score) + " reaches the " + ordinal(k) + ", " + format_number(kth) + ")";
    else if (score < kth) title = "Not among the top k = " + std::to_string(k) + ": its index score " + format_number(score) + " is below the " + ordinal(k) + ", " + format_number(kth);
    else title = "Not among the top k = " + std::to_string(k) + ": its index score " + format_number(score) + " ties the " + ordinal(k) + ", " + format_number(kth) + ", and torch.topk's order took another key";
    Step& v = rec.add_plain("explain_topk", title, "kept_" + I + "," + J + " = [key " + J + " ∈ topk(I_" + I + ", k = " + std::to_string(k) + ")] and " + J + " ≤ " + I,
                            integer_tensor({kept ? 1ull : 0ull}, {}), {});
    std::ostringstream ranked;
    ranked << "Row " << I << " as torch.topk ranks it: kept ";
    const std::size_t* picked = sel.top.indices.data() + i * k;
    std::vector<bool> taken(T, false);
    bool first = true;
    for (std::size_t p = 0; p < k; ++p)
        if (picked[p] <= i) {
            ranked << (first ? "" : ", ") << (picked[p] < tokens.size() ? tokens[picked[p]] : std::to_string(picked[p] + 1)) << " " << format_number(ix.scores(0, i, picked[p]));
            taken[picked[p]] = true;
            first = false;
        }
    std::vector<std::size_t> rest;
    for (std::size_t s = 0; s <= i && s < T; ++s)
        if (!taken[s]) rest.push_back(s);
    std::stable_sort(rest.begin(), rest.end(), [&](std::size_t a, std::size_t b) { return ix.scores(0, i, a) > ix.scores(0, i, b); });
    if (!rest.empty()) ranked << "; not kept";
    for (std::size_t p = 0; p < rest.size(); ++p)
        ranked << (p ? ", " : " ") << (rest[p] < tokens.size() ? tokens[rest[p]] : std::to_string(rest[p] + 1)) << " " << format_number(ix.scores(0, i, rest[p]));
    ranked << ".";
    if (!kept && !future) ranked << " Its score gets −∞ in every head before the softmax, so its weight is 0, however well q·k would have matched.";
    v.note = ranked.str();
}

// The engine's steps of a cell the selection dropped say why its row holds another −∞.
void note_dropped(std::vector<Step>& steps, std::size_t first, const Selection& sel, const Cell& cell) {
    if (cell.j > cell.i || sel.top.kept(0, cell.i, cell.j) != 0.0f) return;
    for (std::size_t s = first; s < steps.size(); ++s) {
        if (steps[s].id == "explain_row") steps[s].note += std::string(steps[s].note.empty() ? "" : " ") + "−∞ also where the indexer did not keep the key (explain_topk).";
        if (steps[s].id == "explain_weight") steps[s].note += " The indexer did not keep key " + std::to_string(cell.j + 1) + ": masked, so its weight is 0.";
    }
}

// Any cell written out after the walk (the explorer, the page): the indexer's part, then the
// engine's for the attention head.
class SparseExplainer : public Explainer {
public:
    SparseExplainer(std::shared_ptr<const Explainer> attention, std::shared_ptr<const Selection> sel)
        : attention_(std::move(attention)), sel_(std::move(sel)) {}
    std::vector<Step> explain(const CellRef& cell, const std::vector<std::string>& tokens) const override {
        std::vector<Step> rest = attention_->explain(cell, tokens);
        if (rest.empty()) return rest;
        Trace scratch;
        scratch.tokens = tokens;
        Recorder rec(scratch);
        explain_selection(rec, *sel_, Cell{cell.query, cell.key}, tokens);
        const std::size_t first = scratch.steps.size();
        for (Step& s : rest) scratch.steps.push_back(std::move(s));
        note_dropped(scratch.steps, first, *sel_, Cell{cell.query, cell.key});
        return std::move(scratch.steps);
    }
    std::vector<std::pair<std::size_t, std::size_t>> covered() const override { return attention_->covered(); }

private:
    std::shared_ptr<const Explainer> attention_;
    std::shared_ptr<const Selection> sel_;
};

void parameter(Recorder& rec, const std::string& id, const std::string& title, const Linear& l) {
    rec.add_plain(id, title + " (x·W layout)", id, to_trace(l.matrix()), {Axis::feature, Axis::feature}).kind = StepKind::parameter;
}

// "1,234 multiply-adds (5.2× fewer)" for the notes.
std::string against(double mine, double full) {
    std::ostringstream out;
    out << std::fixed << std::setprecision(1);
    if (mine < full) out << full / mine << "× fewer than full attention";
    else out << "no fewer than full attention";
    return out.str();
}

void record_work(Recorder& rec, const DsaSpec& spec, std::size_t T) {
    const std::size_t L = spec.context_tokens ? spec.context_tokens : T;
    const std::vector<std::string> labels = {"indexer", "full", "top-k", "DSA"};
    const SparseWork q = sparse_work_per_query(L, spec.index_heads, spec.index_dim, spec.d_out, spec.topk);
    const SparseWork s = sparse_work_per_sequence(L, spec.index_heads, spec.index_dim, spec.d_out, spec.topk);
    rec.trace().set_param("work_tokens", static_cast<ull>(L));
    const std::string per_key = std::to_string(spec.index_heads * (spec.index_dim + 1)), per_kept = std::to_string(2 * spec.d_out);
    Step& wq = rec.add_plain("work_per_query", "Multiply-adds for query " + grouped(L) + " (it sees " + grouped(L) + (L == 1 ? " key)" : " keys)"),
                             "indexer L·H_I·(d_I + 1); full L·2·d_out; top-k min(k, L)·2·d_out; DSA = indexer + top-k",
                             counts_tensor({q.indexer, q.full, q.sparse, q.indexer + q.sparse}, "The work"), {Axis::feature});
    wq.labels = labels;
    wq.note = "Per key the indexer spends H_I·(d_I + 1) = " + per_key + " (each index head's dot product and its gated term), the attention 2·d_out = " +
              per_kept + " (q·k and α·v in every head). DSA: " + against(q.indexer + q.sparse, q.full) + "; the projections (per token, not per key) are left out.";
    Step& ws = rec.add_plain("work_per_sequence", "Multiply-adds for all " + grouped(L) + " queries (causal)",
                             "Σ_t: indexer T(T + 1)/2·H_I·(d_I + 1); full T(T + 1)/2·2·d_out; top-k Σ_t min(k, t)·2·d_out",
                             counts_tensor({s.indexer, s.full, s.sparse, s.indexer + s.sparse}, "The work"), {Axis::feature});
    ws.labels = labels;
    ws.note = "The indexer still looks at every earlier key (its work grows as T²), but with " + per_key + " multiply-adds where attention spends " + per_kept +
              "; the attention itself grows as T·k. DSA: " + against(s.indexer + s.sparse, s.full) + (L <= spec.topk ? " (k ≥ T: nothing is dropped here)." : ".");
}

}  // namespace

Trace walk_dsa(const Embeddings& input, const DsaSpec& spec, const Recording& recording) {
    if (spec.heads == 0 || spec.d_out == 0 || spec.d_out % spec.heads)
        throw UsageError("d_out (" + std::to_string(spec.d_out) + ") must be a multiple of the heads (" + std::to_string(spec.heads) + "), each head d_out / H features");
    if (spec.index_heads == 0 || spec.index_dim == 0) throw UsageError("the lightning indexer needs at least one index head of at least one feature");
    if (spec.topk == 0) throw UsageError("k must be at least 1: with k = 0 a query keeps no key and its softmax has nothing to weigh");
    if (input.batch() > 1)
        throw UsageError("dsa walks one sequence (each sequence's indexer keeps its own keys): give one, not a batch of " + std::to_string(input.batch()));
    const std::size_t T = input.tokens_count(), H = spec.heads;
    check_explain(spec.explain, spec.explain_head, H, T);

    // MultiHeadAttentionWithDSA's construction order, after torch.manual_seed(seed)
    Generator gen(spec.seed);
    const Weights weights = draw_weights(gen, WeightsShape{input.dim(), spec.d_out, H, HeadLayout::fused, true}, Init::linear, false);
    IndexerWeights iw;
    iw.query = draw_linear(gen, input.dim(), spec.index_heads * spec.index_dim, false);
    iw.key = draw_linear(gen, input.dim(), spec.index_dim, false);
    iw.gates = draw_linear(gen, input.dim(), spec.index_heads, false);
    iw.heads = spec.index_heads;
    const AttentionWeights& w = *weights;

    Trace trace = start_trace("dsa", input, nullptr);
    trace.set_param("seed", static_cast<ull>(spec.seed));
    trace.set_param("init", std::string("linear"));
    trace.set_param("d_out", static_cast<ull>(spec.d_out));
    trace.set_param("heads", static_cast<ull>(H));
    trace.set_param("index_heads", static_cast<ull>(spec.index_heads));
    trace.set_param("index_head_dim", static_cast<ull>(spec.index_dim));
    trace.set_param("topk", static_cast<ull>(spec.topk));
    Recorder rec(trace);
    const Cube x = cube_from_trace(input.x);

    record_parameters(rec, w.query, w.key, w.value, "", "");
    record_out_proj(rec, w);
    parameter(rec, "W_q_index", "W_q_index: the indexer's queries, " + heads_words(spec.index_heads, spec.index_dim), iw.query);
    parameter(rec, "W_k_index", "W_k_index: the indexer's key, one for all index heads", iw.key);
    parameter(rec, "W_weights", "W_weights: each index head's weight, from the query's token", iw.gates);

    // ---- the lightning indexer and the top k -------------------------------------------------
    auto sel = std::make_shared<Selection>();
    sel->ix = lightning_indexer(x, iw);
    sel->top = top_k_keys(sel->ix.scores, spec.topk);
    sel->asked = spec.topk;
    const IndexerForward& ix = sel->ix;
    const TopKeys& top = sel->top;
    const std::size_t k = top.k;

    // ---- the attention over the kept keys, and over every earlier key ------------------------
    const Mat bias = sparse_bias(top, 0);
    const Mat all_kept = xt::zeros<float>({T, T});
    ForwardSpec fs;
    fs.causal = true;
    fs.bias = &bias;
    const Forward f = attention_forward(x, &w, fs);
    fs.bias = &all_kept;  // the same forward with nothing dropped: the rows that keep every key are equal bit for bit
    const Forward full = attention_forward(x, &w, fs);
    rec.restart_clock();

    rec.add("queries", "Queries for all heads at once", "Q = X·W_query", f.q, tokens_features);
    rec.add("keys", "Keys for all heads at once", "K = X·W_key", f.k, tokens_features);
    rec.add("values", "Values for all heads at once", "V = X·W_value", f.v, tokens_features);
    rec.add("index_queries", "The indexer's queries, per index head (" + heads_words(spec.index_heads, spec.index_dim) + ")", "q^I = X·W_q_index",
            ix.qh, head_tokens_features);
    rec.add("index_keys", "The indexer's keys: one per token, shared by the index heads", "k^I = X·W_k_index", ix.k, tokens_features);
    rec.mask_from_here(CellMask{});
    rec.add("index_dots", "Each index head's ReLU of the scaled dot products", "R_j = ReLU(q^I_j·k^Iᵀ · d_I^−½), d_I^−½ = " + format_number(ix.scale),
            ix.dots, head_tokens_tokens)
        .note = "A cheap score: d_I = " + std::to_string(spec.index_dim) + " features per index head, and the ReLU zeroes a head that sees no match.";
    Step& gates = rec.add("index_gates", "Each index head's weight for every query", "w_t = softmax_j(x_t·W_weights)", ix.gates, tokens_features);
    for (std::size_t h = 0; h < spec.index_heads; ++h) gates.labels.push_back("w_" + std::to_string(h + 1));
    gates.note = "A softmax across the index heads, as the textbook computes it: each weight positive, each row summing to 1. DeepSeek-V3.2 on "
                 "Hugging Face gates with a plain linear weight scaled by H_I^−½ instead, not softmaxed (it may be negative).";
    Step& is = rec.add("index_scores", "The index scores: the gated sum of the heads", "I_ts = Σ_j w_tj·ReLU(q^I_tj·k^I_s · d_I^−½)", ix.scores, tokens_tokens);
    is.may_be_non_finite = true;
    is.note = "−∞ after the query (the causal mask, added before the selection). DeepSeek-V3.2 on Hugging Face computes the indexer from the query's "
                "compressed latent, puts its keys through a LayerNorm and RoPE, and gates the heads with weights_proj(x)·H_I^−½, not a softmax "
                "(attnwalk model runs it on a deepseek_v32 folder); the selection is the same.";
    rec.mask_from_here(std::nullopt);
    Tensor picked = integer_tensor(std::vector<ull>(top.indices.begin(), top.indices.end()), {T, k});
    picked.positions = true;
    Step& tk = rec.add_plain("index_topk", "The " + std::to_string(k) + (k == 1 ? " key" : " keys") + " each query keeps, highest index score first",
                             "topk(I_t, k = " + std::to_string(k) + ")", std::move(picked), {Axis::token, Axis::rank});
    tk.note = spec.topk > T ? "k = " + std::to_string(spec.topk) + " is more than the " + std::to_string(T) + " tokens: torch.topk is asked for min(k, T) = " +
                                  std::to_string(k) + ", every row keeps every key it sees, and DSA is full causal attention."
                            : "A row that sees fewer than k keys also gets later keys from torch.topk (their score −∞); the causal mask keeps them masked. "
                              "Ties go as torch.topk's CPU loop orders them.";
    rec.add("index_kth", "The " + ordinal(k) + "-highest index score of each row: the bar a key must reach", "I_t,(" + std::to_string(k) + ")", top.kth,
            {Axis::token})
        .may_be_non_finite = true;
    Step& kept = rec.add("kept", "The kept keys: " + std::to_string(k) + " per query at most", "M_ts = 1 if s ∈ topk(I_t) and s ≤ t", top.kept, tokens_tokens);
    kept.legend = "1 = kept, 0 = masked (not among the top k, or after the query)";
    std::size_t dropped = 0;
    for (std::size_t t = 0; t < T; ++t) dropped += (t + 1 > k ? t + 1 - k : 0);
    kept.note = grouped(dropped) + " of the " + grouped(T * (T + 1) / 2) + " causal pairs dropped; rows 1–" + std::to_string(std::min(k, T)) +
                " keep every key they see.";

    rec.add("scores", "Scores of every head", "ω_h = Q_h·K_hᵀ", f.scores, head_tokens_tokens);
    CellMask sparse;
    sparse.keys = T;
    for (float v : top.kept) sparse.kept.push_back(v != 0.0f ? 1 : 0);
    rec.mask_from_here(sparse);
    rec.add_with_row_sums("weights", "Attention weights over the kept keys (scores / √d_k, √d_k = √" + std::to_string(f.d_h) + ")",
                          "A = softmax((ω + M_DSA) / √d_k), M_DSA = 0 where kept, −∞ elsewhere", f.weights, head_tokens_tokens)
        .note = "The usual softmax, with −∞ where the query did not keep the key: a fused kernel would compute only the k kept scores.";
    rec.mask_from_here(std::nullopt);
    rec.add("head_outputs", "Each head's context vectors", "Z_h = A_h·V_h", f.head_outputs, head_tokens_features);
    rec.add("context", "Heads concatenated along the features", "Z = concat_h(Z_h)", f.context, tokens_features);
    rec.add("output", "The output", "Y = Z·W_o + b_o", f.output, tokens_features);
    rec.add("output_full", "Full causal attention: the same layer keeping every earlier key", "Y_full", full.output, tokens_features);
    const Mat diff = xt::amax(xt::abs(f.output - full.output), {2});  // (B,T)
    std::string equal_rows;
    for (std::size_t t = 0; t < T; ++t)
        if (diff(0, t) == 0.0f && t + 1 > k) equal_rows += (equal_rows.empty() ? "" : ", ") + std::to_string(t + 1);
    rec.add("full_difference", "How far each query is from full attention", "max_c |Y_tc − Y_full,tc|", diff, {Axis::token})
        .note = "0, bit for bit, for the rows that see at most k = " + std::to_string(k) + " keys (" + (k >= T ? "all of them" : "1–" + std::to_string(k)) +
                ")" + (equal_rows.empty() ? "" : ", and rows " + equal_rows + ", whose dropped keys had no weight to lose") +
                "; the other rows lost the weight of the keys they dropped.";
    record_work(rec, spec, T);

    if (spec.explain) {
        set_explain_params(trace, *spec.explain, spec.explain_head);
        explain_selection(rec, *sel, *spec.explain, trace.tokens);
        const std::size_t first = trace.steps.size();
        explain_cell(rec, *spec.explain, x, &w, f, head_scale(&w, f), ExplainDepth::context, spec.explain_head);
        note_dropped(trace.steps, first, *sel, *spec.explain);
    }
    Trace done = explainable(finish(std::move(trace), recording, &f), recording, f, x, weights, head_scale(&w, f), ExplainDepth::context);
    if (done.explainer) done.explainer = std::make_shared<const SparseExplainer>(done.explainer, sel);
    return done;
}

Cost dsa_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, const DsaSpec& spec) {
    const double B = static_cast<double>(batch), T = static_cast<double>(tokens), d = static_cast<double>(d_in),  // in double: never wraps
                 D = static_cast<double>(spec.d_out), HI = static_cast<double>(spec.index_heads), dI = static_cast<double>(spec.index_dim),
                 H = static_cast<double>(spec.heads);
    const double weights = 3.0 * d * D + D * D + D + d * (HI * dI + dI + HI);
    const double rows = B * T * (D * 8.0 + HI * dI * 2.0 + dI + HI * 2.0);
    const double squares = B * T * T * (HI + 4.0 + 2.0 * H * forward_square_tensors);
    Cost c;
    c.bytes = 4.0 * (2.0 * weights + 2.0 * rows + squares);
    c.work = weights * B * T + B * T * T * (HI * (dI + 2.0) + 2.0 * (2.0 * D + 32.0 * H));
    return c;
}

}  // namespace attnwalk
