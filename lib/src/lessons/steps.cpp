// The lessons' shared steps and checks (steps.hpp), the costs of the walks, and the
// text of a number.
#include <cstdio>
#include "steps.hpp"

#include <cmath>
#include <iomanip>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/json_input.hpp"
#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/blocked_attention.hpp"
#include "attnwalk/ops/work.hpp"

namespace attnwalk {

std::string format_number(double value) { return json_input::display_text(value); }

Cost walk_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, std::size_t width, std::size_t heads,
               std::size_t rows, double square_tensors) {
    Cost c = forward_cost(batch, tokens, d_in, width, heads, rows);
    const double square = static_cast<double>(batch) * static_cast<double>(heads) * static_cast<double>(rows) * static_cast<double>(tokens);
    if (square_tensors > forward_square_tensors) c.bytes += 4.0 * (square_tensors - forward_square_tensors) * square;
    return c;
}

Cost kvcache_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, std::size_t width, std::size_t heads) {
    Cost c = walk_cost(batch, tokens, d_in, width, heads, tokens);
    const double B = static_cast<double>(batch), T = static_cast<double>(tokens), w = static_cast<double>(width),
                 H = static_cast<double>(heads);
    // every step's key and value caches (width·T² floats in all) and its scores, weights and
    // row sums (3·H·T²/2), as the trace keeps them; half again for their copies on the way
    c.bytes += 1.5 * 4.0 * B * (w * T * T + 1.5 * H * T * T);
    c.work += B * T * T * w;  // each step's query against the cache, and its weights times the values
    return c;
}

Cost dropout_ones_cost(std::size_t n) {
    const double N = static_cast<double>(n);
    return {8.0 * 4.0 * N * N, 2.0 * N * N};  // ones, keep, weights and their copies in the trace; a draw per element
}

bool mha_blocked(HeadLayout layout, const MhaSpec& spec, const Recording& rec, std::size_t heads, std::size_t kv_heads, bool gate_or_sinks) {
    const bool draws = spec.dropout.train && spec.dropout.p > 0.0;
    return rec.summary && layout == HeadLayout::fused && !draws && !spec.query && !spec.explain && !spec.window && !spec.head_roles &&
           (kv_heads == 0 || kv_heads == heads) && !gate_or_sinks;
}

Cost mha_cost(std::size_t batch, std::size_t tokens, std::size_t d_in, std::size_t width, std::size_t heads, HeadLayout layout,
              const MhaSpec& spec, const Recording& rec, std::size_t kv_heads, bool gate_or_sinks) {
    Cost c = forward_cost(batch, tokens, d_in, width, heads, spec.query ? 1 : tokens);
    if (spec.head_roles) {  // the input's first batch element run twice more
        const Cost twice = forward_cost(1, 2 * tokens, d_in, width, heads, 2 * tokens);
        c.bytes += twice.bytes;
        c.work += twice.work;
    }
    if (mha_blocked(layout, spec, rec, heads, kv_heads, gate_or_sinks)) c.bytes = fast::blocked_bytes(batch, tokens, d_in, width);
    return c;
}

const std::vector<StepDecl>& parameter_steps() {
    static const std::vector<StepDecl> steps = {
        {"W_query", "the query projection, d_in×d_out in x·W layout (a parameter)"},
        {"W_key", "the key projection (a parameter)"},
        {"W_value", "the value projection (a parameter)"},
        {"b_query", "the query bias (a parameter)"},
        {"b_key", "the key bias (a parameter)"},
        {"b_value", "the value bias (a parameter)"},
    };
    return steps;
}

const std::vector<StepDecl>& projection_steps() {
    static const std::vector<StepDecl> steps = {
        {"queries", "Q = X·W_query (+ b)"},
        {"keys", "K = X·W_key (+ b)"},
        {"values", "V = X·W_value (+ b)"},
    };
    return steps;
}

bool is_dropout_rate(double p) { return p == 0.0 || (p > 0.0 && 1.0 - p < 1.0 && static_cast<float>(p) < 1.0f); }

bool is_positive_float32(double v) {
    return std::isfinite(static_cast<float>(v)) && static_cast<float>(v) >= std::numeric_limits<float>::min();
}

namespace steps {
const std::vector<Axis> tokens_features{Axis::token, Axis::feature};
const std::vector<Axis> tokens_tokens{Axis::token, Axis::token};
const std::vector<Axis> head_tokens_features{Axis::head, Axis::token, Axis::feature};
const std::vector<Axis> head_tokens_tokens{Axis::head, Axis::token, Axis::token};

// A trace for `command` on this input: tokens, the input's params, the weights' origin.
Trace start_trace(const std::string& command, const Embeddings& input, const AttentionWeights* weights) {
    Trace trace;
    trace.command = command;
    trace.tokens = input.tokens;
    trace.batched = input.batched;
    trace.set_param("input", input.source);
    if (input.batched) trace.set_param("batch", static_cast<unsigned long long>(input.batch()));
    trace.set_param("num_tokens", static_cast<unsigned long long>(input.tokens_count()));
    trace.set_param("d_in", static_cast<unsigned long long>(input.dim()));
    if (weights)
        for (const auto& [name, value] : weights->origin) std::visit([&, n = name](const auto& v) { trace.set_param(n, v); }, value);
    return trace;
}

// Checks that nothing overflowed (check_finite), then keeps the trace as asked.
void charge_forward_time(Trace& trace, const Forward& f) {
    const auto& t = f.seconds;
    const auto& w = f.work;
    const struct {
        const char* id;
        double seconds;
        Work work;
    } charges[] = {{"queries", t.project / 3, w.query},               {"keys", t.project / 3, w.key},
                   {"values", t.project / 3, w.value},                {"gate", 0.0, w.gate},
                   {"scores", t.scores, w.scores},
                   {"scores_masked", t.mask_scale, {}},              {"weights", t.softmax, {}},
                   {"weights_dropped", t.dropout, {}},               {"head_outputs", t.context, w.context},
                   {"output", t.output, w.output}};
    const bool heads = std::any_of(trace.steps.begin(), trace.steps.end(), [](const Step& s) { return s.id == "head_outputs"; });
    const auto charge = [](Step& step, double seconds, const Work& work) {
        step.seconds += seconds;
        step.flop += work.flop;
        step.bytes += work.bytes;
    };
    for (Step& step : trace.steps) {
        for (const auto& c : charges)
            if (step.id == c.id) charge(step, c.seconds, c.work);
        if (step.id == "scores_scaled" && f.causal == false) step.seconds += t.mask_scale;
        if (step.id == "context" && !heads) {  // one head: context is the output
            Work both = w.context;
            both += w.output;
            charge(step, t.context + t.output, both);
        }
    }
}

// Every step is declared by the trace's lesson (or, for a trace of no lesson, in the
// catalogue); a step its lesson declares `opening` is marked so (Step::opens).
void check_declared(const std::string& command, std::vector<Step>& steps) {
    const LessonDecl* lesson = find_lesson(command);
    for (Step& s : steps) {
        const StepDecl* d = lesson ? declaration(*lesson, s.id) : nullptr;
        if (lesson && !d) throw std::logic_error("the " + command + " lesson records '" + s.id + "', which it does not declare");
        if (!lesson && !find_step(s.id)) throw std::logic_error("step id '" + s.id + "' is not in the step catalogue");
        s.opens = d && (d->compact & opening);
    }
}

namespace {

// The parameters PyTorch holds as nn.Linear.weight ([out, in]): out_proj's, and W_query,
// W_key, W_value (one head's or a numbered head's) when nn.Linear drew them (the init param "linear").
void mark_nn_linear(Trace& trace) {
    bool drawn_by_linear = false;
    for (const auto& [key, value] : trace.params)
        if (key == "init") drawn_by_linear = std::get_if<std::string>(&value) && std::get<std::string>(value) == "linear";
    for (Step& step : trace.steps) {
        if (step.kind != StepKind::parameter || step.tensor.shape.size() != 2) continue;
        const std::size_t dot = step.id.rfind('.');
        const std::string name = step.id.substr(dot == std::string::npos ? 0 : dot + 1);
        step.nn_linear = step.id == "out_proj.weight" || (drawn_by_linear && name.rfind("W_", 0) == 0);
    }
}

}  // namespace

Trace finish(Trace trace, const Recording& recording, const Forward* f) {
    check_declared(trace.command, trace.steps);
    mark_nn_linear(trace);
    if (f) charge_forward_time(trace, *f);
    trace = check_finite(std::move(trace));
    if (recording.summary) {  // the steps shared out over the cores: T×T tensors take a while
        std::size_t values = 0;
        for (const Step& s : trace.steps) values += s.tensor.data.size();
        if (values < (std::size_t{1} << 16)) {
            summarise(trace);  // a chapter's few hundred numbers: starting the pool's threads would cost more
        } else {
            const std::vector<std::size_t> owner = share_steps(trace, cores());
            on_every_core([&](std::size_t worker, std::size_t workers) { summarise(trace, owner, worker, workers); });
        }
    }
    trace.timed = recording.summary || recording.timing;
    if (trace.timed) trace.backend = blas_backend();
    if (recording.timing) {  // each step beside the machine, where there is work enough to measure it by
        double flop = 0.0;
        for (const Step& s : trace.steps) flop += s.flop;
        if (flop >= limit_least_flop) {
            const MachineRates rates = measure_machine();
            trace.sgemm_flop_per_second = rates.flop_per_second;
            trace.copy_bytes_per_second = rates.bytes_per_second;
            for (Step& s : trace.steps) s.limit_seconds = limit_seconds({s.flop, s.bytes}, rates);
        }
    }
    return trace;
}

std::string batch_prefix(const Trace& trace, std::size_t b) { return trace.batched ? "batch " + std::to_string(b + 1) + ": " : ""; }

// Head 0 of a (B,H,R,·) tensor: (B,R,·); and its row 0: (B,·).
Cube head0(const Hyper& t) { return xt::view(t, xt::all(), 0); }
Mat row0(const Hyper& t) { return xt::view(t, xt::all(), 0, 0); }

// W_query, W_key, W_value (and biases) as parameter steps; `prefix` before the ids
// (e.g. "head0." for the wrapper's heads).
void record_parameters(Recorder& rec, const Linear& q, const Linear& k, const Linear& v, const std::string& prefix,
                       const std::string& title_suffix) {
    const struct {
        const char* name;
        const Linear* layer;
    } layers[] = {{"query", &q}, {"key", &k}, {"value", &v}};
    for (const auto& l : layers) {
        const std::string name = l.name;
        rec.add_plain(prefix + "W_" + name, "W_" + name + title_suffix + " (d_in×d_out, x·W layout)", "W_" + name,
                      to_trace(l.layer->matrix()), {Axis::feature, Axis::feature})
            .kind = StepKind::parameter;
        if (l.layer->b.size() != 0)
            rec.add_plain(prefix + "b_" + name, "b_" + name + title_suffix, "b_" + name, to_trace(l.layer->b), {Axis::feature})
                .kind = StepKind::parameter;
    }
}

// "heads 1–2 → 1, heads 3–4 → 2": which query heads share each key/value head, counted from 1.
std::string grouping(std::size_t H, std::size_t G) {
    std::string out;
    const std::size_t n = H / G;
    for (std::size_t g = 0; g < G; ++g) {
        out += (g ? ", " : "") + std::string(n > 1 ? "heads " : "head ") + std::to_string(g * n + 1) +
               (n > 1 ? "–" + std::to_string(g * n + n) : "") + " → " + std::to_string(g + 1);
    }
    return out;
}

// 1 where query i may attend to key j: causal and/or a window (masked_out).
Mat band_mask(std::size_t T, bool causal, std::size_t window) {
    Mat m({T, T});
    for (std::size_t i = 0; i < T; ++i)
        for (std::size_t j = 0; j < T; ++j) m(i, j) = masked_out(i, j, causal, window) ? 0.0f : 1.0f;
    return m;
}

double even_stripe(std::size_t T, bool causal, std::size_t window, std::size_t back) {
    if (back >= T) return 0.0;
    const Mat seen = band_mask(T, causal, window);
    double sum = 0.0;
    for (std::size_t i = back; i < T; ++i) {
        double keys = 0.0;
        for (std::size_t j = 0; j < T; ++j) keys += seen(i, j);
        sum += seen(i, i - back) / keys;
    }
    return sum / static_cast<double>(T - back);
}

std::string heads_words(std::size_t heads, std::size_t width) {
    return std::to_string(heads) + (heads == 1 ? " head, " : " heads, ") + std::to_string(width) + (width == 1 ? " feature" : " features") +
           (heads == 1 ? "" : " each");
}

std::string four_decimals(double value) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.4f", value);
    return buf;
}

std::string window_covers_note(const std::optional<std::size_t>& window, std::size_t T) {
    if (!window || *window < T) return "";
    return " The window (W = " + std::to_string(*window) + ") is at least as wide as the " + std::to_string(T) +
           (T == 1 ? " token" : " tokens") + ": it masks nothing here, as if there were no window.";
}

// What the scores are divided by: its symbol in formulas (√d_k, or the number given) and
// in words for titles (√d_k = √2).
Scale scale_of(const AttentionWeights* w, const std::optional<double>& given, float used) {
    Scale sc;
    sc.value = used;
    if (given || !w) {
        sc.symbol = sc.words = format_number(static_cast<double>(used));
    } else {
        sc.symbol = "√d_k";
        sc.words = "√d_k = √" + format_number(static_cast<double>(w->head_size()));
    }
    return sc;
}

// The single-head walks' common start: parameters, then Q, K, V (with weights).
void record_projections(Recorder& rec, const AttentionWeights* w, const Forward& f) {
    if (!w) return;
    record_parameters(rec, w->query, w->key, w->value, "", "");
    const bool bias = w->query.b.size() != 0;
    rec.add("queries", "Queries: every token projected by W_query", bias ? "Q = X·W_query + b_query" : "Q = X·W_query", f.q,
            tokens_features);
    rec.add("keys", "Keys: every token projected by W_key", bias ? "K = X·W_key + b_key" : "K = X·W_key", f.k, tokens_features);
    rec.add("values", "Values: every token projected by W_value", bias ? "V = X·W_value + b_value" : "V = X·W_value", f.v,
            tokens_features);
}

void walk_one_query(Recorder& rec, const AttentionWeights* w, const Forward& f, const Scale& sc,
                    Stage stage, bool compare) {
    const Trace& trace = rec.trace();
    const std::size_t i = f.row0, B = f.q.shape(0), T = f.k.shape(1), d = f.k.shape(2);
    const std::string& qname = trace.tokens[i];
    const std::string qsym = w ? "q" : "x", ksym = w ? "k" : "x";

    // The loop: one dot product per key, term by term (the lesson, before the matrix form).
    Mat loop({B, T});
    std::vector<Expansion> dots;
    for (std::size_t b = 0; b < B; ++b)
        for (std::size_t j = 0; j < T; ++j) {
            Expansion e;
            e.label = batch_prefix(trace, b) + qname + "·" + trace.tokens[j];
            float sum = 0.0f;
            for (std::size_t c = 0; c < d; ++c) {
                e.terms.push_back({f.q(b, i, c), {f.k(b, j, c)}});
                sum += f.q(b, i, c) * f.k(b, j, c);
            }
            e.result = {sum};
            loop(b, j) = sum;
            dots.push_back(std::move(e));
        }
    const std::string idx = std::to_string(i + 1);
    rec.add("scores_loop", "Attention scores of \"" + qname + "\", one dot product per token",
            "ω_" + idx + "j = " + qsym + "_" + idx + "·" + ksym + "_j = Σ_c " + qsym + "_" + idx + "c·" + ksym + "_jc", loop,
            {Axis::token})
        .expansion = std::move(dots);
    rec.add("scores", "The same scores as one matrix product", "ω_" + idx + " = " + qsym + "_" + idx + "·" + (w ? "Kᵀ" : "Xᵀ"),
            row0(f.scores), {Axis::token});
    if (stage == Stage::scores) return;

    if (f.scale != 1.0f)
        rec.add("scores_scaled", "Scores divided by " + sc.words, "s_" + idx + " = ω_" + idx + " / " + sc.symbol, row0(f.scaled),
                {Axis::token});
    const Mat weights = row0(f.weights);  // (B,T)
    record_weights(rec, row0(f.scaled), weights, {Axis::token}, compare, sc);
    if (stage == Stage::weights) return;

    // The context vector: the weighted sum of the values, term by term.
    std::vector<Expansion> sums;
    const Mat z = row0(f.head_outputs);  // (B,d)
    for (std::size_t b = 0; b < B; ++b) {
        Expansion e;
        e.label = batch_prefix(trace, b) + "z(" + qname + ")";
        for (std::size_t j = 0; j < T; ++j) {
            std::vector<float> vj(d);
            for (std::size_t c = 0; c < d; ++c) vj[c] = f.v(b, j, c);
            e.terms.push_back({weights(b, j), std::move(vj)});
        }
        e.result.assign(&z(b, 0), &z(b, 0) + d);
        sums.push_back(std::move(e));
    }
    rec.add("context", "Context vector of \"" + qname + "\": the weighted sum of the " + (w ? "values" : "embeddings"),
            "z_" + idx + " = Σ_j α_" + idx + "j·" + (w ? "v_j" : "x_j"), z, {Axis::feature})
        .expansion = std::move(sums);
}

void record_scores(Recorder& rec, const AttentionWeights* w, const Cube& scores, const Cube& scaled, const Scale& sc) {
    rec.add("scores", "Attention scores: every query against every key", w ? "ω = Q·Kᵀ" : "ω = X·Xᵀ", scores, tokens_tokens);
    if (sc.value != 1.0f) rec.add("scores_scaled", "Scores divided by " + sc.words, "s = ω / " + sc.symbol, scaled, tokens_tokens);
}

void record_draw_params(Trace& trace, const DropoutDraw& draw) {
    trace.set_param("dropout", draw.p);
    trace.set_param("mode", std::string(draw.train ? "train" : "eval"));
}

void check_draw(const DropoutDraw& draw) {
    if (!is_dropout_rate(draw.p))
        throw UsageError(std::string("the dropout rate must be ") + dropout_rate_range + " (float32, as the trace keeps it, below 1), got " +
                         format_number(draw.p));
    if (draw.train && draw.p > 0.0 && !draw.gen) throw UsageError("dropout in training mode needs a random generator");
}


// 2360064 -> "2,360,064"
std::string grouped(ull n) {
    std::string digits = std::to_string(n), out;
    for (std::size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return out;
}

// A byte count in words: grouped digits, or scientific notation beyond what 64 bits hold.
std::string bytes_text(double bytes) { return bytes < 1e18 ? grouped(static_cast<ull>(bytes)) : format_number(bytes); }

std::string gigabytes(double bytes) {
    std::ostringstream out;
    out << bytes_text(bytes) << " bytes";
    if (bytes >= 1e7) out << " (" << std::fixed << std::setprecision(2) << bytes / 1e9 << " GB)";
    return out.str();
}

Tensor count_tensor(double n, const std::string& what) {
    constexpr double exact = 9007199254740992.0;  // 2^53
    if (n >= 0.0 && n < exact && n == std::floor(n)) return integer_tensor({static_cast<ull>(n)}, {});
    if (!(n <= static_cast<double>(std::numeric_limits<float>::max())))  // a count, not a float32 overflow of the arithmetic
        throw UsageError(what + " comes to about " + format_number(n) +
                         ", a count too large to represent (the trace holds numbers up to 3.4e38): ask for smaller sizes");
    return scalar_trace(static_cast<float>(n));
}

Tensor counts_tensor(const std::vector<double>& n, const std::string& what) {
    Tensor t;
    t.shape = {n.size()};
    for (double v : n) {
        const Tensor one = count_tensor(v, what);
        t.data.push_back(one.data.empty() ? 0.0f : one.data[0]);
        if (!one.integers.empty()) t.integers.push_back(one.integers[0]);
    }
    if (t.integers.size() != t.data.size()) t.integers.clear();
    return t;
}

float max_abs_diff(const Cube& a, const Cube& b) {
    float worst = 0.0f;
    for (std::size_t i = 0; i < a.size(); ++i) {
        const float d = std::fabs(a.data()[i] - b.data()[i]);
        if (d > worst || std::isnan(d)) worst = d;
    }
    return worst;
}

void record_out_proj(Recorder& rec, const AttentionWeights& w) {
    if (!w.out_proj) return;
    rec.add_plain("out_proj.weight", "out_proj weight (d_out×d_out, x·W layout)", "W_o", to_trace(w.out_proj->matrix()),
                  {Axis::feature, Axis::feature})
        .kind = StepKind::parameter;
    rec.add_plain("out_proj.bias", "out_proj bias", "b_o", to_trace(w.out_proj->b), {Axis::feature}).kind = StepKind::parameter;
}

std::string quoted(const std::string& token) { return "\"" + token + "\""; }

void check_explain(const std::optional<Cell>& cell, std::size_t head, std::size_t heads, std::size_t T) {
    if (cell && (cell->i >= T || cell->j >= T))
        throw UsageError("cell " + std::to_string(cell->i + 1) + "," + std::to_string(cell->j + 1) + " is out of range: there are " +
                         std::to_string(T) + " tokens, counted from 1");
    if (head >= heads)
        throw UsageError("head " + std::to_string(head + 1) + " is out of range: " +
                         (heads == 1 ? std::string("there is 1 head") : "there are " + std::to_string(heads) + " heads") +
                         ", counted from 1");
}

void set_query_param(Trace& trace, std::size_t query) { trace.set_param("query_index", Index{{query}, true, "inputs"}); }

void set_explain_params(Trace& trace, const Cell& cell, std::optional<std::size_t> head) {
    trace.set_param("explain_index", Index{{cell.i, cell.j}, true, "weights"});
    if (head) trace.set_param("explain_head_index", Index{{*head}, false, ""});
}

Trace explainable(Trace trace, const Recording& recording, const Forward& f, const Cube& x, std::shared_ptr<const AttentionWeights> weights,
                  const Scale& scale, ExplainDepth depth) {
    if (!recording.explainable || recording.summary || f.scores.size() == 0) return trace;
    KeptAttention k;
    k.f = f;
    k.x = x;
    k.weights = std::move(weights);
    k.scale = scale;
    k.depth = depth;
    k.batched = trace.batched;
    std::vector<KeptAttention> kept;
    kept.push_back(std::move(k));
    trace.explainer = keep_for_explaining(std::move(kept));
    return trace;
}

// The scale as the lessons with weights write it: √d_h.
Scale head_scale(const AttentionWeights* w, const Forward& f) {
    Scale sc;
    sc.value = f.scale;
    sc.symbol = w ? "√d_k" : format_number(f.scale);
    sc.words = w ? "√d_k = √" + std::to_string(f.d_h) : format_number(f.scale);
    return sc;
}

// Writes out one cell of `f` (batch element 0), its cell and head in the params.
void explain(Recorder& rec, const Cell& cell, std::size_t head, const Cube& x, const AttentionWeights* w, const Forward& f,
             ExplainDepth depth) {
    Trace& trace = rec.trace();
    set_explain_params(trace, cell, f.heads > 1 ? std::optional<std::size_t>(head) : std::nullopt);
    explain_cell(rec, cell, x, w, f, head_scale(w, f), depth, head);
}

}  // namespace steps

}  // namespace attnwalk
