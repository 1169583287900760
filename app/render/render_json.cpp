// The --json view: one document, documented in docs/json.md, streamed straight to the
// output (no document tree in memory: a context trace at T = 4096 holds 34 million numbers).
#include <cctype>
#include <set>
#include <string>
#include <type_traits>

#include "json_writer.hpp"
#include "render_json.hpp"

namespace attnwalk::app {

namespace {

// Nested arrays matching `shape`, from row-major data starting at `offset`.
void nested(JsonWriter& w, const Tensor& t, std::size_t axis, std::size_t offset) {
    if (axis == t.shape.size()) {
        if (t.is_integer_at(offset)) w.integer(t.integer_at(offset));  // ids, counts, layers: exact, without ".0"
        else w.number(t.data[offset]);
        return;
    }
    std::size_t stride = 1;
    for (std::size_t a = axis + 1; a < t.shape.size(); ++a) stride *= t.shape[a];
    w.raw('[');
    for (std::size_t i = 0; i < t.shape[axis]; ++i) {
        if (i) w.raw(',');
        nested(w, t, axis + 1, offset + i * stride);
    }
    w.raw(']');
}

void numbers(JsonWriter& w, const std::vector<float>& values) {
    w.raw('[');
    for (std::size_t i = 0; i < values.size(); ++i) {
        if (i) w.raw(',');
        w.number(values[i]);
    }
    w.raw(']');
}

// Tensors from this many values on are packed where the writer packs.
constexpr std::size_t packed_from = 64;

void step_json(JsonWriter& w, const Step& step, bool timed, const std::string& npy = "") {
    w.raw('{').key("id").string(step.id);
    w.raw(',').key("title").string(step.title);
    w.raw(',').key("formula").string(step.formula);
    w.raw(',').key("kind").string(step.kind == StepKind::parameter ? "parameter" : "result");
    if (step.first_row) w.raw(',').key("first_row").integer(static_cast<unsigned long long>(step.first_row));
    if (step.query) w.raw(',').key("query").integer(static_cast<unsigned long long>(*step.query));
    if (step.first_key) w.raw(',').key("first_key").integer(static_cast<unsigned long long>(step.first_key));
    if (step.first_layer) w.raw(',').key("first_layer").integer(static_cast<unsigned long long>(step.first_layer));
    if (!step.tensor.words.empty()) {  // what each id stands for, beside the ids in data
        w.raw(',').key("words").raw('[');
        for (std::size_t i = 0; i < step.tensor.words.size(); ++i) (i ? w.raw(',') : w).string(step.tensor.words[i]);
        w.raw(']');
    }
    if (!step.labels.empty()) {
        w.raw(',').key("labels").raw('[');
        for (std::size_t i = 0; i < step.labels.size(); ++i) (i ? w.raw(',') : w).string(step.labels[i]);
        w.raw(']');
    }
    w.raw(',').key("shape").raw('[');
    for (std::size_t i = 0; i < step.tensor.shape.size(); ++i) (i ? w.raw(',') : w).integer(static_cast<unsigned long long>(step.tensor.shape[i]));
    w.raw(']').raw(',').key("axes").raw('[');
    // A token×token matrix's last two axes are its queries (rows) and keys (columns).
    const std::size_t rank = step.axes.size();
    const bool attention = rank >= 2 && step.axes[rank - 2] == Axis::token && step.axes[rank - 1] == Axis::token;
    const auto name = [&](std::size_t i) -> std::string {
        if (i + 2 == rank && !step.row_axis.empty()) return step.row_axis;  // the step names its axes (a circuit table)
        if (i + 1 == rank && !step.col_axis.empty()) return step.col_axis;
        return attention && i + 2 == rank ? "query" : attention && i + 1 == rank ? "key" : axis_name(step.axes[i]);
    };
    for (std::size_t i = 0; i < rank; ++i) (i ? w.raw(',') : w).string(name(i));
    w.raw(']');
    if (step.summarised) {
        const Summary& s = step.summary;
        w.raw(',').key("summary").raw('{').key("min").number(s.min);
        w.raw(',').key("max").number(s.max);
        w.raw(',').key("mean").number(s.mean);
        w.raw(',').key("checksum").number(s.checksum);
        w.raw(',').key("count").integer(static_cast<unsigned long long>(s.count));
        w.raw(',').key("non_finite").integer(static_cast<unsigned long long>(s.non_finite));
        if (s.has_row_sums) w.raw(',').key("row_sum_range").raw('[').number(s.row_sum_min).raw(',').number(s.row_sum_max).raw(']');
        if (!s.scope.empty()) w.raw(',').key("scope").string(s.scope);
        w.raw('}');
    }
    if (!step.tensor.data.empty() && !npy.empty()) {
        w.raw(',').key("npy").string(npy);
    } else if (!step.tensor.data.empty()) {
        w.raw(',').key("data");
        if (w.packed && step.tensor.data.size() >= packed_from && !step.tensor.is_integer() &&
            step.tensor.integer_columns == 0)
            w.raw('{').key("f32").base64_f32(step.tensor.data).raw('}');
        else
            nested(w, step.tensor, 0, 0);
    }
    if (!step.row_sum.data.empty()) {
        w.raw(',').key("row_sum");
        nested(w, step.row_sum, 0, 0);
    }
    if (!step.note.empty()) w.raw(',').key("note").string(step.note);
    if (timed) {
        w.raw(',').key("seconds").number(step.seconds);
        w.raw(',').key("flop").integer(static_cast<unsigned long long>(step.flop));
        w.raw(',').key("bytes").integer(static_cast<unsigned long long>(step.bytes));
        if (step.limit_seconds > 0) w.raw(',').key("limit_seconds").number(step.limit_seconds);
    }
    if (!step.expansion.empty()) {
        w.raw(',').key("expansion").raw('[');
        for (std::size_t e = 0; e < step.expansion.size(); ++e) {
            const Expansion& ex = step.expansion[e];
            (e ? w.raw(',') : w).raw('{').key("label").string(ex.label).raw(',').key("terms").raw('[');
            for (std::size_t t = 0; t < ex.terms.size(); ++t) {
                (t ? w.raw(',') : w).raw('{').key("coef").number(ex.terms[t].coef).raw(',').key("value");
                numbers(w, ex.terms[t].value);
                if (!ex.terms[t].value_name.empty()) w.raw(',').key("value_name").string(ex.terms[t].value_name);
                w.raw('}');
            }
            w.raw(']').raw(',').key("result");
            numbers(w, ex.result);
            if (ex.omitted) w.raw(',').key("omitted").integer(ex.omitted).raw(',').key("omitted_after").integer(ex.omitted_after);
            w.raw('}');
        }
        w.raw(']');
    }
    w.raw('}');
}

void param_json(JsonWriter& w, const ParamValue& value) {
    std::visit([&](const auto& v) {
        using V = std::decay_t<decltype(v)>;
        if constexpr (std::is_same_v<V, bool>) w.boolean(v);
        else if constexpr (std::is_same_v<V, unsigned long long>) w.integer(v);
        else if constexpr (std::is_same_v<V, double>) w.number(static_cast<float>(v));
        else if constexpr (std::is_same_v<V, std::string>) w.string(v);
        else if (v.at.size() == 1) w.integer(v.at[0]);  // an Index: 0-based, one number or a cell's pair
        else {
            w.raw('[');
            for (std::size_t k = 0; k < v.at.size(); ++k) (k ? w.raw(',') : w).integer(v.at[k]);
            w.raw(']');
        }
    }, value);
}

void trace_json(JsonWriter& w, const Trace& trace, const std::string& npy_dir = "") {
    const std::vector<std::string> npy = npy_dir.empty() ? std::vector<std::string>() : npy_file_names(trace);
    w.raw('{').key("format_version").integer(json_format_version).raw(',').key("command").string(trace.command);
    w.raw(',').key("tokens").raw('[');
    for (std::size_t i = 0; i < trace.tokens.size(); ++i) (i ? w.raw(',') : w).string(trace.tokens[i]);
    w.raw(']').raw(',').key("batched").boolean(trace.batched);
    if (!trace.layer_kinds.empty()) {  // a model whose layers differ: each one's kind
        w.raw(',').key("layer_kinds").raw('[');
        for (std::size_t i = 0; i < trace.layer_kinds.size(); ++i) (i ? w.raw(',') : w).string(trace.layer_kinds[i]);
        w.raw(']');
    }
    w.raw(',').key("params").raw('{');
    for (std::size_t i = 0; i < trace.params.size(); ++i) {
        (i ? w.raw(',') : w).string(trace.params[i].first).raw(':');
        param_json(w, trace.params[i].second);
    }
    w.raw('}').raw(',').key("steps").raw('[');
    double total = 0.0;
    for (std::size_t i = 0; i < trace.steps.size(); ++i) {
        if (i) w.raw(',');
        step_json(w, trace.steps[i], trace.timed, npy.empty() ? std::string() : npy_dir + "/" + npy[i]);
        total += trace.steps[i].seconds;
    }
    w.raw(']');
    if (trace.timed) {
        w.raw(',').key("timing").raw('{').key("total_seconds").number(total).raw(',').key("matrix_products").string(trace.backend);
        if (trace.sgemm_flop_per_second > 0)
            w.raw(',').key("sgemm_flop_per_second").number(trace.sgemm_flop_per_second).raw(',').key("copy_bytes_per_second").number(trace.copy_bytes_per_second);
        w.raw('}');
    }
    w.raw('}');
}

}  // namespace

std::vector<std::string> npy_file_names(const Trace& trace) {
    std::vector<std::string> names;
    std::set<std::string> taken;
    for (const Step& step : trace.steps) {
        std::string base;
        for (char c : step.id) base += std::isalnum(static_cast<unsigned char>(c)) || c == '.' || c == '_' || c == '-' ? c : '_';
        std::string name = base + ".npy";
        for (std::size_t n = 2; !taken.insert(name).second; ++n) name = base + "_" + std::to_string(n) + ".npy";
        names.push_back(name);
    }
    return names;
}

void render_json(const Trace& trace, std::ostream& out, NonFinite non_finite, bool packed, const std::string& npy_dir) {
    JsonWriter w(out, non_finite, packed);
    trace_json(w, trace, npy_dir);
    w.raw('\n');
}

void render_steps_json(const std::vector<Step>& steps, std::ostream& out, bool packed) {
    JsonWriter w(out, NonFinite::string, packed);
    w.raw('[');
    for (std::size_t i = 0; i < steps.size(); ++i) {
        if (i) w.raw(',');
        step_json(w, steps[i], false);
    }
    w.raw(']');
}

void render_json(const std::vector<Section>& sections, std::ostream& out, NonFinite non_finite) {
    JsonWriter w(out, non_finite);
    w.raw('{').key("format_version").integer(json_format_version).raw(',').key("command").string("walkthrough").raw(',').key("sections").raw('[');
    for (std::size_t i = 0; i < sections.size(); ++i) {
        const Section& s = sections[i];
        (i ? w.raw(',') : w).raw('{').key("id").string(s.id);
        w.raw(',').key("title").string(s.title);
        w.raw(',').key("explanation").string(s.explanation);
        w.raw(',').key("formula").string(s.formula);
        w.raw(',').key("rerun").string("attnwalk " + s.args);
        w.raw(',').key("trace");
        trace_json(w, s.trace);
        w.raw('}');
    }
    w.raw(']').raw('}').raw('\n');
}

}  // namespace attnwalk::app
