// A GGUF file read as the Hugging Face folder it was converted from: its metadata turned
// into the config.json fields the family's spec reads, its tensors dequantized to float32
// under Hugging Face's names (the rows of q and k put back where llama.cpp's converter took
// them from, the matrices it transposed transposed back), then the one loader (or the
// family's own reader). Nothing of a family is named here: the spec says its GGUF
// architecture, its names and fields.
//
//   GGUF                                  Hugging Face (the spec's names)
//   {arch}.embedding_length               hidden_size
//   {arch}.block_count                    num_hidden_layers
//   {arch}.feed_forward_length            intermediate_size
//   {arch}.context_length                 max_position_embeddings
//   {arch}.attention.head_count(_kv)      num_attention_heads, num_key_value_heads
//   {arch}.attention.key_length           head_dim
//   {arch}.attention.layer_norm_rms_epsilon   the norm's eps (RMSNorm)
//   {arch}.attention.layer_norm_epsilon   the norm's eps (LayerNorm: GPT-2)
//   {arch}.rope.freq_base, rope.scaling.* rope_theta, rope_scaling
//   rope_freqs (Llama 3.x)                rope_scaling llama3, checked (llama3_of_factors)
//   {arch}.attention.sliding_window       sliding_window
//   token_embd, output_norm, output       embed, final norm, head (output as token_embd's
//                                         bytes again, GPT-2's copy: tied)
//   position_embd                         learned positions
//   blk.N.attn_norm, attn_q/k/v/output, attn_qkv, attn_q_norm/k_norm, post_attention_norm,
//   ffn_norm, ffn_gate/up/down, post_ffw_norm   layer N's names (weights and biases)
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/gguf.hpp"
#include "attnwalk/io/json_input.hpp"
#include "attnwalk/model/decoder.hpp"
#include "attnwalk/ops/attention.hpp"
#include "attnwalk/ops/blas.hpp"
#include "attnwalk/ops/made_floats.hpp"
#include "config.hpp"

namespace attnwalk::model_detail {

namespace {

using json_input::Value;

const auto number = json_input::number_value;
const auto text = json_input::string_value;
const auto flag = json_input::bool_value;

const FamilySpec& family_of(const GgufFile& g, const std::string& arch) {
    std::string supported;
    for (const FamilySpec* f : families()) {
        if (f->gguf.model_type != f->model_type) continue;  // none, or its origin's
        if (f->gguf.architecture == arch) return *f;
        supported += (supported.empty() ? "" : ", ") + f->gguf.architecture;
    }
    throw InputError(g.file(), "metadata \"general.architecture\"", "GGUF architecture \"" + arch + "\" is not supported. Supported: " + supported);
}

// Llama 3.x's rope_scaling as llama.cpp's converter writes it: no keys, a tensor of d/2
// factors by which ggml divides RoPE's frequencies (ggml_rope_cache_init: θ/ff). The
// converter's LlamaModel.generate_extra_tensors takes each frequency θ_i = base^(−2i/d) in
// float32, its wavelength λ_i = 2π/θ_i, and stores 1 where λ_i < original/high_freq_factor,
// `factor` where λ_i > original/low_freq_factor, else 1/((1 − s)/factor + s) with
// s = (original/λ_i − low_freq_factor)/(high_freq_factor − low_freq_factor); its original
// context is 8192 (it reads original_max_position_embeddings from the config's top level,
// where Llama 3's has none) and every Llama 3.x has low 1 and high 4. The file's factors are
// checked against those the rule gives for the largest of them; then Hugging Face's
// rope_scaling llama3 with those values does the arithmetic, as PyTorch does it (θ_i/factor,
// and the blend (1 − s)·θ_i/factor + s·θ_i where ggml divides by the stored factor), so the
// forward is the folder's. Factors all 1 change nothing: no scaling (null). Others refused.
Value llama3_of_factors(const GgufFile& g, const GgufFile::TensorInfo& t, double base, std::size_t d) {
    const std::string where = "tensor \"rope_freqs.weight\"";
    if (t.ne.size() != 1 || d % 2 != 0 || t.count != d / 2)
        throw InputError(g.file(), where, "expected one factor per pair of the " + std::to_string(d) + " rotated features of a head (" + std::to_string(d / 2) + "), got " +
                                              std::to_string(t.count) + " in " + std::to_string(t.ne.size()) + " dimensions");
    std::vector<float> got(d / 2);
    g.dequantize(t, got.data());
    float factor = 1.0f;
    for (float v : got) {
        if (!(std::isfinite(v) && v >= 1.0f)) throw InputError(g.file(), where, "expected factors of at least 1 (ggml divides each frequency by one), got " + json_input::float32_text(v));
        factor = std::max(factor, v);
    }
    if (factor == 1.0f) return Value{};
    constexpr float low = 1.0f, high = 4.0f, original = 8192.0f;
    RopeParams plain;
    plain.base = base;
    const Rope rope = rope_tables(d, 0, 0, plain);
    const float two_pi = static_cast<float>(2.0 * 3.14159265358979323846);
    for (std::size_t i = 0; i < d / 2; ++i) {  // float32, term by term as the converter's torch
        const float wavelen = two_pi / rope.inv_freq(i);
        float want = 1.0f;
        if (wavelen > original / low) want = factor;
        else if (wavelen >= original / high) {
            const float smooth = (original / wavelen - low) / (high - low);
            want = 1.0f / ((1.0f - smooth) / factor + smooth);
        }
        if (!(std::fabs(got[i] - want) <= 1e-6f * want))  // torch and this may round the blend a last bit apart
            throw InputError(g.file(), where + "[" + std::to_string(i) + "]",
                             "expected " + json_input::float32_text(want) + ", the factor Llama 3's rope scaling gives (factor " + json_input::float32_text(factor) +
                                 ", low_freq_factor 1, high_freq_factor 4, original context 8192, as llama.cpp's converter computes them), got " +
                                 json_input::float32_text(got[i]) + ": other factors are not supported");
    }
    Value s = json_input::object_value();
    s.object.emplace_back("rope_type", text("llama3"));
    s.object.emplace_back("factor", number(static_cast<double>(factor)));
    s.object.emplace_back("low_freq_factor", number(static_cast<double>(low)));
    s.object.emplace_back("high_freq_factor", number(static_cast<double>(high)));
    s.object.emplace_back("original_max_position_embeddings", number(static_cast<double>(original)));
    return s;
}

// Whether output.weight is token_embd.weight again, byte for byte: a tied head the converter
// wrote out as a copy (GPT2Model.modify_tensors), read as tied.
bool copies_embeddings(const GgufFile& g) {
    const GgufFile::TensorInfo* out = g.tensor("output.weight");
    const GgufFile::TensorInfo* embed = g.tensor("token_embd.weight");
    return out && embed && out->type == embed->type && out->ne == embed->ne && std::memcmp(g.bytes(*out), g.bytes(*embed), static_cast<std::size_t>(out->bytes)) == 0;
}

// The metadata as config.json's fields, in the names the family's spec reads; `copied_head`:
// output.weight is token_embd.weight's copy (copies_embeddings). `sources`: each field's place
// in the file (metadata "arch.key" or tensor "name"), for messages.
Value config_of(const GgufFile& g, const FamilySpec& f, const std::string& arch, bool copied_head, std::map<std::string, std::string>& sources) {
    const auto key = [&](const std::string& k) { return arch + "." + k; };
    const auto metadata = [&](const std::string& k) { return "metadata \"" + key(k) + "\""; };
    Value c = json_input::object_value();
    const auto set = [&](const std::string& field, Value v, const std::string& source) {
        c.object.emplace_back(field, std::move(v));
        sources[field] = source;
    };
    const auto whole = [&](const std::string& field, const std::string& k) { set(field, number(static_cast<double>(g.whole(key(k)))), metadata(k)); };
    const GgufFile::TensorInfo* embed = g.tensor("token_embd.weight");
    if (!embed || embed->ne.size() != 2) throw InputError(g.file(), "tensor \"token_embd.weight\"", "missing, or not a matrix: the token embeddings");
    set("vocab_size", number(static_cast<double>(embed->ne[1])), "tensor \"token_embd.weight\"");
    whole("hidden_size", "embedding_length");
    whole("num_hidden_layers", "block_count");
    whole("intermediate_size", "feed_forward_length");
    whole("max_position_embeddings", "context_length");
    whole("num_attention_heads", "attention.head_count");
    const std::uint64_t heads = g.whole(key("attention.head_count"));
    set("num_key_value_heads", number(static_cast<double>(g.whole(key("attention.head_count_kv"), &heads))),
        metadata(g.find(key("attention.head_count_kv")) ? "attention.head_count_kv" : "attention.head_count"));
    if (g.find(key("attention.key_length"))) {
        const std::uint64_t k = g.whole(key("attention.key_length"));
        if (g.whole(key("attention.value_length"), &k) != k)
            throw InputError(g.file(), "metadata \"" + key("attention.value_length") + "\"", "expected the key length " + std::to_string(k) + " (a head's values as long as its keys)");
        if (!f.fields.head_dim.empty()) set(f.fields.head_dim, number(static_cast<double>(k)), metadata("attention.key_length"));
    }
    // llama.cpp's key for a LayerNorm's eps, or an RMSNorm's
    const std::string eps = f.norm == NormKind::layer_norm ? "attention.layer_norm_epsilon" : "attention.layer_norm_rms_epsilon";
    set(f.fields.norm_eps, number(g.number(key(eps))), metadata(eps));
    const double theta = f.layers.rope_theta_default;
    const auto given = [&](const std::string& k) { return metadata(k) + (g.find(key(k)) ? "" : " (absent: its default)"); };
    set("rope_theta", number(g.number(key("rope.freq_base"), &theta)), given("rope.freq_base"));
    set("tie_word_embeddings", flag(g.tensor("output.weight") == nullptr || copied_head), "tensor \"output.weight\"");
    set(f.dense.activation_fields.front(), text(f.dense.activations.front()), "metadata \"general.architecture\"");  // GGUF says none: llama.cpp's is the architecture's
    set("attention_bias", flag(g.tensor("blk.0.attn_output.bias") != nullptr), "tensor \"blk.0.attn_output.bias\"");
    if (g.find(key("attention.sliding_window"))) whole("sliding_window", "attention.sliding_window");
    if (!f.layers.sliding_rope_base.empty()) {
        const double swa_base = 10000.0;  // llama.cpp's default for a sliding layer's base
        set(f.layers.sliding_rope_base, number(g.number(key("rope.freq_base_swa"), &swa_base)), given("rope.freq_base_swa"));
    }
    if (!f.heads.scale_field.empty()) {  // llama.cpp scales by 1/√d_h (by 1/√(C/H) for a 62-layer Gemma 3, the 27B)
        const std::uint64_t width = g.whole(key("embedding_length")), d_h = g.whole(key("attention.key_length"));
        const bool by_width = g.whole(key("block_count")) == 62;
        set(f.heads.scale_field, number(static_cast<double>(by_width ? width / heads : d_h)),
            by_width ? metadata("embedding_length") + " / " + metadata("attention.head_count") : metadata("attention.key_length"));
    }
    const std::string none = "none", scaling = g.text(key("rope.scaling.type"), &none);
    if (const GgufFile::TensorInfo* t = g.tensor("rope_freqs.weight")) {
        if (scaling != "none")
            throw InputError(g.file(), "metadata \"" + key("rope.scaling.type") + "\"", "expected none beside the tensor rope_freqs.weight (its own scaling), got \"" + scaling + "\"");
        const std::uint64_t d_h = g.find(key("attention.key_length")) ? g.whole(key("attention.key_length")) : g.whole(key("embedding_length")) / heads;
        Value s = llama3_of_factors(g, *t, g.number(key("rope.freq_base"), &theta), static_cast<std::size_t>(g.whole(key("rope.dimension_count"), &d_h)));
        if (s.is_object()) set("rope_scaling", std::move(s), "tensor \"rope_freqs.weight\"");
    }
    if (scaling == "linear" || scaling == "yarn") {
        Value s = json_input::object_value();
        s.object.emplace_back("rope_type", text(scaling));
        s.object.emplace_back("factor", number(g.number(key("rope.scaling.factor"))));
        if (scaling == "yarn") s.object.emplace_back("original_max_position_embeddings", number(static_cast<double>(g.whole(key("rope.scaling.original_context_length")))));
        set("rope_scaling", std::move(s), metadata("rope.scaling.factor"));
    } else if (scaling != "none") {
        throw InputError(g.file(), "metadata \"" + key("rope.scaling.type") + "\"", "expected none, linear or yarn, got \"" + scaling + "\"");
    }
    return c;
}

// A layer's GGUF tensor names (blk.L.X) beside the spec's Hugging Face ones.
std::vector<std::pair<const char*, const std::string*>> layer_parts(const FamilySpec& f) {
    const TensorNames& n = f.names;
    return {{"attn_norm", &n.pre_attention_norm}, {"post_attention_norm", &n.post_attention_norm}, {"ffn_norm", &n.pre_mlp_norm},
            {"post_ffw_norm", &n.post_mlp_norm},  {"attn_q", &f.heads.query},                  {"attn_k", &f.heads.key},
            {"attn_v", &f.heads.value},           {"attn_output", &f.heads.out},               {"attn_qkv", &f.heads.fused_qkv},
            {"attn_q_norm", &f.heads.q_norm},     {"attn_k_norm", &f.heads.k_norm},            {"ffn_gate", &f.dense.gate},
            {"ffn_up", &f.dense.up},              {"ffn_down", &f.dense.down}};
}

// A GGUF tensor's Hugging Face name, through the spec's names; a name it does not know stays.
std::string hf_name(const std::string& name, const FamilySpec& f) {
    const TensorNames& n = f.names;
    if (name == "token_embd.weight") return n.prefix + n.embed;
    if (name == "position_embd.weight" && !n.positions.empty()) return n.prefix + n.positions;
    if (name == "output_norm.weight" || name == "output_norm.bias") return n.prefix + n.final_norm + name.substr(name.find('.'));
    if (name == "output.weight") return n.head;
    if (name.compare(0, 4, "blk.") != 0) return name;
    const std::size_t dot = name.find('.', 4);
    if (dot == std::string::npos) return name;
    const std::string layer = name.substr(4, dot - 4), rest = name.substr(dot + 1);
    const std::size_t last = rest.rfind('.');
    if (layer.empty() || layer.find_first_not_of("0123456789") != std::string::npos || last == std::string::npos) return name;
    const std::string part = rest.substr(0, last), suffix = rest.substr(last);  // ".weight" or ".bias"
    for (const auto& [gguf, hf] : layer_parts(f)) {
        if (part != gguf || hf->empty()) continue;
        std::string prefix = n.layer;
        prefix.replace(prefix.find("{L}"), 3, layer);
        return n.prefix + prefix + *hf + suffix;
    }
    return name;
}

// hf_name backwards: the GGUF name of a Hugging Face tensor name (one the file may lack, for
// a message), or empty when it is none of the spec's.
std::string gguf_name(const std::string& hf, const FamilySpec& f) {
    const TensorNames& n = f.names;
    for (const std::string suffix : {".weight", ".bias"}) {
        if (hf == n.prefix + n.embed && suffix == ".weight") return "token_embd.weight";
        if (!n.positions.empty() && hf == n.prefix + n.positions && suffix == ".weight") return "position_embd.weight";
        if (hf == n.prefix + n.final_norm + suffix) return "output_norm" + suffix;
    }
    if (hf == n.head) return "output.weight";
    const std::size_t at = n.layer.find("{L}");
    if (at == std::string::npos) return "";
    const std::string before = n.prefix + n.layer.substr(0, at), after = n.layer.substr(at + 3);
    if (hf.compare(0, before.size(), before) != 0) return "";
    std::size_t end = before.size();
    while (end < hf.size() && hf[end] >= '0' && hf[end] <= '9') ++end;
    if (end == before.size() || hf.compare(end, after.size(), after) != 0) return "";
    const std::string layer = hf.substr(before.size(), end - before.size()), rest = hf.substr(end + after.size());
    for (const auto& [gguf, name] : layer_parts(f))
        for (const std::string suffix : {".weight", ".bias"})
            if (!name->empty() && rest == *name + suffix) return "blk." + layer + "." + gguf + suffix;
    return "";
}

// A loader's message in the file's names: each quoted Hugging Face tensor name ("model.norm.weight")
// as its GGUF name; a shape, in the order it was given (PyTorch's, rows first), said so.
std::string message_in_file(const std::string& message, const FamilySpec& f) {
    std::string out;
    std::size_t from = 0;
    for (std::size_t open; (open = message.find('"', from)) != std::string::npos;) {
        const std::size_t close = message.find('"', open + 1);
        if (close == std::string::npos) break;
        const std::string inside = message.substr(open + 1, close - open - 1), gguf = gguf_name(inside, f);
        out += message.substr(from, open - from) + "\"" + (gguf.empty() ? inside : gguf) + "\"";
        from = close + 1;
    }
    out += message.substr(from);
    if (message.compare(0, 15, "expected shape ") == 0) out += " (rows first, as PyTorch's; ggml's ne lists them the other way)";
    return out;
}

// A place the loader names in config.json's terms ($.field, $.field.inner, $["tensor"]…) as
// the GGUF file's: its metadata key (`sources`, from config_of) or its tensor (gguf_name), the
// rest of the place after it; `$` is the whole file; a place without one stays.
std::string place_in_file(const std::string& place, const std::map<std::string, std::string>& sources, const FamilySpec& f) {
    if (place == "$") return "";  // config.json as a whole: the file as a whole
    if (place.compare(0, 2, "$.") == 0) {
        const std::size_t end = place.find_first_of(".[", 2);
        const auto found = sources.find(place.substr(2, end == std::string::npos ? std::string::npos : end - 2));
        if (found != sources.end()) return found->second + (end == std::string::npos ? "" : " (" + place.substr(2) + ")");
    } else if (place.compare(0, 3, "$[\"") == 0) {
        const std::size_t end = place.find("\"]");
        const std::string gguf = end == std::string::npos ? "" : gguf_name(place.substr(3, end - 3), f);
        if (!gguf.empty()) return "tensor \"" + gguf + "\"" + place.substr(end + 2);
    }
    return place;
}

bool ends_with(const std::string& s, const std::string& end) { return s.size() >= end.size() && s.compare(s.size() - end.size(), end.size(), end) == 0; }

// A head's rows d; InputError when `rows` do not split into `heads` heads of an even size.
std::size_t head_rows(std::size_t rows, std::size_t heads, const GgufFile& g, const std::string& name) {
    if (heads == 0 || rows % heads != 0 || (rows / heads) % 2 != 0)
        throw InputError(g.file(), "tensor \"" + name + "\"", std::to_string(rows) + " rows do not split into " + std::to_string(heads) + " heads of an even size");
    return rows / heads;
}

// Whether q's or k's rows (or biases) were permuted by the converter, and then their rows and heads.
bool permuted(const GgufFile::TensorInfo& t, const FamilySpec& f) {
    return f.gguf.rows_permuted && (ends_with(t.name, ".attn_q.weight") || ends_with(t.name, ".attn_k.weight") || ends_with(t.name, ".attn_q.bias") ||
                                    ends_with(t.name, ".attn_k.bias"));
}
std::size_t permuted_rows(const GgufFile::TensorInfo& t) { return static_cast<std::size_t>(t.ne.size() > 1 ? t.ne[1] : t.ne[0]); }
std::size_t permuted_heads(const GgufFile::TensorInfo& t, std::size_t heads, std::size_t kv_heads) {
    return t.name.find(".attn_q.") != std::string::npos ? heads : kv_heads;
}

// llama.cpp's converter (LlamaModel.permute) stores each head's rows (s, j) of q and k,
// s ∈ {0, 1} the half and j < d/2, at 2j + s: where the checkpoint's row r, s·d/2 + j of its
// head of d rows, lies in the file.
std::size_t file_row(std::size_t r, std::size_t d) {
    const std::size_t in_head = r % d, s = in_head / (d / 2), j = in_head % (d / 2);
    return r - in_head + 2 * j + s;
}

// Each row put back where the checkpoint has it. A row is `row_bytes` bytes (float32 or
// 16-bit values).
void unpermute_rows(unsigned char* w, std::size_t rows, std::size_t row_bytes, std::size_t heads, const GgufFile& g, const std::string& name) {
    const std::size_t d = head_rows(rows, heads, g, name);
    const std::vector<unsigned char> was(w, w + rows * row_bytes);
    for (std::size_t r = 0; r < rows; ++r) std::memcpy(w + r * row_bytes, was.data() + file_row(r, d) * row_bytes, row_bytes);
}

// Whether the tensor is a layer's matrix the converter transposed (GgufPart::transposed):
// "blk.N.PART.weight" of two dimensions.
bool transposed_by_converter(const GgufFile::TensorInfo& t, const FamilySpec& f) {
    if (t.ne.size() != 2 || t.name.compare(0, 4, "blk.") != 0 || !ends_with(t.name, ".weight")) return false;
    const std::size_t dot = t.name.find('.', 4);
    if (dot == std::string::npos) return false;
    const std::string part = t.name.substr(dot + 1, t.name.size() - 7 - dot - 1);
    return std::find(f.gguf.transposed.begin(), f.gguf.transposed.end(), part) != f.gguf.transposed.end();
}

// A rows×cols matrix of `size`-byte values transposed in place (through a copy).
void transpose(unsigned char* w, std::size_t rows, std::size_t cols, std::size_t size) {
    const std::vector<unsigned char> was(w, w + rows * cols * size);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < cols; ++c) std::memcpy(w + (c * rows + r) * size, was.data() + (r * cols + c) * size, size);
}

// Tensor t's weights as float32 into `out`, its rows split over the cores.
void dequantize_on_every_core(const GgufFile& g, const GgufFile::TensorInfo& t, float* out) {
    const std::size_t length = t.ne.empty() ? 1 : static_cast<std::size_t>(t.ne[0]), rows = static_cast<std::size_t>(t.count) / std::max<std::size_t>(length, 1);
    on_every_core(static_cast<std::size_t>(t.count), [&](std::size_t worker, std::size_t workers) {
        const auto [begin, end] = worker_share(rows, worker, workers);
        if (begin < end) g.dequantize_rows(t, begin, end - begin, out + begin * length);
    });
}

// One row of tensor i as float32, made alone (MadeFloats::MakeRow): a matrix's rows as they
// are in the checkpoint (q and k's put back where the converter took them from). Null for a
// tensor the converter transposed, or not a matrix.
MadeFloats::MakeRow row_maker(const std::shared_ptr<const GgufFile>& g, std::size_t i, const FamilySpec& f, std::size_t heads, std::size_t kv_heads) {
    const GgufFile::TensorInfo& t = g->tensors()[i];
    if (t.ne.size() != 2 || transposed_by_converter(t, f)) return nullptr;
    const std::size_t rows = static_cast<std::size_t>(t.ne[1]);
    const std::size_t d = permuted(t, f) ? head_rows(rows, permuted_heads(t, heads, kv_heads), *g, t.name) : 0;  // a head's rows, where they were permuted
    return [g, i, d](std::size_t r, float* out) { g->dequantize_rows(g->tensors()[i], d ? file_row(r, d) : r, 1, out); };
}

}  // namespace

Model load_gguf(const std::string& path, double memory_budget) {
    const auto g = std::make_shared<const GgufFile>(path, memory_budget);
    const std::string arch = g->text("general.architecture");
    const FamilySpec& f = family_of(*g, arch);
    const bool copied_head = copies_embeddings(*g);  // read as tied: the copy is not taken
    std::map<std::string, std::string> sources;  // config.json's field → its place in the file
    Value config = config_of(*g, f, arch, copied_head, sources);
    std::string note;  // Llama 3's scaling read from rope_freqs.weight, a head read as tied: the one-line header says so
    if (const Value* sc = config.find("rope_scaling"); sc && g->tensor("rope_freqs.weight"))
        if (const Value* factor = sc->find("factor")) note = ", Llama 3's rope scaling from rope_freqs (factor " + json_input::number_text(factor->number) + ")";
    ConfigFile cfg(path, std::move(config));
    const std::uint64_t heads = g->whole(arch + ".attention.head_count");
    const std::uint64_t kv_heads = g->whole(arch + ".attention.head_count_kv", &heads);
    if (copied_head) note += ", output.weight a copy of token_embd.weight: tied";

    // F16 and BF16 tensors kept as they are (widened as used, like a folder's) in memory filled
    // once; every other one made as float32 when a product first needs it, dequantized as ggml
    // does, and kept while the memory budget allows (made_floats.hpp): a layer at a time when the
    // whole model would not fit
    std::map<std::string, SafeTensors::Entry> entries;
    std::map<std::string, std::size_t> types;  // "Q4_K" → tensors
    std::size_t bytes = 0;             // the 16-bit tensors' memory
    std::size_t largest = 0;           // the largest tensor made as float32, in floats
    std::string largest_name;
    std::vector<std::size_t> offsets;  // each 16-bit tensor's place in the memory
    std::vector<bool> kept;            // kept as 16-bit values
    const auto skipped = [&](const GgufFile::TensorInfo& t) { return t.name == "rope_freqs.weight" || (copied_head && t.name == "output.weight"); };
    for (const GgufFile::TensorInfo& t : g->tensors()) {
        if (skipped(t)) {  // rope_freqs read into rope_scaling (config_of); a head that is the embeddings' copy: tied
            offsets.push_back(0);
            kept.push_back(false);
            continue;
        }
        if (permuted(t, f)) (void)head_rows(permuted_rows(t), permuted_heads(t, heads, kv_heads), *g, t.name);  // refused now, not when first used
        const bool sixteen = t.type == GgmlType::f16 || t.type == GgmlType::bf16;
        const bool plus_one = f.norm_adds_one && ends_with(t.name, "norm.weight");  // stored 1 + w: w back, in float32
        kept.push_back(sixteen && !plus_one);
        SafeTensors::Entry e;
        e.dtype = kept.back() ? ggml_type_name(static_cast<std::uint32_t>(t.type)) : "F32";
        e.shape = t.shape();
        if (transposed_by_converter(t, f)) std::reverse(e.shape.begin(), e.shape.end());  // back to the checkpoint's [in, out]
        if (kept.back()) {
            e.begin = bytes = (bytes + 63) / 64 * 64;
            offsets.push_back(bytes);
            e.end = bytes += static_cast<std::size_t>(t.count) * 2;
        } else {
            offsets.push_back(0);
            if (t.count > largest) {
                largest = static_cast<std::size_t>(t.count);
                largest_name = t.name;
            }
        }
        if (!entries.emplace(hf_name(t.name, f), std::move(e)).second)
            throw InputError(path, "tensor \"" + t.name + "\"", "another tensor has its name once translated: " + hf_name(t.name, f));
        ++types[ggml_type_name(static_cast<std::uint32_t>(t.type))];
    }
    const double made_largest = 4.0 * static_cast<double>(largest);
    if (static_cast<double>(bytes) + made_largest > memory_budget) {
        const std::string sixteen = json_input::size_text(static_cast<double>(bytes)), made = json_input::size_text(made_largest);
        const std::string others = " (the others are made as the forward needs them and given back)";
        throw MemoryBudgetError("reading " + path + ": " +
                                    (!largest ? "its 16-bit weights would take " + sixteen
                                     : bytes  ? "its 16-bit weights (" + sixteen + ") and its largest tensor as float32 (" + largest_name + ", " + made +
                                                   ") would take " + json_input::size_text(static_cast<double>(bytes) + made_largest) + others
                                              : "its largest tensor, " + largest_name + ", would take " + made + " as float32" + others),
                                json_input::size_text(memory_budget));
    }
    std::string kinds;
    for (const auto& [type, n] : types) kinds += (kinds.empty() ? "" : ", ") + type + " ×" + std::to_string(n);
    const std::string described = path + " (GGUF v" + std::to_string(g->version()) + ", " + arch + note + ")";
    // what the converter did to a tensor, undone in `w` (float32, or 16-bit values when `sixteen`)
    const auto restore = [g, &f, heads, kv_heads](const GgufFile::TensorInfo& t, unsigned char* w, bool sixteen) {
        if (transposed_by_converter(t, f))
            transpose(w, static_cast<std::size_t>(t.ne[1]), static_cast<std::size_t>(t.ne[0]), sixteen ? 2 : sizeof(float));
        if (permuted(t, f)) {
            const std::size_t row_bytes = (t.ne.size() > 1 ? static_cast<std::size_t>(t.ne[0]) : 1) * (sixteen ? 2 : sizeof(float));
            unpermute_rows(w, permuted_rows(t), row_bytes, permuted_heads(t, heads, kv_heads), *g, t.name);
        }
        if (f.norm_adds_one && ends_with(t.name, "norm.weight"))  // the converter stored 1 + w: w back (exact)
            for (std::size_t k = 0; k < t.count; ++k) reinterpret_cast<float*>(w)[k] -= 1.0f;
    };
    const auto fill = [&](unsigned char* out) {
        for (std::size_t i = 0; i < g->tensors().size(); ++i) {
            const GgufFile::TensorInfo& t = g->tensors()[i];
            if (!kept[i]) continue;
            unsigned char* w = out + offsets[i];
            std::memcpy(w, g->bytes(t), static_cast<std::size_t>(t.bytes));  // little-endian, as a safetensors file's
            restore(t, w, true);
        }
    };
    const auto cache = std::make_shared<MadeCache>(memory_budget - static_cast<double>(bytes));
    for (std::size_t i = 0; i < g->tensors().size(); ++i) {
        const GgufFile::TensorInfo& t = g->tensors()[i];
        if (kept[i] || skipped(t)) continue;
        const auto make = [g, i, restore](float* out) {
            const GgufFile::TensorInfo& u = g->tensors()[i];
            dequantize_on_every_core(*g, u, out);
            restore(u, reinterpret_cast<unsigned char*>(out), false);
        };
        entries.at(hf_name(t.name, f)).made =
            std::make_shared<const MadeFloats>(static_cast<std::size_t>(t.count), static_cast<std::size_t>(t.ne[0]), make, row_maker(g, i, f, heads, kv_heads), cache);
    }
    auto weights = std::make_shared<const SafeTensors>(path, std::move(entries), bytes, fill);
    const OpenWeights open = [&](std::string& d) {
        d = described;
        return Files{weights};
    };
    Model m;
    try {
        m = f.read_weights ? f.read_weights(cfg, open, memory_budget) : load_spec(cfg, f, open);
    } catch (const InputError& e) {  // the loader names config.json's fields and the Hugging Face names: this file's own instead
        if (e.file() != path) throw;
        throw InputError(path, place_in_file(e.path(), sources, f), message_in_file(e.message(), f));
    }
    auto loaded = std::const_pointer_cast<LoadedModel>(m);
    // what llama.cpp does with the same weights: quantized ones times activations quantized to 8 bits; 16-bit ones times activations
    // rounded to 16 bits (ggml's vec_dot_type); float32 ones in float32, as here
    bool quantized = false, sixteen = false;
    for (const auto& [type, n] : types) {
        (void)n;
        if (type == "F16" || type == "BF16") sixteen = true;
        else if (type != "F32") quantized = true;
    }
    loaded->info.dtype = "float32 from the file's " + kinds +
                         (quantized ? " (dequantized as ggml does, each tensor when first used; llama.cpp itself multiplies quantized weights with quantized activations: its logits differ)"
                          : sixteen ? " (widened exactly; llama.cpp itself rounds the activations to 16 bits for its F16 and BF16 products: its logits differ "
                                      "in the last digits)"
                                    : " (llama.cpp multiplies these in float32 too: its logits differ only in the order of its sums)");
    if (g->find("tokenizer.ggml.eos_token_id")) {
        const std::uint64_t eos = g->whole("tokenizer.ggml.eos_token_id");
        if (eos < loaded->info.vocab) loaded->info.end_ids = {static_cast<std::size_t>(eos)};
    }
    return m;
}

}  // namespace attnwalk::model_detail

namespace attnwalk {

std::shared_ptr<const Tokenizer> load_gguf_tokenizer(const std::string& path, double memory_budget, TokenizerUse use) {
    std::vector<std::string> vocabularies;
    std::vector<GgufPreTokenizer> pres;
    for (const FamilySpec* f : families()) {  // each name once, in the families' order
        const std::string& v = f->gguf.vocabulary;
        if (!v.empty() && std::find(vocabularies.begin(), vocabularies.end(), v) == vocabularies.end()) vocabularies.push_back(v);
        for (const GgufPreTokenizer& p : f->gguf.pre)
            if (std::none_of(pres.begin(), pres.end(), [&](const GgufPreTokenizer& q) { return q.name == p.name; })) pres.push_back(p);
    }
    return read_gguf_tokenizer(path, vocabularies, pres, memory_budget, use);
}

}  // namespace attnwalk
