// One entry of the circuits' grids written out, with its arithmetic: a direct logit
// attribution term as a part's dot product with the answer's direction over the frozen
// scale; a patching cell as what the patch swapped, the patched run's metric and its
// normalisation. Every number is the one the grid was computed from (circuits.cpp keeps them).
#include "../explain_parts.hpp"
#include "model_walk.hpp"

namespace attnwalk::model_walk {

namespace {

using explain_parts::dot_of;
using explain_parts::num;
using explain_parts::operand;
using explain_parts::quoted;
using explain_parts::vector_tensor;

std::string head_name(std::size_t l, std::size_t h) { return "head " + std::to_string(l + 1) + "." + std::to_string(h + 1); }

// attribution_heads (head: index l·H + h) or attribution_layers (index l·2 + part).
bool write_attribution(Recorder& rec, const AttributionEntries& a, bool head, std::size_t index) {
    const std::size_t cols = head ? a.H : 2, l = index / cols, k = index % cols;
    if (l >= a.L) return false;
    const float value = head ? a.head_terms[index] : a.layer_terms[index];
    if (!std::isfinite(value)) return false;  // a layer whose attention is no sum of its heads
    const float* part = head ? &a.heads[index * a.C] : &a.layers[index * a.C];
    const std::vector<float> o(part, part + a.C);
    const double dot = head ? a.head_dots[index] : a.layer_dots[index];
    const double after = a.after[l];
    const std::string L1 = std::to_string(l + 1);
    const std::string name = head ? head_name(l, k) : "layer " + L1 + "'s " + (k == 0 ? "attention" : "MLP");
    const std::string o_name = head ? "o_" + L1 + "." + std::to_string(k + 1) : (k == 0 ? "attn_" : "mlp_") + L1;
    Step& os = rec.add_plain("explain_attribution_output",
                             head ? "The output of " + name + " at the last position: its context through its slice of the output projection"
                                  : "The output of " + name + " at the last position, as the stream received it",
                             head ? o_name + " = z_h·W_O,hᵀ" : o_name, vector_tensor(o), {Axis::feature});
    os.note = head ? "Its d_h context features times their rows of the output projection: what this head alone adds to the stream (the projection's bias "
                     "is counted with its layer, in attribution_layers)."
                   : std::string(k == 0 ? "The whole attention's output: its heads' sum and the output projection's bias"
                                        : "The MLP's output") + ", after any norm that follows it: what the layer added to the stream.";
    Step& ds = rec.add_plain("explain_attribution_direction", "The direction the final norm and the unembedding read it along",
                             "u = " + a.direction + (a.centred ? ", centred" : ""), vector_tensor(a.u), {Axis::feature});
    ds.note = "The final norm's weight γ times the unembedding row of " + a.answer + (a.wrong.empty() ? "" : " minus that of " + a.wrong) +
              (a.centred ? ", less its mean: a LayerNorm centres each part, and Σ (v − v̄)·w = Σ v·(w − w̄)" : "") + ". The same for every part.";
    Step& ts = rec.add_plain("explain_attribution_term", "The term of " + name + " in " + a.metric,
                             o_name + "·u / σ" + std::string(after != 1.0 ? " · s" : ""), scalar_trace(value), {});
    ts.expansion.push_back(dot_of(o_name + "·u", o, a.u, static_cast<float>(dot)));
    ts.note = "Its dot product with the direction over the " + std::to_string(a.C) + " features, " + num(dot) + ", divided by σ = " + num(a.sigma) +
              ", the final stream's scale at the last position, frozen as TransformerLens's apply_ln_to_stack freezes it" +
              (after != 1.0 ? "; times the layer scalars from layer " + L1 + " on, s = " + num(after) : "") + ": " + num(value) + ", " +
              (head ? "attribution_heads[" + L1 + "][" + std::to_string(k + 1) + "]" : "attribution_layers[" + L1 + "][" + (k == 0 ? "attention" : "MLP") + "]") +
              ". The terms of every part sum to the model's own " + (a.wrong.empty() ? "logit" : "logit difference") + " (attribution_terms).";
    return true;
}

// patching_resid (index l·T + p), patching_heads (l·H + h), patching_layers (l·2 + part), or their _raw.
bool write_patching(Recorder& rec, const PatchingEntries& p, const std::string& grid, std::size_t index) {
    const std::size_t cols = grid == "resid" ? p.T : grid == "heads" ? p.H : 2, l = index / cols, x = index % cols;
    if (l >= p.L) return false;
    const std::string L1 = std::to_string(l + 1);
    const MetricParts& m = grid == "resid" ? p.resid[index] : grid == "heads" ? p.heads[index] : p.layers[index];
    std::vector<float> clean, corrupted;
    std::string what, why;
    if (grid == "resid") {
        const std::size_t at = (l * p.T + x) * p.C;
        clean.assign(p.resid_clean.begin() + static_cast<std::ptrdiff_t>(at), p.resid_clean.begin() + static_cast<std::ptrdiff_t>(at + p.C));
        corrupted.assign(p.resid_corrupted.begin() + static_cast<std::ptrdiff_t>(at), p.resid_corrupted.begin() + static_cast<std::ptrdiff_t>(at + p.C));
        what = "the stream entering layer " + L1 + " at position " + std::to_string(x + 1) + " (" + quoted(p.prompt.at(x)) + " clean, " +
               quoted(p.corrupt.at(x)) + " corrupted)";
        why = "That one row is swapped; every other row, and every later layer, the corrupted run computes itself.";
    } else if (grid == "heads") {
        if (p.z_clean[l].empty()) return false;  // not softmax heads
        const std::size_t d = p.z_clean[l].size() / p.H;
        clean.assign(p.z_clean[l].begin() + static_cast<std::ptrdiff_t>(x * d), p.z_clean[l].begin() + static_cast<std::ptrdiff_t>((x + 1) * d));
        corrupted.assign(p.z_corrupted[l].begin() + static_cast<std::ptrdiff_t>(x * d), p.z_corrupted[l].begin() + static_cast<std::ptrdiff_t>((x + 1) * d));
        what = "the context z of " + head_name(l, x) + " (what its slice of the output projection reads), here at the last position";
        why = "It is swapped at every position; the layer's other heads keep the corrupted run's, and the output projection then mixes them.";
    } else {
        const std::size_t at = (l * 2 + x) * p.C;
        clean.assign(p.out_clean.begin() + static_cast<std::ptrdiff_t>(at), p.out_clean.begin() + static_cast<std::ptrdiff_t>(at + p.C));
        corrupted.assign(p.out_corrupted.begin() + static_cast<std::ptrdiff_t>(at), p.out_corrupted.begin() + static_cast<std::ptrdiff_t>(at + p.C));
        what = "layer " + L1 + "'s " + (x == 0 ? "attention" : "MLP") + " output, here at the last position";
        why = "It is swapped at every position, before any norm that follows it.";
    }
    Tensor both;
    both.shape = {clean.size(), 2};
    for (std::size_t i = 0; i < clean.size(); ++i) both.data.insert(both.data.end(), {clean[i], corrupted[i]});
    Step& s = rec.add_plain("explain_patching_swap", "What the patch swaps: " + what, "clean → corrupted run", std::move(both), {Axis::feature, Axis::feature});
    s.labels = {"clean", "corrupted"};
    s.note = "The corrupted prompt is run again with the clean run's numbers (first column) in place of its own (second). " + why;
    const bool difference = !p.wrong.empty();
    std::vector<float> values{static_cast<float>(m.answer)};
    std::vector<std::string> labels{"logit(" + p.answer + ")"};
    if (difference) {
        values.push_back(static_cast<float>(m.wrong));
        labels.push_back("logit(" + p.wrong + ")");
    } else {
        values.insert(values.end(), {static_cast<float>(m.top), static_cast<float>(m.log_sum)});
        labels.insert(labels.end(), {"max", "log Σ exp"});
    }
    values.push_back(static_cast<float>(m.value));
    labels.push_back("metric");
    Step& ms = rec.add_plain("explain_patching_metric", "The patched run's " + p.metric + " at the last position",
                             difference ? "logit(" + p.answer + ") − logit(" + p.wrong + ")" : "z_a − max − log Σ exp(z − max)", vector_tensor(values), {Axis::feature});
    ms.labels = labels;
    ms.note = (difference ? num(m.answer) + " − " + operand(m.wrong) : num(m.answer) + " − " + operand(m.top) + " − " + operand(m.log_sum)) + " = " + num(m.value) +
              ", against " + num(p.clean.value) + " on the clean prompt and " + num(p.corrupted.value) + " on the corrupted one (patching_metric).";
    const float raw = static_cast<float>(m.value);  // as the _raw grid holds it, then normalised as the grid is
    const double span = p.clean.value - p.corrupted.value;
    const float normalised = span == 0.0 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>((static_cast<double>(raw) - p.corrupted.value) / span);
    Step& vs = rec.add_plain("explain_patching_value", "Normalised: how much of the clean metric the patch restores", "(patched − corrupted) / (clean − corrupted)",
                             scalar_trace(normalised), {});
    vs.may_be_non_finite = span == 0.0;
    vs.note = "(" + num(raw) + " − " + operand(p.corrupted.value) + ") / (" + num(p.clean.value) + " − " + operand(p.corrupted.value) + ") = " +
              (span == 0.0 ? "nan: the clean and the corrupted metric are equal, nothing to normalise"
                           : num(normalised) + ": 1 restores the clean metric, 0 leaves the corrupted one") +
              " (patching_" + grid + "[" + L1 + "][" + std::to_string(x + 1) + "]).";
    return true;
}

class EntriesExplainer : public Explainer {
public:
    explicit EntriesExplainer(std::shared_ptr<const CircuitEntries> e) : e_(std::move(e)) {}
    std::vector<Step> explain(const CellRef& /*cell*/, const std::vector<std::string>& /*tokens*/) const override { return {}; }
    std::vector<std::pair<std::size_t, std::size_t>> covered() const override { return {}; }
    std::vector<Step> explain_entry(const EntryRef& entry, const std::vector<std::string>& tokens) const override {
        Trace scratch;
        scratch.tokens = tokens;
        Recorder rec(scratch);
        write_entry(rec, *e_, entry.step, entry.index);
        return std::move(scratch.steps);
    }
    bool writes_out(const std::string& step) const override {
        if (step == "attribution_heads" || step == "attribution_layers") return e_->attribution.has_value();
        static const std::vector<std::string> grids = {"patching_resid", "patching_resid_raw", "patching_heads", "patching_heads_raw", "patching_layers", "patching_layers_raw"};
        return e_->patching && std::find(grids.begin(), grids.end(), step) != grids.end();
    }

private:
    std::shared_ptr<const CircuitEntries> e_;
};

}  // namespace

bool write_entry(Recorder& rec, const CircuitEntries& e, const std::string& step, std::size_t index) {
    if (e.attribution && (step == "attribution_heads" || step == "attribution_layers"))
        return write_attribution(rec, *e.attribution, step == "attribution_heads", index);
    if (!e.patching || step.rfind("patching_", 0) != 0) return false;
    std::string grid = step.substr(9);
    if (grid.size() > 4 && grid.compare(grid.size() - 4, 4, "_raw") == 0) grid.resize(grid.size() - 4);
    if (grid != "resid" && grid != "heads" && grid != "layers") return false;  // patching_metric: the two runs themselves
    return write_patching(rec, *e.patching, grid, index);
}

std::shared_ptr<const Explainer> entries_explainer(std::shared_ptr<const CircuitEntries> e) { return std::make_shared<const EntriesExplainer>(std::move(e)); }

}  // namespace attnwalk::model_walk
