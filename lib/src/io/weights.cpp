#include "attnwalk/io/weights.hpp"
#include "attnwalk/trace_tensors.hpp"

#include <xtensor/xbuilder.hpp>
#include <xtensor/xmanipulation.hpp>
#include <xtensor/xview.hpp>

#include "attnwalk/ops/attention.hpp"
#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/errors.hpp"
#include "attnwalk/io/json_input.hpp"

namespace attnwalk {

using json_input::Value;

const char* init_name(Init init) {
    switch (init) {
        case Init::rand: return "rand";
        case Init::randn: return "randn";
        case Init::linear: return "linear";
    }
    return "linear";
}

std::optional<Init> init_from_name(const std::string& name) {
    for (Init init : {Init::rand, Init::randn, Init::linear})
        if (name == init_name(init)) return init;
    return std::nullopt;
}

std::size_t output_width(const AttentionWeights& weights) { return weights.width(); }

namespace {

struct QKV {
    Linear query, key, value;
    std::optional<Linear> gate;
};

Mat mat_of(const std::vector<float>& values, std::size_t rows, std::size_t cols) {
    Mat m({rows, cols});
    std::copy(values.begin(), values.end(), m.begin());
    return m;
}

Vec vec_of(const std::vector<float>& values) {
    Vec v = xt::empty<float>({values.size()});
    std::copy(values.begin(), values.end(), v.begin());
    return v;
}


// W_query, W_key, W_value in that order, as the textbook's classes draw them; the keys
// and values d_kv wide (d_out but with grouped-query attention).
QKV draw_qkv(Generator& gen, std::size_t d_in, std::size_t d_out, std::size_t d_kv, Init init, bool bias, bool gate) {
    auto draw = [&](std::size_t width) {
        switch (init) {
            case Init::rand: return owned_linear(mat_of(gen.rand(d_in * width), d_in, width));
            case Init::randn: return owned_linear(mat_of(gen.randn(d_in * width), d_in, width));
            case Init::linear: break;
        }
        return draw_linear(gen, d_in, width, bias);
    };
    QKV qkv;  // the order of the draws is the order of construction: query, (gate,) key, value
    qkv.query = draw(d_out);
    if (gate) qkv.gate = draw(d_out);
    qkv.key = draw(d_kv);
    qkv.value = draw(d_kv);
    return qkv;
}

// MHACombinedQKV's nn.Linear(d_in, 3·d_out): one weight (rows: queries, keys, values),
// then one bias; split into the three layers.
QKV draw_combined(Generator& gen, std::size_t d_in, std::size_t d_out, bool bias) {
    const Linear all = draw_linear(gen, d_in, 3 * d_out, bias);
    QKV qkv;
    Linear* parts[] = {&qkv.query, &qkv.key, &qkv.value};
    for (std::size_t p = 0; p < 3; ++p) {
        parts[p]->w = xt::view(all.w, xt::all(), xt::range(p * d_out, (p + 1) * d_out));
        if (bias) parts[p]->b = xt::view(all.b, xt::range(p * d_out, (p + 1) * d_out));
    }
    return qkv;
}

// The stacked layout's heads side by side: one layer of d_in × H·d_out.
Linear concat_columns(const std::vector<Linear>& layers) {
    Linear out;
    std::vector<Mat> ws;
    std::vector<Vec> bs;
    for (const Linear& l : layers) {
        ws.push_back(l.w);
        bs.push_back(l.b);
    }
    out.w = ws.front();
    for (std::size_t h = 1; h < ws.size(); ++h) out.w = xt::concatenate(xt::xtuple(out.w, ws[h]), 1);
    if (bs.front().size() != 0) {
        out.b = bs.front();
        for (std::size_t h = 1; h < bs.size(); ++h) out.b = xt::concatenate(xt::xtuple(out.b, bs[h]), 0);
    }
    return out;
}

std::shared_ptr<AttentionWeights> from_heads(const std::vector<QKV>& heads, const WeightsShape& shape) {
    auto w = std::make_shared<AttentionWeights>();
    w->heads = shape.heads;
    w->layout = shape.layout;
    if (!shape.sinks.empty()) {  // given, not drawn: the draws stay those of the layer without sinks
        if (shape.sinks.size() != 1 && shape.sinks.size() != shape.heads)
            throw UsageError("the learned sinks are one logit per head (" + std::to_string(shape.heads) + ") or one for every head: " +
                             std::to_string(shape.sinks.size()) + " given");
        Vec s = Vec::from_shape({shape.heads});
        for (std::size_t h = 0; h < shape.heads; ++h) s(h) = shape.sinks[shape.sinks.size() == 1 ? 0 : h];
        w->sinks = std::move(s);
    }
    w->kv_heads = shape.kv_heads;
    w->combined = shape.combined;
    if (heads.size() == 1) {
        w->query = heads[0].query;
        w->key = heads[0].key;
        w->value = heads[0].value;
        w->gate = heads[0].gate;
        return w;
    }
    std::vector<Linear> q, k, v;
    for (const QKV& h : heads) {
        q.push_back(h.query);
        k.push_back(h.key);
        v.push_back(h.value);
    }
    w->query = concat_columns(q);
    w->key = concat_columns(k);
    w->value = concat_columns(v);
    return w;
}

// Grouped-query attention and the combined layer are forms of the fused layout.
void check_grouping(const WeightsShape& shape, std::size_t d_out) {
    if (shape.layout == HeadLayout::stacked && (shape.kv_heads || shape.combined))
        throw UsageError("grouped key/value heads and the combined qkv layer are forms of the fused layout, not of the wrapper");
    if (shape.gate && (shape.combined || shape.layout != HeadLayout::fused))
        throw UsageError("the output gate belongs to the fused layer (GatedMultiHeadAttention): not with the wrapper or the combined qkv layer");
    if (shape.kv_heads && shape.combined)
        throw UsageError("the combined qkv layer has as many key/value heads as query heads: it cannot be grouped");
    if (shape.layout == HeadLayout::fused) check_head_shape(d_out, shape.heads, shape.kv_heads);
}

}  // namespace

Linear draw_linear(Generator& gen, std::size_t in, std::size_t out, bool bias) {
    const auto init = gen.linear(in, out, bias);
    Linear layer;
    layer.w = xt::transpose(mat_of(init.weight, out, in));  // PyTorch's out×in -> x·W's in×out
    if (bias) layer.b = vec_of(init.bias);
    return layer;
}

Weights draw_weights(Generator& gen, const WeightsShape& shape, Init init, bool bias) {
    if (bias && init != Init::linear)
        throw UsageError("a query/key/value bias needs nn.Linear's initialisation (torch.rand/randn matrices have no bias)");
    check_grouping(shape, shape.d_out);
    if (shape.combined && init != Init::linear)
        throw UsageError("the combined qkv layer is an nn.Linear: it needs nn.Linear's initialisation");
    std::vector<QKV> heads;
    const std::size_t modules = shape.layout == HeadLayout::stacked ? shape.heads : 1;
    const std::size_t d_kv = shape.kv_heads ? shape.d_out / shape.heads * shape.kv_heads : shape.d_out;
    for (std::size_t h = 0; h < modules; ++h)  // head by head: query, key, value
        heads.push_back(shape.combined ? draw_combined(gen, shape.d_in, shape.d_out, bias)
                                       : draw_qkv(gen, shape.d_in, shape.d_out, d_kv, init, bias, shape.gate));
    auto w = from_heads(heads, shape);
    if (shape.out_proj) w->out_proj = draw_linear(gen, shape.d_out, shape.d_out, true);
    w->origin = {{"seed", static_cast<unsigned long long>(gen.initial_seed())},
                 {"init", std::string(init_name(init))},
                 {"d_out", static_cast<unsigned long long>(shape.d_out)},
                 {"qkv_bias", bias}};
    return w;
}

namespace {

Linear read_linear(const Value& object, const std::string& file, const std::string& path, const std::string& w_name,
                   const std::string& b_name, std::size_t d_in, std::optional<std::size_t> d_out) {
    const Value* wv = object.find(w_name);
    if (!wv)
        throw InputError(file, path, "missing \"" + w_name + "\" (a d_in×d_out matrix, d_in = " + std::to_string(d_in) + ")");
    const std::string w_path = path + "." + w_name;
    const Tensor& w = json_input::tensor_of(*wv, file, w_path);
    const std::size_t cols = w.shape.size() == 2 ? w.shape[1] : 0;
    const std::vector<std::size_t> expected{d_in, d_out.value_or(cols)};
    if (w.shape != expected)
        throw InputError(file, w_path, w_name + " has the wrong shape: expected " + json_input::shape_string(expected) +
                                           " (d_in×d_out), got " + json_input::shape_string(w.shape));
    Linear layer;
    layer.w = mat_from_trace(w);
    if (const Value* bv = object.find(b_name))
        layer.b = vec_of(json_input::tensor_of(*bv, file, path + "." + b_name, {expected[1]}, b_name).data);
    return layer;
}

const Value& object_at(const Value& doc, const std::string& file, const std::string& path) {
    if (!doc.is_object()) throw InputError(file, path, "expected a JSON object, got " + json_input::type_name(doc));
    return doc;
}

// {"W_query", "W_key", "W_value", optional "b_query", "b_key", "b_value"} at `path`.
const std::vector<std::string> qkv_keys{"W_query", "W_key", "W_value", "b_query", "b_key", "b_value"};

// `heads`/`kv_heads`: W_key and W_value have d_out/heads·kv_heads columns (GQA).
QKV read_qkv(const Value& object, const std::string& file, const std::string& path, std::size_t d_in, std::size_t heads = 1,
             std::size_t kv_heads = 0) {
    object_at(object, file, path);
    if (path != "$") json_input::check_keys(object, file, path, qkv_keys);
    QKV qkv;
    qkv.query = read_linear(object, file, path, "W_query", "b_query", d_in, std::nullopt);
    const std::size_t d_out = qkv.query.w.shape(1);
    if (kv_heads)
        if (auto problem = head_shape_problem(d_out, heads, kv_heads)) throw InputError(file, path + ".W_query", *problem);
    const std::size_t d_kv = kv_heads ? d_out / heads * kv_heads : d_out;
    qkv.key = read_linear(object, file, path, "W_key", "b_key", d_in, d_kv);
    qkv.value = read_linear(object, file, path, "W_value", "b_value", d_in, d_kv);
    return qkv;
}

}  // namespace

Weights load_weights(const std::string& file, const WeightsShape& shape) {
    return parse_weights(read_text_file(file), source_name(file), shape);
}

Weights parse_weights(const std::string& text, const std::string& name, const WeightsShape& shape) {
    const Value parsed = json_input::parse(text, name);
    const Value& doc = object_at(parsed, name, "$");
    std::vector<std::string> top = qkv_keys;  // one file may serve every layout
    top.insert(top.end(), {"out_proj", "heads", "W_gate", "b_gate"});
    json_input::check_keys(doc, name, "$", top);
    std::vector<QKV> heads;
    if (shape.layout == HeadLayout::stacked) {
        const Value* list = doc.find("heads");
        if (!list || list->type != Value::Type::array)
            throw InputError(name, "$", "missing \"heads\": the wrapper variant takes a list of "
                                        "{\"W_query\", \"W_key\", \"W_value\"}, one per head");
        if (list->array.size() != shape.heads)
            throw InputError(name, "$.heads", "expected " + std::to_string(shape.heads) + " heads, got " +
                                                  std::to_string(list->array.size()));
        for (std::size_t h = 0; h < list->array.size(); ++h)
            heads.push_back(read_qkv(list->array[h], name, "$.heads[" + std::to_string(h) + "]", shape.d_in));
        const std::size_t d_out = heads[0].query.w.shape(1);
        for (std::size_t h = 1; h < heads.size(); ++h)
            if (heads[h].query.w.shape(1) != d_out)
                throw InputError(name, "$.heads[" + std::to_string(h) + "].W_query",
                                 "every head must have the same d_out: expected " + std::to_string(d_out) + " columns, got " +
                                     std::to_string(heads[h].query.w.shape(1)));
    } else {
        check_grouping(shape, shape.heads);  // d_out is checked when read
        heads.push_back(read_qkv(doc, name, "$", shape.d_in, shape.heads, shape.kv_heads));
    }
    const std::size_t d_out = heads[0].query.w.shape(1);
    if (shape.gate) heads[0].gate = read_linear(doc, name, "$", "W_gate", "b_gate", shape.d_in, d_out);
    else if (doc.find("W_gate") || doc.find("b_gate"))
        throw InputError(name, "$.W_gate", "the file has an output gate, and this layer has none: gated attention reads it (an unused gate "
                                           "would be ignored silently)");
    auto w = from_heads(heads, shape);
    w->origin = {{"weights", name}, {"d_out", static_cast<unsigned long long>(d_out)}};
    if (!shape.out_proj) return w;
    const Value* proj = doc.find("out_proj");
    if (!proj)
        throw InputError(name, "$", "missing \"out_proj\": {\"weight\": d_out×d_out, \"bias\": [d_out]} "
                                    "(the fused variant projects the concatenated heads)");
    object_at(*proj, name, "$.out_proj");
    json_input::check_keys(*proj, name, "$.out_proj", {"weight", "bias"});
    const Value* weight = proj->find("weight");
    if (!weight)
        throw InputError(name, "$.out_proj", "missing \"weight\" (a d_out×d_out matrix, d_out = " + std::to_string(d_out) + ")");
    Linear out;
    out.w = mat_from_trace(json_input::tensor_of(*weight, name, "$.out_proj.weight", {d_out, d_out}, "out_proj.weight"));
    const Value* bias = proj->find("bias");
    if (!bias) throw InputError(name, "$.out_proj", "missing \"bias\" (d_out = " + std::to_string(d_out) + " values)");
    out.b = vec_of(json_input::tensor_of(*bias, name, "$.out_proj.bias", {d_out}, "out_proj.bias").data);
    w->out_proj = std::move(out);
    return w;
}

}  // namespace attnwalk
