// The --json view: one document, documented in docs/json.md.
#include <cmath>

#include <nlohmann/json.hpp>

#include "render.hpp"

namespace attnwalk::app {

namespace {

// Floats are written as float32 (shortest text that reads back to the same float),
// objects keep their insertion order.
using Json = nlohmann::basic_json<nlohmann::ordered_map, std::vector, std::string, bool, std::int64_t,
                                  std::uint64_t, float>;

Json number(float v) {
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    return v;
}

// Nested arrays matching `shape`, from row-major data starting at `offset`.
Json nested(const Tensor& t, std::size_t axis, std::size_t offset) {
    if (axis == t.shape.size()) return number(t.data[offset]);
    std::size_t stride = 1;
    for (std::size_t a = axis + 1; a < t.shape.size(); ++a) stride *= t.shape[a];
    Json arr = Json::array();
    for (std::size_t i = 0; i < t.shape[axis]; ++i) arr.push_back(nested(t, axis + 1, offset + i * stride));
    return arr;
}

Json vector_of(const std::vector<float>& values) {
    Json arr = Json::array();
    for (float v : values) arr.push_back(number(v));
    return arr;
}

Json step_json(const Step& step, bool timed) {
    Json j;
    j["id"] = step.id;
    j["title"] = step.title;
    j["formula"] = step.formula;
    j["kind"] = step.kind == StepKind::parameter ? "parameter" : "result";
    j["shape"] = step.tensor.shape;
    Json axes = Json::array();
    for (Axis a : step.axes) axes.push_back(axis_name(a));
    j["axes"] = axes;
    if (step.summarised) {
        const Summary& s = step.summary;
        Json sum{{"min", s.min}, {"max", s.max}, {"mean", s.mean}, {"checksum", s.checksum}, {"count", s.count},
                 {"non_finite", s.non_finite}};
        if (s.has_row_sums) sum["row_sum_range"] = Json::array({s.row_sum_min, s.row_sum_max});
        if (!s.scope.empty()) sum["scope"] = s.scope;
        j["summary"] = sum;
        if (!step.tensor.data.empty()) j["data"] = nested(step.tensor, 0, 0);
    } else {
        j["data"] = nested(step.tensor, 0, 0);
        if (!step.row_sum.data.empty()) j["row_sum"] = nested(step.row_sum, 0, 0);
    }
    if (!step.note.empty()) j["note"] = step.note;
    if (timed) j["seconds"] = step.seconds;
    if (!step.expansion.empty()) {
        Json list = Json::array();
        for (const auto& e : step.expansion) {
            Json terms = Json::array();
            for (const auto& t : e.terms) terms.push_back(Json{{"coef", number(t.coef)}, {"value", vector_of(t.value)}});
            list.push_back(Json{{"label", e.label}, {"terms", terms}, {"result", vector_of(e.result)}});
        }
        j["expansion"] = list;
    }
    return j;
}

Json trace_json(const Trace& trace) {
    Json doc;
    doc["command"] = trace.command;
    doc["tokens"] = trace.tokens;
    doc["batched"] = trace.batched;
    Json params = Json::object();
    for (const auto& [name, value] : trace.params)
        std::visit([&, &key = name](const auto& v) {
            using V = std::decay_t<decltype(v)>;
            if constexpr (std::is_same_v<V, double>) params[key] = number(static_cast<float>(v));
            else params[key] = v;
        }, value);
    doc["params"] = params;
    Json steps = Json::array();
    double total = 0.0;
    for (const auto& step : trace.steps) {
        steps.push_back(step_json(step, trace.timed));
        total += step.seconds;
    }
    doc["steps"] = steps;
    if (trace.timed) doc["timing"] = Json{{"total_seconds", total}, {"matrix_products", trace.backend}};
    return doc;
}

}  // namespace

void render_json(const Trace& trace, std::ostream& out) { out << trace_json(trace).dump() << '\n'; }

void render_json(const std::vector<Section>& sections, std::ostream& out) {
    Json doc;
    doc["command"] = "walkthrough";
    Json list = Json::array();
    for (const Section& s : sections)
        list.push_back(Json{{"id", s.id}, {"title", s.title}, {"explanation", s.explanation}, {"formula", s.formula},
                            {"rerun", "attnwalk " + s.args}, {"trace", trace_json(s.trace)}});
    doc["sections"] = list;
    out << doc.dump() << '\n';
}

}  // namespace attnwalk::app
