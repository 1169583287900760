// Circuits: which components write a prediction (direct logit attribution) and which cause it
// (activation patching), as TransformerLens computes them (docs/circuits.md says where the two
// differ by design).
#include <complex>
#include <functional>

#include "attnwalk/ops/eigen.hpp"
#include "model_walk.hpp"

namespace attnwalk::model_walk {

namespace {

// One run's values the circuits read, at their hook points: what each layer's output
// projection read (the heads' context Z, or Z ⊙ σ(gate) with an output gate), the attention's
// and the MLP's outputs as the stream received them (after a norm after them) and as they
// were made (before it), the stream entering each layer, the token and position embeddings,
// the last layer's output.
class CircuitTap : public DecoderTap {
public:
    explicit CircuitTap(std::size_t L) : context(L), attention_added(L), mlp_added(L), resid_pre(L), attention(L), mlp(L) {}
    std::vector<Cube> context, attention_added, mlp_added;  // per layer (1,T,H·d_h), (1,T,C), (1,T,C)
    std::vector<Cube> resid_pre, attention, mlp;            // per layer (1,T,C)
    Cube embed, pos_embed, final_stream;                    // (1,T,C)

    bool keeps_attention(std::size_t /*layer*/) const override { return true; }  // the heads' path that keeps their context
    void hook(std::size_t l, HookId id, const Hooked& value) override {
        if (id == hooks::embed) embed = value.get<Cube>();
        else if (id == hooks::pos_embed) pos_embed = value.get<Cube>();
        else if (id == hooks::heads) {
            const Forward& f = value.get<Forward>();
            context[l] = f.gated.size() ? f.gated : f.context;
        } else if (id == hooks::attention || id == hooks::attention_norm) attention_added[l] = value.get<Cube>();
        else if (id == hooks::mlp || id == hooks::mlp_norm) mlp_added[l] = value.get<Cube>();
        else if (id == hooks::residual_2) final_stream = value.get<Cube>();
    }
    void patch(std::size_t l, HookId id, Cube& value) override {  // kept, not changed
        if (id == hooks::resid_pre) resid_pre[l] = value;
        else if (id == hooks::attention) attention[l] = value;
        else if (id == hooks::mlp) mlp[l] = value;
    }
};

// A patched run: at one hook point of one layer, the value replaced by the clean run's (one
// row of it, or all of it).
class PatchTap : public DecoderTap {
public:
    PatchTap(std::size_t layer, HookId point, const Cube& with, std::optional<std::size_t> row) : layer_(layer), point_(point), with_(with), row_(row) {}
    void patch(std::size_t l, HookId id, Cube& value) override {
        if (l != layer_ || id != point_) return;
        if (row_) xt::view(value, 0, *row_, xt::all()) = xt::view(with_, 0, *row_, xt::all());
        else value = with_;
    }

private:
    std::size_t layer_;
    HookId point_;
    const Cube& with_;
    std::optional<std::size_t> row_;
};

// Layer l's heads, when its attention output is their sum through o_proj: a layer of
// softmax heads with no norm after its attention (else null).
const AttentionWeights* separable_heads(const DecoderWeights& w, std::size_t l) {
    const BlockWeights& b = w.blocks[l];
    const HeadsBlock* heads = b.attention->as<HeadsBlock>();
    return heads && heads->w.out_proj && !b.attention_norm ? &heads->w : nullptr;
}

// The metric's words: "logit(␣Mary) − logit(␣John)", "log p(␣Mary)", "logit(␣Mary)".
std::string metric_words(const ModelSpec& spec, std::size_t answer, bool log_prob) {
    const std::string a = token_labels({answer}, spec.tokenizer).front();
    if (spec.wrong) return "logit(" + a + ") − logit(" + token_labels({*spec.wrong}, spec.tokenizer).front() + ")";
    return (log_prob ? "log p(" : "logit(") + a + ")";
}

// The metric at the last position: the logit difference answer − wrong, else the answer's
// log-probability (`log_prob`, in double from the float32 logits) or its logit.
MetricParts metric_parts(const DecoderWeights& w, const Cube& xf, std::size_t answer, std::optional<std::size_t> wrong, bool log_prob) {
    const Mat logits = decoder_logits(w, xf, xf.shape(1) - 1);  // (1,V)
    MetricParts m;
    m.answer = logits(0, answer);
    if (wrong) {
        m.wrong = logits(0, *wrong);
        m.value = m.answer - m.wrong;
        return m;
    }
    if (!log_prob) return m.value = m.answer, m;
    double top = logits(0, 0), sum = 0.0;
    for (std::size_t v = 0; v < logits.shape(1); ++v) top = std::max(top, static_cast<double>(logits(0, v)));
    for (std::size_t v = 0; v < logits.shape(1); ++v) sum += std::exp(static_cast<double>(logits(0, v)) - top);
    m.top = top;
    m.log_sum = std::log(sum);
    m.value = m.answer - top - m.log_sum;
    return m;
}
double metric_of(const DecoderWeights& w, const Cube& xf, std::size_t answer, std::optional<std::size_t> wrong, bool log_prob) {
    return metric_parts(w, xf, answer, wrong, log_prob).value;
}

// Row t of a (1,T,C) tensor.
std::vector<float> row_at(const Cube& x, std::size_t t) {
    std::vector<float> r(x.shape(2));
    for (std::size_t k = 0; k < r.size(); ++k) r[k] = x(0, t, k);
    return r;
}

Vec vec_of(const std::vector<float>& values) {
    Vec v = Vec::from_shape({values.size()});
    std::copy(values.begin(), values.end(), v.begin());
    return v;
}

std::string four(double v) { return format_number(static_cast<float>(v)); }

}  // namespace

// Direct logit attribution (TransformerLens: decompose_resid, stack_head_results,
// apply_ln_to_stack, then the dot product with the answer's unembedding direction): the last
// position's stream is a sum of parts (the embeddings, each head through its slice of o_proj,
// o_proj's bias, each MLP); the final norm, with its scale σ frozen at the final stream's,
// is linear in them: LayerNorm centres each part and divides it by σ, RMSNorm divides it.
// Each part's term is then its dot product with γ ⊙ (W_U[answer] − W_U[wrong]) (× the logit
// scale); the final norm's shift and the head's bias add their own. The terms sum to the logit.
void record_attribution(Recorder& rec, const ModelSpec& spec, const DecoderWeights& w, const std::vector<std::size_t>& ids, std::size_t answer,
                        CircuitEntries& entries) {
    const DecoderConfig& c = w.config;
    if (c.logit_softcap)
        throw UsageError("direct logit attribution splits the logits into a sum of parts, and this model soft-caps them (tanh(z / " +
                         format_number(*c.logit_softcap) + ")·" + format_number(*c.logit_softcap) + "), which no sum passes through: activation patching measures such a model");
    const std::size_t L = c.layers, H = c.heads, C = c.width, T = ids.size(), t = T - 1;
    CircuitTap tap(L);
    const Cube xf = decoder_forward(w, ids, nullptr, &tap);
    const double logit = metric_of(w, xf, answer, spec.wrong, false);
    // the direction u = γ ⊙ (W_U[answer] − W_U[wrong]) · logit_scale, centred for a LayerNorm (Σ_c (v_c − v̄)·u_c = Σ_c v_c·(u_c − ū))
    const Linear& head = w.output_head();
    std::vector<float> row_a(C), row_b(C, 0.0f);
    head.copy_out_row(answer, row_a.data());
    if (spec.wrong) head.copy_out_row(*spec.wrong, row_b.data());
    const double scale = c.logit_scale.value_or(1.0f);
    const bool centred = c.norm != NormKind::rms_norm;
    std::vector<double> u(C);
    double mean_u = 0.0;
    for (std::size_t k = 0; k < C; ++k) {
        u[k] = static_cast<double>(w.final_norm.scale(k)) * (static_cast<double>(row_a[k]) - static_cast<double>(row_b[k])) * scale;
        mean_u += u[k] / static_cast<double>(C);
    }
    if (centred)
        for (double& v : u) v -= mean_u;
    // σ of the final stream at the last position, as the final norm computes it (in double)
    double mean = 0.0, square = 0.0;
    for (std::size_t k = 0; k < C; ++k) mean += tap.final_stream(0, t, k) / static_cast<double>(C);
    for (std::size_t k = 0; k < C; ++k) {
        const double v = tap.final_stream(0, t, k) - (centred ? mean : 0.0);
        square += v * v / static_cast<double>(C);
    }
    const double sigma = std::sqrt(square + static_cast<double>(c.norm_eps));
    // a layer's output × its scalar (Gemma 4) multiplies every part written before it: each layer's parts × the scalars from it on
    std::vector<double> after(L + 1, 1.0);
    for (std::size_t l = L; l-- > 0;) after[l] = after[l + 1] * static_cast<double>(w.blocks[l].layer_scalar.value_or(1.0f));
    const auto dot = [&](const Cube& part) {
        double s = 0.0;
        for (std::size_t k = 0; k < C; ++k) s += static_cast<double>(part(0, t, k)) * u[k];
        return s;
    };
    const auto term = [&](const Cube& part, double times) { return dot(part) * times / sigma; };
    Mat heads = Mat::from_shape({L, H});
    Mat layers = Mat::from_shape({L, 2});
    AttributionEntries& e = entries.attribution.emplace();  // what writing out any entry needs
    e.L = L, e.H = H, e.C = C, e.last = t, e.sigma = sigma, e.centred = centred, e.after = after;
    e.u.assign(u.begin(), u.end());
    e.heads.assign(L * H * C, 0.0f);
    e.head_dots.assign(L * H, 0.0);
    e.layers.resize(L * 2 * C);
    e.layer_dots.resize(L * 2);
    double attention_sum = 0.0, mlp_sum = 0.0, bias_sum = 0.0;
    std::string whole;  // the layers whose heads are not separable
    for (std::size_t l = 0; l < L; ++l) {
        const double a = term(tap.attention_added[l], after[l]), m = term(tap.mlp_added[l], after[l]);
        for (std::size_t k = 0; k < C; ++k) {
            e.layers[(l * 2) * C + k] = tap.attention_added[l](0, t, k);
            e.layers[(l * 2 + 1) * C + k] = tap.mlp_added[l](0, t, k);
        }
        e.layer_dots[l * 2] = dot(tap.attention_added[l]);
        e.layer_dots[l * 2 + 1] = dot(tap.mlp_added[l]);
        layers(l, 0) = static_cast<float>(a);
        layers(l, 1) = static_cast<float>(m);
        attention_sum += a;
        mlp_sum += m;
        const AttentionWeights* aw = separable_heads(w, l);
        const std::size_t heads_here = aw ? aw->heads : 0;
        for (std::size_t h = 0; h < H; ++h) heads(l, h) = std::numeric_limits<float>::quiet_NaN();
        if (!aw || heads_here != H || tap.context[l].size() == 0) {
            whole += (whole.empty() ? "" : ", ") + std::to_string(l + 1);
            continue;
        }
        const Linear& o = *aw->out_proj;
        const std::size_t d = aw->head_size();
        std::vector<double> out(C);
        for (std::size_t h = 0; h < H; ++h) {  // the head's output o = z_h·W_O,hᵀ over its d_h features, then o·u
            std::fill(out.begin(), out.end(), 0.0);
            for (std::size_t j = h * d; j < (h + 1) * d; ++j) {
                const double z = tap.context[l](0, t, j);
                for (std::size_t k = 0; k < C; ++k) out[k] += z * static_cast<double>(o.at(j, k));
            }
            double s = 0.0;
            for (std::size_t k = 0; k < C; ++k) {
                s += out[k] * u[k];
                e.heads[(l * H + h) * C + k] = static_cast<float>(out[k]);
            }
            e.head_dots[l * H + h] = s;
            heads(l, h) = static_cast<float>(s * after[l] / sigma);
        }
        if (o.b.size()) {
            double s = 0.0;
            for (std::size_t k = 0; k < C; ++k) s += static_cast<double>(o.b(k)) * u[k];
            bias_sum += s * after[l] / sigma;
        }
    }
    const double embed = term(c.embed_scale ? Cube(tap.embed * *c.embed_scale) : tap.embed, after[0]);
    const double positions = tap.pos_embed.size() ? term(tap.pos_embed, after[0]) : 0.0;
    double shift = 0.0, head_bias = 0.0;  // β · (W_U[answer] − W_U[wrong]) · logit_scale; the head's own bias
    for (std::size_t k = 0; k < C && w.final_norm.shift.size(); ++k)
        shift += static_cast<double>(w.final_norm.shift(k)) * (static_cast<double>(row_a[k]) - static_cast<double>(row_b[k])) * scale;
    if (head.b.size()) head_bias = (static_cast<double>(head.b(answer)) - (spec.wrong ? static_cast<double>(head.b(*spec.wrong)) : 0.0)) * scale;
    const double sum = embed + positions + attention_sum + mlp_sum + shift + head_bias;

    const std::string metric = metric_words(spec, answer, false);
    const std::string through = centred ? "(v − v̄)/σ" : "v/σ";
    const std::string dir = "γ ⊙ " + std::string(spec.wrong ? "(W_U[a] − W_U[b])" : "W_U[a]") + (c.logit_scale ? " · " + format_number(*c.logit_scale) : "");
    Step& hs = rec.add_plain("attribution_heads", "Direct logit attribution: each head's share of " + metric,
                             "z_h·W_O,hᵀ → " + through + " · " + dir, to_trace(heads), {Axis::layer, Axis::head});
    hs.may_be_non_finite = !whole.empty();
    std::string largest;  // the largest term, said in the note
    std::optional<std::pair<std::size_t, std::size_t>> at;
    {
        for (std::size_t l = 0; l < L; ++l)
            for (std::size_t h = 0; h < H; ++h)
                if (std::isfinite(heads(l, h)) && (!at || std::abs(heads(l, h)) > std::abs(heads(at->first, at->second)))) at = std::make_pair(l, h);
        if (at)
            largest = " The largest, head " + std::to_string(at->first + 1) + "." + std::to_string(at->second + 1) + ": its output dotted with the direction, " +
                      four(heads(at->first, at->second) * sigma / after[at->first]) + ", divided by σ = " + four(sigma) +
                      (after[at->first] != 1.0 ? ", × the later layers' scalars " + four(after[at->first]) : std::string()) + ": " +
                      four(heads(at->first, at->second)) + ".";
    }
    hs.note = "At the last position, each head's output through its slice of the output projection, then the final norm with its scale frozen at "
              "the final stream's (σ = " + four(sigma) + (centred ? ", each part centred" : "") + ") and the unembedding." +
              (whole.empty() ? std::string()
                             : " Layer" + std::string(whole.find(',') == std::string::npos ? " " : "s ") + whole +
                                   ": the attention's output is not a sum of its heads here (a norm after it, or another kind of attention): nan, their "
                                   "whole attention is in attribution_layers.") + largest;
    Step& ls = rec.add_plain("attribution_layers", "Each layer's attention and MLP share of " + metric, through + " · " + dir, to_trace(layers),
                             {Axis::layer, Axis::feature});
    ls.labels = {"attention", "MLP"};
    ls.note = "The attention column is its heads' sum plus the output projection's bias (" + four(bias_sum) + " over all layers)" +
              (w.blocks.front().mlp_norm || w.blocks.front().attention_norm ? ", each after the norm that follows it," : "") + " as the stream received it.";
    std::vector<std::string> labels{"embeddings"};
    std::vector<float> values{static_cast<float>(embed)};
    if (tap.pos_embed.size()) {
        labels.push_back("positions");
        values.push_back(static_cast<float>(positions));
    }
    labels.insert(labels.end(), {"attention", "MLPs"});
    values.insert(values.end(), {static_cast<float>(attention_sum), static_cast<float>(mlp_sum)});
    if (w.final_norm.shift.size()) {
        labels.push_back("final norm's shift");
        values.push_back(static_cast<float>(shift));
    }
    if (head.b.size()) {
        labels.push_back("head's bias");
        values.push_back(static_cast<float>(head_bias));
    }
    labels.insert(labels.end(), {"sum", "logit"});
    values.insert(values.end(), {static_cast<float>(sum), static_cast<float>(logit)});
    Step& ts = rec.add_plain("attribution_terms", "The parts of " + metric + " and their sum", "Σ terms = " + metric,
                             to_trace(vec_of(values)), {Axis::feature});
    ts.labels = labels;
    ts.note = "The last two: the sum of the terms and the model's own " + std::string(spec.wrong ? "logit difference" : "logit") +
              "; they differ by " + four(std::abs(sum - logit)) + " (the terms in double, the model's logits in float32).";
    e.metric = metric;
    e.direction = dir;
    e.answer = token_labels({answer}, spec.tokenizer).front();
    if (spec.wrong) e.wrong = token_labels({*spec.wrong}, spec.tokenizer).front();
    e.head_terms.assign(heads.begin(), heads.end());
    e.layer_terms.assign(layers.begin(), layers.end());
    // one term written out: the head asked for (spec.head, in spec.layer), else the largest
    if (spec.head && spec.layer < L && *spec.head < H && std::isfinite(heads(spec.layer, *spec.head))) at = std::make_pair(spec.layer, *spec.head);
    if (at) write_entry(rec, entries, "attribution_heads", at->first * H + at->second);
    else {  // no head's term of its own (a norm after every attention): the largest of a layer's attention and MLP terms
        std::size_t best = 0;
        for (std::size_t k = 1; k < 2 * L; ++k) best = std::abs(layers.data()[k]) > std::abs(layers.data()[best]) ? k : best;
        write_entry(rec, entries, "attribution_layers", best);
    }
}

// Activation patching (TransformerLens's patching.py: get_act_patch_resid_pre,
// get_act_patch_attn_head_out_all_pos, and attn_out / mlp_out over every position): run
// the corrupted prompt with one activation taken from the clean run, and measure the metric;
// normalised as its demos do, (patched − corrupted)/(clean − corrupted).
void record_patching(Recorder& rec, const ModelSpec& spec, const DecoderWeights& w, const std::vector<std::size_t>& ids, std::size_t answer,
                     CircuitEntries& entries) {
    const DecoderConfig& c = w.config;
    const std::size_t L = c.layers, H = c.heads, T = ids.size();
    const bool log_prob = !spec.wrong;
    CircuitTap clean(L), corrupt(L);  // their values (the heads' context kept: the path that keeps each layer's attention)
    (void)decoder_forward(w, ids, nullptr, &clean);
    (void)decoder_forward(w, spec.corrupt, nullptr, &corrupt);
    // the metric on the path the patched runs take (keeping nothing), so that a patch that changes nothing measures 0
    PatchingEntries& e = entries.patching.emplace();  // what writing out any entry needs
    const std::size_t C = c.width;
    e.L = L, e.H = H, e.T = T, e.C = C;
    e.clean = metric_parts(w, decoder_forward(w, ids, nullptr, nullptr), answer, spec.wrong, log_prob);
    e.corrupted = metric_parts(w, decoder_forward(w, spec.corrupt, nullptr, nullptr), answer, spec.wrong, log_prob);
    const double m_clean = e.clean.value, m_corrupt = e.corrupted.value;
    const double span = m_clean - m_corrupt;
    const auto run = [&](std::size_t l, HookId point, const Cube& with, std::optional<std::size_t> row) {
        PatchTap tap(l, point, with, row);
        return metric_parts(w, decoder_forward(w, spec.corrupt, nullptr, &tap), answer, spec.wrong, log_prob);
    };
    e.metric = metric_words(spec, answer, log_prob);
    e.answer = token_labels({answer}, spec.tokenizer).front();
    if (spec.wrong) e.wrong = token_labels({*spec.wrong}, spec.tokenizer).front();
    e.prompt = token_labels(ids, spec.tokenizer);
    e.corrupt = token_labels(spec.corrupt, spec.tokenizer);
    e.resid.resize(L * T), e.heads.resize(L * H), e.layers.resize(L * 2);
    e.resid_clean.resize(L * T * C), e.resid_corrupted.resize(L * T * C);
    e.z_clean.resize(L), e.z_corrupted.resize(L);
    e.out_clean.resize(L * 2 * C), e.out_corrupted.resize(L * 2 * C);
    for (std::size_t l = 0; l < L; ++l) {
        std::copy(clean.resid_pre[l].begin(), clean.resid_pre[l].end(), e.resid_clean.begin() + static_cast<std::ptrdiff_t>(l * T * C));
        std::copy(corrupt.resid_pre[l].begin(), corrupt.resid_pre[l].end(), e.resid_corrupted.begin() + static_cast<std::ptrdiff_t>(l * T * C));
        for (std::size_t k = 0; k < C; ++k) {
            e.out_clean[l * 2 * C + k] = clean.attention[l](0, T - 1, k), e.out_corrupted[l * 2 * C + k] = corrupt.attention[l](0, T - 1, k);
            e.out_clean[(l * 2 + 1) * C + k] = clean.mlp[l](0, T - 1, k), e.out_corrupted[(l * 2 + 1) * C + k] = corrupt.mlp[l](0, T - 1, k);
        }
    }
    const auto normalised = [&](const Mat& raw) {
        Mat n = raw;
        for (float& v : n) v = span == 0.0 ? std::numeric_limits<float>::quiet_NaN() : static_cast<float>((static_cast<double>(v) - m_corrupt) / span);
        return n;
    };
    const std::string metric = metric_words(spec, answer, log_prob);
    const std::string formula = "(patched − corrupted) / (clean − corrupted)";
    rec.add_plain("patching_metric", "The metric " + metric + " on the clean and the corrupted prompt", metric,
                  to_trace(Vec({static_cast<float>(m_clean), static_cast<float>(m_corrupt)})), {Axis::feature})
        .labels = {"clean", "corrupted"};
    Mat resid = Mat::from_shape({L, T});
    for (std::size_t l = 0; l < L; ++l)
        for (std::size_t p = 0; p < T; ++p) {
            e.resid[l * T + p] = run(l, hooks::resid_pre, clean.resid_pre[l], p);
            resid(l, p) = static_cast<float>(e.resid[l * T + p].value);
        }
    const std::string corrupted = "The corrupted prompt (" + [&] {
        std::string s;
        const std::vector<std::string> words = token_labels(spec.corrupt, spec.tokenizer);
        for (std::size_t i = 0; i < words.size(); ++i) s += (i ? " " : "") + words[i];
        return s;
    }() + ") run with ";
    Step& r = rec.add_plain("patching_resid", "Patching the stream entering each layer, position by position", formula, to_trace(normalised(resid)),
                            {Axis::layer, Axis::token});
    r.may_be_non_finite = span == 0.0;
    r.note = corrupted + "one row of the stream entering layer l taken from the clean run; 1: the clean metric restored, 0: no change." +
             (span == 0.0 ? " The clean and the corrupted metric are equal: nothing to normalise (nan)." : "");
    rec.add_plain("patching_resid_raw", "The same, the metric itself", metric, to_trace(resid), {Axis::layer, Axis::token});
    Mat heads = Mat::from_shape({L, H});
    std::string whole;
    for (std::size_t l = 0; l < L; ++l) {
        const AttentionWeights* aw = separable_heads(w, l);
        const BlockWeights& b = w.blocks[l];
        const HeadsBlock* hb = b.attention->as<HeadsBlock>();  // a norm after the attention is fine here: o_proj's output is patched before it
        if (hb && hb->w.out_proj) aw = &hb->w;
        if (!aw || aw->heads != H || clean.context[l].size() == 0 || corrupt.context[l].size() == 0) {
            for (std::size_t h = 0; h < H; ++h) heads(l, h) = std::numeric_limits<float>::quiet_NaN();
            whole += (whole.empty() ? "" : ", ") + std::to_string(l + 1);
            continue;
        }
        const std::size_t d = aw->head_size();
        e.z_clean[l] = row_at(clean.context[l], T - 1);
        e.z_corrupted[l] = row_at(corrupt.context[l], T - 1);
        for (std::size_t h = 0; h < H; ++h) {  // the corrupted z with head h's from the clean run, through o_proj
            Cube z = corrupt.context[l];
            xt::view(z, 0, xt::all(), xt::range(h * d, (h + 1) * d)) = xt::view(clean.context[l], 0, xt::all(), xt::range(h * d, (h + 1) * d));
            const Cube y = project(z, *aw->out_proj);
            e.heads[l * H + h] = run(l, hooks::attention, y, std::nullopt);
            heads(l, h) = static_cast<float>(e.heads[l * H + h].value);
        }
    }
    Step& hs = rec.add_plain("patching_heads", "Patching each head's output", formula, to_trace(normalised(heads)), {Axis::layer, Axis::head});
    hs.may_be_non_finite = span == 0.0 || !whole.empty();
    std::string cell;
    std::optional<std::pair<std::size_t, std::size_t>> at;
    {
        for (std::size_t l = 0; l < L; ++l)
            for (std::size_t h = 0; h < H; ++h)
                if (std::isfinite(heads(l, h)) && (!at || std::abs(heads(l, h) - m_corrupt) > std::abs(heads(at->first, at->second) - m_corrupt))) at = std::make_pair(l, h);
        if (at && span != 0.0) {
            const double p = heads(at->first, at->second);
            const auto operand = [](double v) { return v < 0.0 ? "(" + four(v) + ")" : four(v); };  // "− (-4.3162)"
            cell = " The largest, head " + std::to_string(at->first + 1) + "." + std::to_string(at->second + 1) + ": (" + four(p) + " − " + operand(m_corrupt) +
                   ") / (" + four(m_clean) + " − " + operand(m_corrupt) + ") = " + four((p - m_corrupt) / span) + ".";
        }
    }
    hs.note = corrupted + "head h's z (what its slice of the output projection reads) at every position taken from the clean run." + cell +
              (whole.empty() ? std::string() : " Layer" + std::string(whole.find(',') == std::string::npos ? " " : "s ") + whole + ": not softmax heads (nan).");
    rec.add_plain("patching_heads_raw", "The same, the metric itself", metric, to_trace(heads), {Axis::layer, Axis::head}).may_be_non_finite = !whole.empty();
    // one cell written out: the head asked for (spec.head, in spec.layer), else the largest change
    if (spec.head && spec.layer < L && *spec.head < H && std::isfinite(heads(spec.layer, *spec.head))) at = std::make_pair(spec.layer, *spec.head);
    if (at) write_entry(rec, entries, "patching_heads", at->first * H + at->second);
    Mat layers = Mat::from_shape({L, 2});
    for (std::size_t l = 0; l < L; ++l) {
        e.layers[l * 2] = run(l, hooks::attention, clean.attention[l], std::nullopt);
        e.layers[l * 2 + 1] = run(l, hooks::mlp, clean.mlp[l], std::nullopt);
        layers(l, 0) = static_cast<float>(e.layers[l * 2].value);
        layers(l, 1) = static_cast<float>(e.layers[l * 2 + 1].value);
    }
    Step& ls = rec.add_plain("patching_layers", "Patching each layer's attention and MLP output", formula, to_trace(normalised(layers)),
                             {Axis::layer, Axis::feature});
    ls.labels = {"attention", "MLP"};
    ls.may_be_non_finite = span == 0.0;
    ls.note = corrupted + "layer l's whole attention output (or MLP output) taken from the clean run. Clean " + metric + " = " + four(m_clean) +
              ", corrupted " + four(m_corrupt) + ".";
    rec.add_plain("patching_layers_raw", "The same, the metric itself", metric, to_trace(layers), {Axis::layer, Axis::feature}).labels = {"attention", "MLP"};
}

namespace {

// Rows of doubles, row-major.
struct Table {
    std::size_t rows = 0, cols = 0;
    std::vector<double> v;
    Table(std::size_t r, std::size_t c) : rows(r), cols(c), v(r * c, 0.0) {}
    double& operator()(std::size_t i, std::size_t j) { return v[i * cols + j]; }
    double operator()(std::size_t i, std::size_t j) const { return v[i * cols + j]; }
};

// Head h's d_h columns of a projection (C×d_h, in double), or, `transposed`, its d_h inputs
// (the output projection's rows for the head: d_h×C, stored C×d_h here too).
Table head_block(const AttentionWeights& aw, const Linear& layer, std::size_t h, bool rows_of_head) {
    const std::size_t d = aw.head_size(), C = rows_of_head ? layer.out() : layer.in();
    Table t(C, d);
    if (!rows_of_head && aw.layout != HeadLayout::fused) {
        const Linear cols = aw.head_columns(layer, h);
        for (std::size_t k = 0; k < C; ++k)
            for (std::size_t j = 0; j < d; ++j) t(k, j) = cols.w(k, j);
        return t;
    }
    for (std::size_t k = 0; k < C; ++k)
        for (std::size_t j = 0; j < d; ++j) t(k, j) = rows_of_head ? layer.at(h * d + j, k) : layer.at(k, h * d + j);
    return t;
}

// Columns first … first+count−1 of a layer (d_in×count, in double).
Table columns_of(const Linear& layer, std::size_t first, std::size_t count) {
    Table t(layer.in(), count);
    for (std::size_t k = 0; k < layer.in(); ++k)
        for (std::size_t j = 0; j < count; ++j) t(k, j) = layer.at(k, first + j);
    return t;
}

// Inputs first … first+count−1 of a layer as d_out×count (an output projection's rows for one head, transposed).
Table rows_of(const Linear& layer, std::size_t first, std::size_t count) {
    Table t(layer.out(), count);
    for (std::size_t k = 0; k < layer.out(); ++k)
        for (std::size_t j = 0; j < count; ++j) t(k, j) = layer.at(first + j, k);
    return t;
}

// x (C) · M (C×d) -> (d), accumulated row by row (axpy: the compiler's vectors keep the order).
void times(const double* x, const Table& m, double* out) {
    std::fill(out, out + m.cols, 0.0);
    for (std::size_t k = 0; k < m.rows; ++k) {
        const double a = x[k];
        const double* row = &m.v[k * m.cols];
        for (std::size_t j = 0; j < m.cols; ++j) out[j] += a * row[j];
    }
}

}  // namespace

// A head's circuits, as TransformerLens's FactoredMatrix computes them (model.QK, model.OV,
// full circuits through W_E and W_U with fold_ln): W_QK = W_Q,h·W_K,gᵀ and W_OV = W_V,g·W_O,h
// (g the key/value head query head h shares, h·G/H), read through the embedding: each
// token's row of W_E as the layer's first norm reads it with its scale σ left out (the norm's
// weight γ folded in; a LayerNorm also centres the row; no bias: the circuits are the
// weights' bilinear forms), and, for OV, written through the final norm's weight into W_U's
// rows (centred for a LayerNorm). The copying score: Σ Re λ / Σ |λ| over the eigenvalues of
// the whole vocabulary's OV circuit W_E·W_V·W_O·W_U, which are, but for zeros, those of the
// d_h×d_h matrix (W_O·W_U)·(W_E·W_V).
namespace {

// Why layer l's heads have no circuits to show (after "layer N"), or nothing when they have.
std::optional<std::string> why_no_circuits(const DecoderWeights& w, std::size_t l) {
    const LayerSpec la = l < w.config.layer_specs.size() ? w.config.layer_specs[l] : LayerSpec{};
    if (la.attention == AttentionKind::latent) return std::nullopt;
    if (la.attention == AttentionKind::deltanet)
        return std::string(" is a Gated DeltaNet layer (linear attention): a token's output is read from a state that the delta rule writes and decays "
                           "token by token, its keys pass through a short convolution and an L2 norm first, so no fixed matrix W_Q·W_Kᵀ scores a pair "
                           "of tokens and no W_V·W_O carries one");
    const HeadsBlock* hb = w.blocks[l].attention ? w.blocks[l].attention->as<HeadsBlock>() : nullptr;
    if (!hb || !hb->w.out_proj) return std::string("'s attention is not heads with an output projection");
    if (hb->w.shared_kv || la.kv_from)
        return std::string(" reads the keys and values of an earlier layer (cross-layer KV sharing): its key and value weights are that layer's, read "
                           "through that layer's norm");
    if (hb->w.gate)
        return std::string(" gates its heads' outputs with σ(X·W_gate) before the output projection, a factor that depends on the token and that no "
                           "fixed W_V·W_O carries; its QK circuit alone would be half the story");
    return std::nullopt;
}

// The layers whose circuits can be shown, in words for a refusal: "choose layer 1, 2 or 4",
// or that the model has none.
std::string circuit_layers_words(const DecoderWeights& w) {
    std::vector<std::size_t> ok;
    for (std::size_t l = 0; l < w.blocks.size(); ++l)
        if (!why_no_circuits(w, l)) ok.push_back(l + 1);
    if (ok.empty()) return "no layer of this model has circuits to show";
    std::string out = "choose layer ";
    for (std::size_t i = 0; i < ok.size(); ++i) out += (i == 0 ? "" : i + 1 == ok.size() ? " or " : ", ") + std::to_string(ok[i]);
    return out;
}

}  // namespace

void record_head_circuits(Recorder& rec, const ModelSpec& spec, const DecoderWeights& w, const std::vector<std::size_t>& ids) {
    const DecoderConfig& c = w.config;
    const std::size_t l = spec.layer, T = ids.size(), C = c.width, V = c.vocab;
    if (!spec.head) throw UsageError("a head's circuits are one head's: name the layer and the head");
    const std::size_t h = *spec.head;
    const std::string where = "layer " + std::to_string(l + 1);
    const LayerSpec la = l < c.layer_specs.size() ? c.layer_specs[l] : LayerSpec{};
    if (const std::optional<std::string> why = why_no_circuits(w, l)) throw UsageError("a head's circuits: " + where + *why + "; " + circuit_layers_words(w));
    const Norm* n1 = w.blocks[l].norm_1 ? &*w.blocks[l].norm_1 : nullptr;
    const bool centred = c.norm != NormKind::rms_norm;
    const Norm* post = w.blocks[l].attention_norm ? &*w.blocks[l].attention_norm : nullptr;
    // The head as three maps of a row r (C) that the first norm read: its query and its key (d_k each), its value (d_v); and
    // W_O,hᵀ (C×d_v). RoPE turns the d_rot features from rot_from of the query and the key.
    const AttentionWeights* aw = nullptr;
    const LatentWeights* lw = nullptr;
    std::size_t dk = 0, dv = 0, rot_from = 0, rot_width = 0, H = 0, G = 0, g = 0;
    std::optional<RopeParams> rope_params = la.rope;
    Table WQ(0, 0), WK(0, 0), WV(0, 0), WO(0, 0), Wqa(0, 0), Wkva(0, 0);
    std::function<void(const double*, double*)> query, key, value;
    if (la.attention == AttentionKind::latent) {  // MLA: the key and the value from the latent c_KV, the rotary key shared by the heads
        lw = &w.blocks[l].attention->get<LatentBlock>().w;
        H = G = lw->heads;
        if (h >= H) throw UsageError("a head's circuits: head " + std::to_string(h + 1) + " is out of range: " + where + " has " + std::to_string(H) + " heads");
        g = h;
        dk = lw->qk_head(), dv = lw->value, rot_from = lw->nope, rot_width = lw->rope;
        if (rope_params) rope_params->interleaved = c.latent_interleave;  // Hugging Face's de-interleave, then the half split: the pairs (2i, 2i + 1)
        const std::size_t r = lw->rank(), per = lw->nope + lw->value;
        if (lw->q_proj) {
            WQ = columns_of(*lw->q_proj, h * dk, dk);
        } else {
            Wqa = columns_of(*lw->q_a_proj, 0, lw->query_rank());
            WQ = columns_of(*lw->q_b_proj, h * dk, dk);
        }
        Wkva = columns_of(lw->kv_a_proj, 0, r + lw->rope);
        WK = columns_of(lw->kv_b_proj, h * per, lw->nope);           // W_UK,h: r×d_nope
        WV = columns_of(lw->kv_b_proj, h * per + lw->nope, dv);      // W_UV,h: r×d_v
        WO = rows_of(lw->o_proj, h * dv, dv);
        query = [&](const double* x, double* out) {  // the query latent's RMSNorm: its weight folded in, its division left out
            if (Wqa.rows == 0) return times(x, WQ, out);
            std::vector<double> a(Wqa.cols);
            times(x, Wqa, a.data());
            for (std::size_t j = 0; j < a.size(); ++j) a[j] *= static_cast<double>(lw->q_a_norm(j));
            times(a.data(), WQ, out);
        };
        const auto latent = [&](const double* x) {  // [c_KV ⊙ γ_kv (r) | k_rope (d_rope)]
            std::vector<double> kv(Wkva.cols);
            times(x, Wkva, kv.data());
            for (std::size_t j = 0; j < lw->rank(); ++j) kv[j] *= static_cast<double>(lw->kv_a_norm(j));
            return kv;
        };
        key = [&, latent](const double* x, double* out) {  // [c_KV·W_UK,h | k_rope]
            const std::vector<double> kv = latent(x);
            times(kv.data(), WK, out);  // WK reads the first r
            for (std::size_t j = 0; j < lw->rope; ++j) out[lw->nope + j] = kv[lw->rank() + j];
        };
        value = [&, latent](const double* x, double* out) { times(latent(x).data(), WV, out); };
    } else {
        aw = &w.blocks[l].attention->get<HeadsBlock>().w;  // heads with an output projection, neither shared nor gated (why_no_circuits)
        if (h >= aw->heads) throw UsageError("a head's circuits: head " + std::to_string(h + 1) + " is out of range: " + where + " has " + std::to_string(aw->heads) + " heads");
        H = aw->heads, G = aw->key_heads(), g = h / (H / G);
        dk = dv = rot_width = aw->head_size();
        WQ = head_block(*aw, aw->query, h, false), WK = head_block(*aw, aw->key, g, false), WV = head_block(*aw, aw->value, g, false);
        WO = head_block(*aw, *aw->out_proj, h, true);  // W_O,hᵀ: C×d_h
        // QK-norm's weights folded in, its division left out
        const auto qk_scale = [&](const std::optional<Vec>& norm, std::size_t head_index, std::size_t j) {
            return norm ? static_cast<double>((*norm)(aw->qk_norm_whole ? head_index * dk + j : j)) : 1.0;
        };
        query = [&, qk_scale](const double* x, double* out) {
            times(x, WQ, out);
            for (std::size_t j = 0; j < dk; ++j) out[j] *= qk_scale(aw->q_norm, h, j);
        };
        key = [&, qk_scale](const double* x, double* out) {
            times(x, WK, out);
            for (std::size_t j = 0; j < dk; ++j) out[j] *= qk_scale(aw->k_norm, g, j);
        };
        value = [&](const double* x, double* out) { times(x, WV, out); };
    }
    // a token's embedding as the layer's first norm reads it: × the embedding scale, centred (LayerNorm), × γ; σ left out
    std::vector<float> row(C);
    const auto read = [&](std::size_t t, double* out) {
        w.embed.copy_out_row(t, row.data());
        double mean = 0.0;
        for (std::size_t k = 0; k < C; ++k) mean += static_cast<double>(row[k]) * c.embed_scale.value_or(1.0f) / static_cast<double>(C);
        for (std::size_t k = 0; k < C; ++k) {
            const double x = static_cast<double>(row[k]) * c.embed_scale.value_or(1.0f) - (n1 && centred ? mean : 0.0);
            out[k] = n1 ? x * static_cast<double>(n1->scale(k)) : x;
        }
    };
    // a token's unembedding column as the final norm writes into it: γ_f ⊙ W_U[t], centred (LayerNorm), × the logit scale
    const Linear& head = w.output_head();
    const auto unembed = [&](std::size_t t, double* out) {
        head.copy_out_row(t, row.data());
        double mean = 0.0;
        for (std::size_t k = 0; k < C; ++k) {
            out[k] = static_cast<double>(w.final_norm.scale(k)) * static_cast<double>(row[k]) * c.logit_scale.value_or(1.0f);
            mean += out[k] / static_cast<double>(C);
        }
        if (centred)
            for (std::size_t k = 0; k < C; ++k) out[k] -= mean;
        if (post)  // a norm after the attention: its weight on the head's output, its scale left out
            for (std::size_t k = 0; k < C; ++k) out[k] *= static_cast<double>(post->scale(k));
    };
    Table q(T, dk), k(T, dk), ov(T, dv), u(T, C);
    std::vector<double> x(C);
    for (std::size_t i = 0; i < T; ++i) {
        read(ids[i], x.data());
        query(x.data(), &q(i, 0));
        key(x.data(), &k(i, 0));
        value(x.data(), &ov(i, 0));
        unembed(ids[i], &u(i, 0));
    }
    const auto qk_table = [&](const Table& qs, const Table& ks) {
        Mat m = Mat::from_shape({T, T});
        for (std::size_t i = 0; i < T; ++i)
            for (std::size_t j = 0; j < T; ++j) {
                double s = 0.0;
                for (std::size_t f = 0; f < dk; ++f) s += qs(i, f) * ks(j, f);
                m(i, j) = static_cast<float>(s);
            }
        return m;
    };
    // the OV table: the source token's v·W_O,h (C) dotted with each output token's unembedding
    Mat ovt = Mat::from_shape({T, T});
    {
        std::vector<double> out(C);
        for (std::size_t i = 0; i < T; ++i) {
            std::fill(out.begin(), out.end(), 0.0);
            for (std::size_t f = 0; f < dv; ++f)  // Σ_f v_f · W_O[f, :]
                for (std::size_t kk = 0; kk < C; ++kk) out[kk] += ov(i, f) * WO(kk, f);
            for (std::size_t j = 0; j < T; ++j) {
                double s = 0.0;
                for (std::size_t kk = 0; kk < C; ++kk) s += out[kk] * u(j, kk);
                ovt(i, j) = static_cast<float>(s);
            }
        }
    }
    // the eigenvalues: M = Σ_t (W_O,h·u_t)(value(r_t))ᵀ over the whole vocabulary (d_v×d_v)
    std::vector<double> M(dv * dv, 0.0);
    {
        std::vector<double> r(C), ut(C), p(dv), qo(dv);
        for (std::size_t t = 0; t < V; ++t) {
            read(t, r.data());
            value(r.data(), p.data());
            unembed(t, ut.data());
            times(ut.data(), WO, qo.data());
            for (std::size_t a = 0; a < dv; ++a) {
                const double s = qo[a];
                double* dst = &M[a * dv];
                for (std::size_t b = 0; b < dv; ++b) dst[b] += s * p[b];
            }
        }
    }
    const std::vector<std::complex<double>> lambda = eigenvalues(M, dv);
    double sum_re = 0.0, sum_abs = 0.0;
    Mat eig = Mat::from_shape({dv, 2});
    for (std::size_t i = 0; i < dv; ++i) {
        eig(i, 0) = static_cast<float>(lambda[i].real());
        eig(i, 1) = static_cast<float>(lambda[i].imag());
        sum_re += lambda[i].real();
        sum_abs += std::abs(lambda[i]);
    }
    const double score = sum_abs > 0.0 ? sum_re / sum_abs : std::numeric_limits<double>::quiet_NaN();

    const std::string name = "head " + std::to_string(l + 1) + "." + std::to_string(h + 1);
    const std::string kv = G == H ? std::string(" (g = h: the head's own key and value)") : " (its key/value head " + std::to_string(g + 1) + " of " + std::to_string(G) + ": query heads " +
                                                        std::to_string(g * (H / G) + 1) + "–" + std::to_string((g + 1) * (H / G)) + " share it)";
    const std::string norm_words = std::string(n1 ? (centred ? "centred and × the first norm's weight γ (its scale σ left out, as TransformerLens's fold_ln does)"
                                                             : "× the first norm's weight γ (its scale σ left out, as TransformerLens's fold_ln does)")
                                                  : "as it is (no norm before the attention)") +
                                   (c.embed_scale ? ", the embedding × " + format_number(*c.embed_scale) : std::string());
    const std::string qknorm = aw && aw->q_norm ? " QK-norm is not linear: its weights are folded in, its division by each query's and key's RMS left out "
                                           "(the table is norm-free)."
                                         : "";
    const std::string latent_words =
        lw ? " Latent attention (MLA): the query " + std::string(lw->q_a_proj ? "through its own latent (q_a_proj, its RMSNorm's weight, q_b_proj)" : "from q_proj") +
                 ", the key [c_KV·W_UK,h | k_rope] with c_KV = the latent (kv_a_proj's first " + std::to_string(lw->rank()) +
                 ", its RMSNorm's weight folded in, its division left out) and k_rope the rotary part every head shares." +
                 (lw->indexer ? " The lightning indexer, which picks the keys each query may see, is not part of the circuit." : "")
           : "";
    const std::string rope_words = la.rope ? " With RoPE the score depends on the distance: this is the position-free form, a query and a key at the "
                                             "same position (the rotation cancels); circuit_qk_offset turns them apart."
                                           : c.positions == PositionKind::rope ? " This layer has no RoPE (a NoPE layer): the score is the same at every distance, so there is no "
                                                                                  "offset table."
                                                                                : " The learned position embeddings are left out, as TransformerLens leaves "
                                                                                  "them: this is the tokens' circuit alone.";
    Step& qs = rec.add_plain("circuit_qk", "QK circuit of " + name + ": query token (row) × key token (column)", "r(e_i)·W_Q,h·W_K,gᵀ·r(e_j)ᵀ",
                             to_trace(qk_table(q, k)), {Axis::token, Axis::token});
    qs.row_axis = "query", qs.col_axis = "key";  // tokens through the embeddings: no attention's cells
    qs.note = "W_QK = W_Q,h·W_K,gᵀ" + kv + " read through each prompt token's embedding, " + norm_words +
              "; no bias and no 1/√d_h: the circuit of TransformerLens's W_E·W_QK·W_Eᵀ, its rows and columns the prompt's tokens." + latent_words + rope_words + qknorm;
    if (rope_params) {
        const std::size_t delta = spec.circuit_offset;
        const Rope rope = rope_tables(rot_width, delta + 1, 0, *rope_params);
        const auto turn = [&](const Table& in, std::size_t pos) {
            Table out = in;
            const std::size_t dims = rope.dims();
            for (std::size_t i = 0; i < T; ++i)
                for (std::size_t f = 0; f < dims; ++f) {
                    const bool first = rope.interleaved ? f % 2 == 0 : f < dims / 2;
                    const double half = (first ? -1.0 : 1.0) * in(i, rot_from + rope.partner(f));
                    out(i, rot_from + f) = in(i, rot_from + f) * static_cast<double>(rope.cos(pos, f)) + half * static_cast<double>(rope.sin(pos, f));
                }
            return out;
        };
        Step& os = rec.add_plain("circuit_qk_offset", "The same with the query " + std::to_string(delta) + " position" + (delta == 1 ? "" : "s") + " after the key",
                                 "RoPE(r(e_i)·W_Q,h, p + " + std::to_string(delta) + ")·RoPE(r(e_j)·W_K,g, p)ᵀ", to_trace(qk_table(turn(q, delta), turn(k, 0))),
                                 {Axis::token, Axis::token});
        os.row_axis = "query", os.col_axis = "key";
        rec.trace().set_param("circuit_offset", static_cast<unsigned long long>(delta));
        os.note = "The query rotated by its position p + Δ and the key by p, Δ = " + std::to_string(delta) +
                  ": RoPE makes the score depend on Δ alone, q·R(Δ)·kᵀ; the layer's own rotation (base, scaling" +
                  std::string(rope.attention_scaling != 1.0f ? ", its attention factor on both" : "") + ")." + qknorm;
    }
    Step& ovs = rec.add_plain("circuit_ov", "OV circuit of " + name + ": source token (row) × output token's logit (column)", "r(e_i)·W_V,g·W_O,h·u_j",
                              to_trace(ovt), {Axis::token, Axis::token});
    ovs.row_axis = "source", ovs.col_axis = "output";
    ovs.note = "W_OV = W_V,g·W_O,h" + kv + ": what the head writes when it attends to token i, read by token j's unembedding u_j = " +
               std::string(centred ? "centred " : "") + "γ_f ⊙ W_U[j]" + (c.logit_scale ? " × " + format_number(*c.logit_scale) : std::string()) +
               " (the final norm's weight folded in, its scale left out), the rows read as for circuit_qk; TransformerLens's W_E·W_OV·W_U on the "
               "prompt's tokens. A copying head has a large diagonal." +
               (post ? " The norm after the attention: its weight γ on the head's output folded in, its scale left out." : std::string()) + (aw && aw->v_norm ? " The values' RMSNorm is not linear: left out." : std::string()) +
               (lw ? " Latent attention: the value c_KV·W_UV,h." : std::string());
    Step& es = rec.add_plain("circuit_ov_eigenvalues", "The eigenvalues of " + name + "'s OV circuit over the whole vocabulary", "λ(W_E·W_V,g·W_O,h·W_U)",
                             to_trace(eig), {Axis::rank, Axis::feature});
    es.labels = {"real", "imaginary"};
    es.note = "The " + std::to_string(V) + "×" + std::to_string(V) + " circuit has rank ≤ " + std::to_string(dv) + ": its nonzero eigenvalues are those of the " +
              std::to_string(dv) + "×" + std::to_string(dv) + " matrix (W_O,h·W_U)·(W_E·W_V,g) (FactoredMatrix's BA), over all " + std::to_string(V) +
              " tokens, in double, by Hessenberg reduction and Francis's double-shift QR; largest real part first.";
    Step& cs = rec.add_plain("circuit_copying", "The OV copying score of " + name, "Σ Re λ / Σ |λ|",
                             to_trace(vec_of({static_cast<float>(score), static_cast<float>(sum_re), static_cast<float>(sum_abs)})), {Axis::feature});
    cs.labels = {"copying score", "Σ Re λ", "Σ |λ|"};
    cs.may_be_non_finite = !(sum_abs > 0.0);
    cs.note = "TransformerLens's eigenvalue copying score: 1 when every eigenvalue is positive (the head copies the token it attends to into the "
              "prediction), −1 when every one is negative; " + format_number(static_cast<float>(score)) + " here.";
}

}  // namespace attnwalk::model_walk
