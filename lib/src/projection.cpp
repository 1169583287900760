#include "attnwalk/projection.hpp"

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/json_input.hpp"

namespace attnwalk {

using json_input::json;

Init parse_init(const std::string& name) {
    if (name == "rand") return Init::rand;
    if (name == "randn") return Init::randn;
    if (name == "linear") return Init::linear;
    throw UsageError("unknown --init '" + name + "': expected rand, randn or linear");
}

const char* init_name(Init init) {
    switch (init) {
        case Init::rand: return "rand";
        case Init::randn: return "randn";
        case Init::linear: return "linear";
    }
    return "linear";
}

namespace {

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

}  // namespace

Linear draw_linear(Generator& gen, std::size_t in, std::size_t out, bool bias) {
    const auto init = gen.linear(in, out, bias);
    Linear layer;
    layer.w = xt::transpose(mat_of(init.weight, out, in));  // PyTorch's out×in -> x·W's in×out
    if (bias) layer.b = vec_of(init.bias);
    return layer;
}

QKV draw_qkv(Generator& gen, std::size_t d_in, std::size_t d_out, Init init, bool bias) {
    auto draw = [&]() {
        switch (init) {
            case Init::rand: return Linear{mat_of(gen.rand(d_in * d_out), d_in, d_out), Vec{}};
            case Init::randn: return Linear{mat_of(gen.randn(d_in * d_out), d_in, d_out), Vec{}};
            case Init::linear: break;
        }
        return draw_linear(gen, d_in, d_out, bias);
    };
    QKV qkv;  // the order of the draws is the order of construction: query, key, value
    qkv.query = draw();
    qkv.key = draw();
    qkv.value = draw();
    return qkv;
}

Cube project(const Cube& x, const Linear& layer) {
    Cube out = matmul_each(x, layer.w);  // (B,T,d_out)
    if (layer.b.size() != 0) out += xt::view(layer.b, xt::newaxis(), xt::newaxis(), xt::all());
    return out;
}

namespace {

Linear read_linear(const json& object, const std::string& file, const std::string& path,
                   const std::string& w_name, const std::string& b_name, std::size_t d_in,
                   std::optional<std::size_t> d_out) {
    if (!object.contains(w_name))
        throw InputError(file, path, "missing \"" + w_name + "\" (a d_in×d_out matrix, d_in = " +
                                         std::to_string(d_in) + ")");
    const std::string w_path = path + "." + w_name;
    Tensor w = json_input::read_tensor(object.at(w_name), file, w_path);
    const std::size_t cols = w.shape.size() == 2 ? w.shape[1] : 0;
    const std::vector<std::size_t> expected{d_in, d_out.value_or(cols)};
    if (w.shape != expected)
        throw InputError(file, w_path, w_name + " has the wrong shape: expected " +
                                           json_input::shape_string(expected) + " (d_in×d_out), got " +
                                           json_input::shape_string(w.shape));
    Linear layer;
    layer.w = mat_from_trace(w);
    if (object.contains(b_name)) {
        const Tensor b = json_input::read_tensor_shaped(object.at(b_name), file, path + "." + b_name,
                                                        {expected[1]}, b_name);
        layer.b = vec_of(b.data);
    }
    return layer;
}

const json& object_at(const json& doc, const std::string& file, const std::string& path) {
    if (!doc.is_object())
        throw InputError(file, path, "expected a JSON object, got " + json_input::type_name(doc));
    return doc;
}

}  // namespace

QKV read_qkv(const json& object, const std::string& file, const std::string& path, std::size_t d_in) {
    object_at(object, file, path);
    QKV qkv;
    qkv.query = read_linear(object, file, path, "W_query", "b_query", d_in, std::nullopt);
    const std::size_t d_out = qkv.query.w.shape(1);
    qkv.key = read_linear(object, file, path, "W_key", "b_key", d_in, d_out);
    qkv.value = read_linear(object, file, path, "W_value", "b_value", d_in, d_out);
    return qkv;
}

QKV load_qkv(const std::string& file, std::size_t d_in) {
    const std::string name = file == "-" ? "<stdin>" : file;
    const json doc = json_input::parse(read_text_file(file), name);
    return read_qkv(doc, name, "$", d_in);
}

MultiHeadWeights load_multi_head(const std::string& file, std::size_t d_in, bool wrapper,
                                 std::size_t heads) {
    return parse_multi_head(read_text_file(file), file == "-" ? "<stdin>" : file, d_in, wrapper, heads);
}

MultiHeadWeights parse_multi_head(const std::string& text, const std::string& name, std::size_t d_in, bool wrapper,
                                  std::size_t heads) {
    const json parsed = json_input::parse(text, name);
    const json& doc = object_at(parsed, name, "$");
    MultiHeadWeights out;
    if (wrapper) {
        if (!doc.contains("heads") || !doc.at("heads").is_array())
            throw InputError(name, "$", "missing \"heads\": the wrapper variant takes a list of "
                                        "{\"W_query\", \"W_key\", \"W_value\"}, one per head");
        const json& list = doc.at("heads");
        if (list.size() != heads)
            throw InputError(name, "$.heads", "expected " + std::to_string(heads) +
                                                  " heads (--heads), got " + std::to_string(list.size()));
        for (std::size_t h = 0; h < list.size(); ++h)
            out.heads.push_back(read_qkv(list[h], name, "$.heads[" + std::to_string(h) + "]", d_in));
        const std::size_t d_out = out.heads[0].query.w.shape(1);
        for (std::size_t h = 1; h < heads; ++h)
            if (out.heads[h].query.w.shape(1) != d_out)
                throw InputError(name, "$.heads[" + std::to_string(h) + "].W_query",
                                 "every head must have the same d_out: expected " +
                                     std::to_string(d_out) + " columns, got " +
                                     std::to_string(out.heads[h].query.w.shape(1)));
        return out;
    }
    out.heads.push_back(read_qkv(doc, name, "$", d_in));
    const std::size_t d_out = out.heads[0].query.w.shape(1);
    if (!doc.contains("out_proj"))
        throw InputError(name, "$", "missing \"out_proj\": {\"weight\": d_out×d_out, \"bias\": [d_out]} "
                                    "(the fused variant projects the concatenated heads)");
    const json& proj = object_at(doc.at("out_proj"), name, "$.out_proj");
    if (!proj.contains("weight"))
        throw InputError(name, "$.out_proj", "missing \"weight\" (a d_out×d_out matrix, d_out = " +
                                                 std::to_string(d_out) + ")");
    out.out_proj.w = mat_from_trace(json_input::read_tensor_shaped(
        proj.at("weight"), name, "$.out_proj.weight", {d_out, d_out}, "out_proj.weight"));
    if (!proj.contains("bias"))
        throw InputError(name, "$.out_proj", "missing \"bias\" (d_out = " + std::to_string(d_out) + " values)");
    out.out_proj.b = vec_of(json_input::read_tensor_shaped(proj.at("bias"), name, "$.out_proj.bias",
                                                           {d_out}, "out_proj.bias")
                                .data);
    return out;
}

}  // namespace attnwalk
