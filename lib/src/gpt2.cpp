#include "attnwalk/gpt2.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>

#include <xtensor/xview.hpp>

#include "attnwalk/attention.hpp"
#include "attnwalk/blas.hpp"
#include "attnwalk/bpe.hpp"
#include "attnwalk/errors.hpp"
#include "attnwalk/fast/blocked_attention.hpp"
#include "attnwalk/recorder.hpp"
#include "attnwalk/safetensors.hpp"
#include "walk_parts.hpp"

namespace attnwalk {

using namespace walk_parts;

struct LayerNorm {
    Vec scale, shift;
};

// A matrix read straight from the mapped file when it can be (F32), else copied: rows ×
// cols, stored as given or as its transpose ([out, in], nn.Linear's layout).
struct Matrix {
    Mat owned;
    const float* data = nullptr;
    std::size_t rows = 0, cols = 0;
    bool transposed = false;
    const float* row(std::size_t r) const { return data + r * cols; }  // (not transposed)
};

// One layer of an MLP: x·W + b, W in×out.
struct Dense {
    Matrix w;
    Vec b;
};

struct Gpt2Block {
    LayerNorm ln_1, ln_2;
    AttentionWeights attn;
    Dense fc, proj;  // C×4C, 4C×C
};

struct Gpt2Model {
    Gpt2Config config;
    std::string file;
    std::shared_ptr<const SafeTensors> map;  // keeps the directly read matrices valid
    Matrix wte;  // V×C
    Mat wpe;     // context×C
    std::vector<Gpt2Block> blocks;
    LayerNorm ln_f;
};

const Gpt2Config& config_of(const Gpt2Model& model) { return model.config; }

namespace {

using ull = unsigned long long;


// Reads the tensors of one checkpoint, with the names and checks in one place.
class Reader {
public:
    Reader(const SafeTensors& st, std::string prefix) : st_(st), prefix_(std::move(prefix)) {}

    void check(const std::string& name, const std::vector<std::size_t>& shape) const {
        const SafeTensors::Entry* e = st_.find(prefix_ + name);
        if (!e) throw InputError(st_.file(), "$", "missing tensor \"" + prefix_ + name + "\"");
        if (e->shape != shape)
            throw InputError(st_.file(), "$[\"" + prefix_ + name + "\"]",
                             "expected shape " + json_input_shape(shape) + ", got " + json_input_shape(e->shape));
    }
    Vec vec(const std::string& name, std::size_t n) const {
        check(name, {n});
        Vec v = Vec::from_shape({n});
        st_.read_into(prefix_ + name, v.data());
        return v;
    }
    Mat mat(const std::string& name, std::size_t rows, std::size_t cols) const {
        check(name, {rows, cols});
        Mat m = Mat::from_shape({rows, cols});
        st_.read_into(prefix_ + name, m.data());
        return m;
    }
    // rows×cols (or its transpose, cols×rows, when `transposed`), mapped when it can be.
    Matrix matrix(const std::string& name, std::size_t rows, std::size_t cols, bool transposed) const {
        Matrix m;
        m.rows = transposed ? cols : rows;
        m.cols = transposed ? rows : cols;
        m.transposed = transposed;
        check(name, {m.rows, m.cols});
        m.data = st_.direct(prefix_ + name);
        if (!m.data) {
            m.owned = mat(name, m.rows, m.cols);
            m.data = m.owned.data();
        }
        return m;
    }
    // A weight of in×out in x·W layout, from either layout.
    Mat weight(const std::string& name, std::size_t in, std::size_t out, bool linear) const {
        if (!linear) return mat(name, in, out);
        return xt::transpose(mat(name, out, in));
    }
    static std::string json_input_shape(const std::vector<std::size_t>& s) {
        std::string out = "[";
        for (std::size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
        return out + "]";
    }

private:
    const SafeTensors& st_;
    std::string prefix_;
};

LayerNorm read_ln(const Reader& r, const std::string& name, std::size_t C) {
    return {r.vec(name + ".weight", C), r.vec(name + ".bias", C)};
}

// x·W + b for a Dense layer, W read where it lies (x is (1,T,in)).
Cube dense(const Cube& x, const Dense& d) {
    const std::size_t rows = x.shape(0) * x.shape(1), in = x.shape(2), out = d.w.transposed ? d.w.rows : d.w.cols;
    Cube y = Cube::from_shape({x.shape(0), x.shape(1), out});
    sgemm(false, d.w.transposed, rows, out, in, 1.0f, x.data(), in, d.w.data, d.w.cols, 0.0f, y.data(), out);
    for (std::size_t r = 0; r < rows; ++r)
        for (std::size_t c = 0; c < out; ++c) y.data()[r * out + c] += d.b(c);
    return y;
}

// y = (x − mean) / sqrt(var + 1e-5) · scale + shift, over the last axis (biased variance).
Cube layer_norm(const Cube& x, const LayerNorm& ln) {
    Cube y = Cube::from_shape(x.shape());
    const std::size_t C = x.shape(2), rows = x.size() / C;
    for (std::size_t r = 0; r < rows; ++r) {
        const float* in = x.data() + r * C;
        float* out = y.data() + r * C;
        float mean = 0.0f;
        for (std::size_t c = 0; c < C; ++c) mean += in[c];
        mean /= static_cast<float>(C);
        float var = 0.0f;
        for (std::size_t c = 0; c < C; ++c) var += (in[c] - mean) * (in[c] - mean);
        var /= static_cast<float>(C);
        const float inv = 1.0f / std::sqrt(var + 1e-5f);
        for (std::size_t c = 0; c < C; ++c) out[c] = (in[c] - mean) * inv * ln.scale(c) + ln.shift(c);
    }
    return y;
}

// GELU, the tanh approximation GPT-2 uses: 0.5·x·(1 + tanh(√(2/π)·(x + 0.044715·x³))).
Cube gelu(Cube x) {
    const float k = std::sqrt(2.0f / 3.14159265358979323846f);
    for (float& v : x) v = 0.5f * v * (1.0f + std::tanh(k * (v + 0.044715f * v * v * v)));
    return x;
}

Summary summary_of(const Cube& t) {
    Summary s;
    for (float v : t) {
        if (std::isfinite(v)) s.add(v);
        else ++s.non_finite;
    }
    return s;
}

}  // namespace

Model load_gpt2(const std::string& path, std::optional<std::size_t> heads) {
    const auto map = std::make_shared<const SafeTensors>(path);
    const SafeTensors& st = *map;
    const bool nano = st.find("transformer.wte.weight") != nullptr;
    const std::string prefix = nano ? "transformer." : "";
    if (!st.find(prefix + "wte.weight"))
        throw InputError(path, "$", "not a GPT-2 checkpoint: no \"wte.weight\" (Hugging Face names) or \"transformer.wte.weight\" (nanoGPT)");
    auto m = std::make_shared<Gpt2Model>();
    m->file = path;
    Gpt2Config& c = m->config;
    c.naming = nano ? "nanogpt" : "huggingface";
    const SafeTensors::Entry& wte = *st.find(prefix + "wte.weight");
    if (wte.shape.size() != 2) throw InputError(path, "$[\"" + prefix + "wte.weight\"]", "expected a [vocab, C] matrix");
    c.vocab = wte.shape[0];
    c.width = wte.shape[1];
    c.dtype = wte.dtype;
    const SafeTensors::Entry* wpe = st.find(prefix + "wpe.weight");
    if (!wpe || wpe->shape.size() != 2) throw InputError(path, "$", "missing \"" + prefix + "wpe.weight\", the position embeddings [context, C]");
    c.context = wpe->shape[0];
    while (st.find(prefix + "h." + std::to_string(c.layers) + ".ln_1.weight")) ++c.layers;
    if (c.layers == 0) throw InputError(path, "$", "no layers: expected \"" + prefix + "h.0.ln_1.weight\" and so on");
    const std::size_t C = c.width;
    c.heads_inferred = !heads;
    c.heads = heads.value_or(C % 64 == 0 ? C / 64 : 0);
    if (c.heads == 0 || C % c.heads != 0)
        throw UsageError("C = " + std::to_string(C) + " cannot be split into " +
                         (c.heads ? std::to_string(c.heads) + " heads" : "heads of 64 (GPT-2's head size): give the number of heads"));
    const SafeTensors::Entry* attn = st.find(prefix + "h.0.attn.c_attn.weight");
    const bool linear = attn && attn->shape.size() == 2 && attn->shape[0] == 3 * C && attn->shape[1] == C && C != 3 * C;
    c.layout = linear ? "nn.Linear [out, in]" : "x·W (Conv1D)";

    const Reader r(st, prefix);
    m->map = map;
    m->wte = r.matrix("wte.weight", c.vocab, C, false);
    m->wpe = r.mat("wpe.weight", c.context, C);
    for (std::size_t l = 0; l < c.layers; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        Gpt2Block b;
        b.ln_1 = read_ln(r, h + "ln_1", C);
        b.ln_2 = read_ln(r, h + "ln_2", C);
        const Matrix qkv = r.matrix(h + "attn.c_attn.weight", C, 3 * C, linear);
        const Vec qkv_b = r.vec(h + "attn.c_attn.bias", 3 * C);
        Linear* parts[] = {&b.attn.query, &b.attn.key, &b.attn.value};
        for (std::size_t p = 0; p < 3; ++p) {  // columns Q | K | V of the x·W matrix (rows of nn.Linear's)
            parts[p]->b = xt::view(qkv_b, xt::range(p * C, (p + 1) * C));
            if (qkv.owned.size() == 0) {  // read where it lies: no copy
                parts[p]->ext = linear ? qkv.data + p * C * C : qkv.data + p * C;
                parts[p]->ext_in = parts[p]->ext_out = C;
                parts[p]->ext_ld = linear ? C : 3 * C;
                parts[p]->ext_transposed = linear;
                continue;
            }
            parts[p]->w = Mat::from_shape({C, C});
            for (std::size_t i = 0; i < C; ++i) {
                if (!linear) {
                    std::copy(qkv.data + i * 3 * C + p * C, qkv.data + i * 3 * C + (p + 1) * C, &parts[p]->w(i, 0));
                    continue;
                }
                for (std::size_t j = 0; j < C; ++j) parts[p]->w(i, j) = qkv.data[(p * C + j) * C + i];
            }
        }
        const Matrix proj = r.matrix(h + "attn.c_proj.weight", C, C, linear);
        b.attn.out_proj = Linear{proj.owned.size() ? (linear ? Mat(xt::transpose(proj.owned)) : proj.owned) : Mat{}, r.vec(h + "attn.c_proj.bias", C)};
        if (!proj.owned.size()) {
            b.attn.out_proj->ext = proj.data;
            b.attn.out_proj->ext_in = b.attn.out_proj->ext_out = b.attn.out_proj->ext_ld = C;
            b.attn.out_proj->ext_transposed = linear;
        }
        b.attn.heads = c.heads;
        b.attn.combined = true;
        b.fc = Dense{r.matrix(h + "mlp.c_fc.weight", C, 4 * C, linear), r.vec(h + "mlp.c_fc.bias", 4 * C)};
        b.proj = Dense{r.matrix(h + "mlp.c_proj.weight", 4 * C, C, linear), r.vec(h + "mlp.c_proj.bias", C)};
        m->blocks.push_back(std::move(b));
    }
    m->ln_f = read_ln(r, "ln_f", C);
    return m;
}

namespace {

// A text for labels: spaces as ␣, and the bytes of an incomplete UTF-8 character (a
// token may hold part of one) as <E6>.
std::string shown(const std::string& text) {
    std::string out;
    const auto b = [&](std::size_t k) { return static_cast<unsigned char>(text[k]); };
    for (std::size_t i = 0; i < text.size();) {
        const unsigned char c = b(i);
        const std::size_t n = c < 0x80 ? 1 : (c >> 5) == 6 ? 2 : (c >> 4) == 14 ? 3 : (c >> 3) == 30 ? 4 : 0;
        bool ok = n > 0 && i + n <= text.size();
        for (std::size_t k = 1; ok && k < n; ++k) ok = (b(i + k) & 0xC0) == 0x80;
        if (!ok) {
            static const char* hex = "0123456789ABCDEF";
            out += std::string("<") + hex[c >> 4] + hex[c & 15] + ">";
            ++i;
        } else if (c == ' ') {
            out += "␣";
            ++i;
        } else {
            out += text.substr(i, n);
            i += n;
        }
    }
    return out;
}

}  // namespace

std::vector<std::string> token_labels(const std::vector<std::size_t>& ids, const Bpe* bpe) {
    std::vector<std::string> out;
    for (std::size_t id : ids) out.push_back(!bpe || id >= bpe->vocab_size() ? "#" + std::to_string(id) : shown(bpe->decode(id)));
    return out;
}

Trace walk_tokenize(const Bpe& bpe, const std::string& text) {
    const std::vector<std::size_t> ids = bpe.encode(text);
    Trace trace;
    trace.command = "tokenize";
    trace.tokens = token_labels(ids, &bpe);
    trace.set_param("text", text);
    trace.set_param("num_tokens", static_cast<ull>(ids.size()));
    Recorder rec(trace);
    Mat idv = Mat::from_shape({1, ids.size()});
    for (std::size_t t = 0; t < ids.size(); ++t) idv(0, t) = static_cast<float>(ids[t]);
    std::string pieces;
    for (const std::string& p : Bpe::pretokenize(text)) pieces += (pieces.empty() ? "" : " | ") + shown(p);
    rec.add("token_ids", "Token ids", "BPE(pretokenize(text))", idv, {Axis::token}).note =
        "Pre-tokenised as: " + pieces + ". Each piece's UTF-8 bytes are merged by rank (vocab.bpe) into tokens (encoder.json); "
        "␣ is a space, which GPT-2's tokens carry in front.";
    return check_finite(std::move(trace));
}

const std::vector<std::string>& head_stat_names() {
    static const std::vector<std::string> names = {"entropy", "max_weight", "first_token", "previous_token", "diagonal"};
    return names;
}

namespace {

// Per head, averaged over the query rows: the entropy of the row (nats), its largest
// weight, its weight on token 0 (the attention sink), on the previous token (rows 1…),
// on itself.
std::vector<double> head_stats(const float* a, std::size_t T) {
    double entropy = 0, max = 0, first = 0, previous = 0, diagonal = 0;
    for (std::size_t i = 0; i < T; ++i) {
        const float* row = a + i * T;
        double e = 0, m = 0;
        for (std::size_t j = 0; j < T; ++j) {
            if (row[j] > 0) e -= static_cast<double>(row[j]) * std::log(static_cast<double>(row[j]));
            m = std::max(m, static_cast<double>(row[j]));
        }
        entropy += e;
        max += m;
        first += row[0];
        diagonal += row[i];
        if (i > 0) previous += row[i - 1];
    }
    const double n = static_cast<double>(T);
    return {entropy / n, max / n, first / n, T > 1 ? previous / (n - 1) : 0.0, diagonal / n};
}

}  // namespace

namespace {

std::size_t argmax(const Mat& logits) {
    return static_cast<std::size_t>(std::max_element(logits.begin(), logits.end()) - logits.begin());
}

// The logits of the last position of `ids`, the whole sequence run at once (no cache).
Mat full_logits(const Gpt2Model& m, const std::vector<std::size_t>& ids) {
    const std::size_t T = ids.size(), C = m.config.width, V = m.config.vocab;
    Cube x = Cube::from_shape({1, T, C});
    for (std::size_t t = 0; t < T; ++t) for (std::size_t k = 0; k < C; ++k) x(0, t, k) = m.wte.row(ids[t])[k] + m.wpe(t, k);
    ForwardSpec causal;
    causal.causal = true;
    for (const Gpt2Block& b : m.blocks) {
        x = x + attention_forward(layer_norm(x, b.ln_1), &b.attn, causal).output;
        x = x + dense(gelu(dense(layer_norm(x, b.ln_2), b.fc)), b.proj);
    }
    const Cube xf = layer_norm(x, m.ln_f);
    Mat logits = Mat::from_shape({1, V});
    sgemm(false, false, V, 1, C, 1.0f, m.wte.data, C, &xf(0, T - 1, 0), 1, 0.0f, logits.data(), 1);  // wte·x: V rows
    return logits;
}

// Greedy decoding with a KV cache: each new token runs through every layer alone, its key
// and value appended to that layer's cache; the chosen layer's new row of attention and
// cache are recorded. At the end the whole sequence runs again without a cache.
void generate(Recorder& rec, const Gpt2Model& m, std::vector<std::size_t> ids, std::vector<std::pair<Hyper, Hyper>> cache,
              Mat logits, const Gpt2Spec& spec) {
    Trace& trace = rec.trace();
    const Gpt2Config& c = m.config;
    const std::size_t C = c.width, V = c.vocab, prompt = ids.size();
    ForwardSpec causal;
    causal.causal = true;
    std::vector<std::size_t> generated;
    for (std::size_t g = 0; g < spec.generate; ++g) {
        const std::size_t next = argmax(logits), pos = ids.size();
        if (pos >= c.context) break;  // the context is full
        ids.push_back(next);
        generated.push_back(next);
        trace.tokens.push_back(token_labels({next}, spec.tokenizer).front());
        Cube x = Cube::from_shape({1, 1, C});
        for (std::size_t k = 0; k < C; ++k) x(0, 0, k) = m.wte.row(next)[k] + m.wpe(pos, k);
        const std::string N = "step" + std::to_string(pos) + ".";
        for (std::size_t l = 0; l < c.layers; ++l) {
            const Gpt2Block& b = m.blocks[l];
            ForwardSpec at;
            at.position0 = pos;
            Forward s = project_heads(layer_norm(x, b.ln_1), &b.attn, at);
            cache[l].first = xt::concatenate(xt::xtuple(cache[l].first, s.kh), 2);
            cache[l].second = xt::concatenate(xt::xtuple(cache[l].second, s.vh), 2);
            s.kh = cache[l].first;
            s.vh = cache[l].second;
            attend(s, &b.attn, causal);
            if (l == spec.layer) {
                rec.add(N + "keys_cache", "Token " + std::to_string(pos) + " (\"" + trace.tokens[pos] + "\"): layer " + std::to_string(l) +
                                              "'s key cache, one row longer",
                        "K_cache = concat(K_cache, k_t)", cache[l].first, head_tokens_features);
                const Cube rows = xt::view(s.weights, xt::all(), xt::all(), 0, xt::all());
                if (spec.head)
                    rec.add_with_row_sums(N + "weights", "Its new row of attention in layer " + std::to_string(l) + ", head " + std::to_string(*spec.head),
                                          "α_t = softmax(q_t·K_cacheᵀ / √d_h)", Mat(xt::view(rows, xt::all(), *spec.head)), {Axis::token});
                else
                    rec.add_with_row_sums(N + "weights", "Its new row of attention in layer " + std::to_string(l), "α_t = softmax(q_t·K_cacheᵀ / √d_h)",
                                          rows, {Axis::head, Axis::token});
            }
            x = x + s.output;
            x = x + dense(gelu(dense(layer_norm(x, b.ln_2), b.fc)), b.proj);
        }
        const Cube xf = layer_norm(x, m.ln_f);
        sgemm(false, false, V, 1, C, 1.0f, m.wte.data, C, &xf(0, 0, 0), 1, 0.0f, logits.data(), 1);
    }
    Mat gen = Mat::from_shape({1, generated.size()});
    for (std::size_t i = 0; i < generated.size(); ++i) gen(0, i) = static_cast<float>(generated[i]);
    Step& gs = rec.add("generated_ids", "The generated tokens (greedy: the most likely each time)", "argmax(logits)", gen, {Axis::token});
    gs.first_key = prompt;
    if (generated.size() < spec.generate) gs.note = "The context of " + std::to_string(c.context) + " tokens is full.";
    trace.set_param("generated", static_cast<unsigned long long>(generated.size()));
    double bytes = 0;
    for (const auto& kv : cache) bytes += 2.0 * static_cast<double>(kv.first.size()) * 4.0;
    const Mat full = full_logits(m, ids);
    float diff = 0.0f;
    for (std::size_t v = 0; v < V; ++v) diff = std::max(diff, std::fabs(full(0, v) - logits(0, v)));
    rec.add_plain("max_difference", "The last logits with the cache against the whole sequence recomputed", "max |logits_cached − logits_full|",
                  Tensor{{}, {diff}}, {})
        .note = "The cache holds " + std::to_string(ids.size()) + " tokens × " + std::to_string(c.layers) + " layers × 2 × " +
                std::to_string(C) + " floats = " + format_number(bytes) + " bytes; " +
                (diff == 0.0f ? "equal bit for bit." : "equal up to float32 rounding (the products are summed in another order).");
}

}  // namespace

Trace walk_gpt2(const Model& model, const std::vector<std::size_t>& ids, const std::vector<std::string>& tokens,
                const Gpt2Spec& spec, const Recording& recording) {
    const Gpt2Model& m = *model;
    const Gpt2Config& c = m.config;
    const std::size_t T = ids.size(), C = c.width, V = c.vocab;
    if (T == 0) throw UsageError("no tokens to run");
    if (T > c.context)
        throw UsageError(std::to_string(T) + " tokens: the model's context is " + std::to_string(c.context));
    for (std::size_t id : ids)
        if (id >= V) throw UsageError("token id " + std::to_string(id) + " is out of range: the vocabulary has " + std::to_string(V));
    if (spec.generate && T + 1 > c.context) throw UsageError("no room to generate: the prompt fills the model's context of " + std::to_string(c.context));
    if (spec.head && *spec.head >= c.heads)
        throw UsageError("head " + std::to_string(*spec.head) + " is out of range: the model has " + std::to_string(c.heads) + " heads");
    if (spec.layer >= c.layers)
        throw UsageError("layer " + std::to_string(spec.layer) + " is out of range: the model has " + std::to_string(c.layers) + " layers");
    if (!(spec.temperature > 0.0 && std::isfinite(spec.temperature))) throw UsageError("the temperature must be a positive number");
    if (spec.top_p && !(*spec.top_p > 0.0 && *spec.top_p <= 1.0)) throw UsageError("top-p must be in (0, 1]");
    const auto& stat_names = head_stat_names();
    const auto sort_at = std::find(stat_names.begin(), stat_names.end(), spec.sort);
    if (!spec.sort.empty() && sort_at == stat_names.end())
        throw UsageError("heads are ranked by entropy, max_weight, first_token, previous_token or diagonal, not \"" + spec.sort + "\"");

    Trace trace;
    trace.command = "gpt2";
    trace.tokens = tokens;
    trace.set_param("model", m.file);
    trace.set_param("naming", c.naming);
    trace.set_param("layout", c.layout);
    trace.set_param("dtype", c.dtype);
    trace.set_param("vocab", static_cast<ull>(V));
    trace.set_param("context", static_cast<ull>(c.context));
    trace.set_param("width", static_cast<ull>(C));
    trace.set_param("layers", static_cast<ull>(c.layers));
    trace.set_param("heads", static_cast<ull>(c.heads));
    trace.set_param("num_tokens", static_cast<ull>(T));
    trace.set_param("layer", static_cast<ull>(spec.layer));
    if (spec.head) trace.set_param("head", static_cast<ull>(*spec.head));
    trace.set_param("causal", true);
    trace.set_param("temperature", spec.temperature);
    Recorder rec(trace);

    Cube tok = Cube::from_shape({1, T, C}), pos = Cube::from_shape({1, T, C});
    Mat idv = Mat::from_shape({1, T});
    for (std::size_t t = 0; t < T; ++t) {
        idv(0, t) = static_cast<float>(ids[t]);
        std::copy(m.wte.row(ids[t]), m.wte.row(ids[t]) + C, &tok(0, t, 0));
        xt::view(pos, 0, t, xt::all()) = xt::view(m.wpe, t, xt::all());
    }
    rec.add("token_ids", "Token ids", "ids", idv, {Axis::token});
    rec.add("token_embeddings", "Token embeddings: rows of wte", "wte[ids]", tok, tokens_features);
    rec.add("position_embeddings", "Position embeddings: rows 0…T−1 of wpe", "wpe[0:T]", pos, tokens_features);
    Cube x = tok + pos;
    rec.add("embeddings", "The input of layer 0", "x = wte[ids] + wpe[0:T]", x, tokens_features);

    ForwardSpec causal;
    causal.causal = true;
    const std::size_t H = c.heads;
    std::vector<std::pair<Hyper, Hyper>> cache(c.layers);  // every layer's keys and values, for generating
    xt::xtensor<float, 5> grid;  // (1, L, H, T, T): every layer's weights, for the view
    if (spec.view) grid = xt::xtensor<float, 5>::from_shape({1, c.layers, H, T, T});
    for (std::size_t l = 0; l < c.layers; ++l) {
        const Gpt2Block& b = m.blocks[l];
        const bool full = l == spec.layer || spec.all_layers;
        const std::string N = "layer" + std::to_string(l) + ".";
        const auto keep = [&](const std::string& id, const std::string& title, const std::string& formula, const Cube& t) {
            if (full) rec.add(N + id, title, formula, t, tokens_features);
            else rec.add_summary(N + id, title, formula, {T, t.shape(2)}, 1, tokens_features, summary_of(t), false);
        };
        const Cube a = layer_norm(x, b.ln_1);
        keep("ln_1", "Layer " + std::to_string(l) + ": LayerNorm before attention", "ln_1(x)", a);
        if (l != spec.layer && !spec.view) {  // a summary: the blocked path, no T×T tensor at all
            const fast::BlockedResult r = fast::blocked_attention(a, b.attn, true);
            Cube out = Cube::from_shape({1, T, C});
            std::copy(r.output.begin(), r.output.end(), out.begin());
            if (spec.generate) cache[l] = {split_heads(project(a, b.attn.key), H), split_heads(project(a, b.attn.value), H)};
            keep("attention", "Layer " + std::to_string(l) + ": the attention's output", "attn(ln_1(x))", out);
            x = x + out;
        } else {
        const Forward f = attention_forward(a, &b.attn, causal);
        if (l == spec.layer) {  // the attention in full, with mha's ids
            const std::string Hs = std::to_string(c.heads), dh = std::to_string(C / c.heads);
            rec.add("queries", "Layer " + std::to_string(l) + ": queries (columns 0…C−1 of c_attn)", "Q = ln_1(x)·W_q + b_q", f.q, tokens_features);
            rec.add("keys", "Keys (columns C…2C−1 of c_attn)", "K = ln_1(x)·W_k + b_k", f.k, tokens_features);
            rec.add("values", "Values (columns 2C…3C−1 of c_attn)", "V = ln_1(x)·W_v + b_v", f.v, tokens_features);
            if (spec.head) {  // one head: its T×T matrices
                const std::size_t h = *spec.head;
                const std::string of = " of head " + std::to_string(h);
                rec.add("scores", "Scores" + of, "ω_" + std::to_string(h) + " = Q_h·K_hᵀ", Cube(xt::view(f.scores, xt::all(), h)), tokens_tokens);
                rec.add_with_row_sums("weights", "Causal attention weights" + of + " (one of " + Hs + " heads of " + dh + ")",
                                      "A_h = softmax(masked ω_h / √" + dh + ")", Cube(xt::view(f.weights, xt::all(), h)), tokens_tokens);
                rec.add("head_outputs", "Its context vectors", "Z_h = A_h·V_h", Cube(xt::view(f.head_outputs, xt::all(), h)),
                        tokens_features);
            } else {
                rec.add("scores", "Scores of every head", "ω_h = Q_h·K_hᵀ", f.scores, head_tokens_tokens);
                rec.add_with_row_sums("weights", "Causal attention weights of every head (" + Hs + " heads of " + dh + ")",
                                      "A_h = softmax(masked ω_h / √" + dh + ")", f.weights, head_tokens_tokens);
                rec.add("head_outputs", "Each head's context vectors", "Z_h = A_h·V_h", f.head_outputs, head_tokens_features);
            }
            rec.add("context", "Heads concatenated", "Z", f.context, tokens_features);
            rec.add("output", "The attention's output: c_proj", "Z·W_o + b_o", f.output, tokens_features);
        }
        if (spec.view) xt::view(grid, 0, l) = xt::view(f.weights, 0);
        if (spec.generate) cache[l] = {f.kh, f.vh};
        keep("attention", "Layer " + std::to_string(l) + ": the attention's output", "attn(ln_1(x))", f.output);
        x = x + f.output;
        }
        keep("residual_1", "Residual: added to the layer's input", "x + attn(ln_1(x))", x);
        const Cube n = layer_norm(x, b.ln_2);
        keep("ln_2", "LayerNorm before the MLP", "ln_2(x)", n);
        const Cube hdn = gelu(dense(n, b.fc));
        keep("mlp_hidden", "The MLP's hidden layer (4C), after GELU", "GELU(ln_2(x)·W_fc + b_fc)", hdn);
        const Cube mlp = dense(hdn, b.proj);
        keep("mlp", "The MLP's output", "hidden·W_proj + b_proj", mlp);
        x = x + mlp;
        keep("residual_2", "Layer " + std::to_string(l) + "'s output", "x + mlp(ln_2(x))", x);
    }
    if (spec.view) {
        rec.add("attention_grid", "Every head of every layer", "A[layer, head]", grid, {Axis::layer, Axis::head, Axis::token, Axis::token});
        std::vector<Cube> stats(stat_names.size(), Cube::from_shape({1, c.layers, H}));
        for (std::size_t l = 0; l < c.layers; ++l)
            for (std::size_t h = 0; h < H; ++h) {
                const auto v = head_stats(&grid(0, l, h, 0, 0), T);
                for (std::size_t k = 0; k < v.size(); ++k) stats[k](0, l, h) = static_cast<float>(v[k]);
            }
        const char* titles[] = {"Entropy of each head's rows (nats; low = focused)", "Largest weight of each row, averaged",
                                "Weight on the first token (the attention sink)", "Weight on the previous token",
                                "Weight on the token itself"};
        const char* formulas[] = {"mean_i −Σ_j a_ij·ln a_ij", "mean_i max_j a_ij", "mean_i a_i0", "mean_(i≥1) a_i,i−1",
                                  "mean_i a_ii"};
        for (std::size_t k = 0; k < stat_names.size(); ++k)
            rec.add("head_" + stat_names[k], titles[k], formulas[k], stats[k], {Axis::layer, Axis::head});
        if (!spec.sort.empty()) {
            const std::size_t key = static_cast<std::size_t>(sort_at - stat_names.begin());
            std::vector<std::pair<std::size_t, std::size_t>> order;
            for (std::size_t l = 0; l < c.layers; ++l)
                for (std::size_t h = 0; h < H; ++h) order.emplace_back(l, h);
            std::stable_sort(order.begin(), order.end(), [&](const auto& a, const auto& b) {
                return stats[key](0, a.first, a.second) > stats[key](0, b.first, b.second);
            });
            Mat table = Mat::from_shape({order.size(), 2 + stat_names.size()});
            for (std::size_t r = 0; r < order.size(); ++r) {
                table(r, 0) = static_cast<float>(order[r].first);
                table(r, 1) = static_cast<float>(order[r].second);
                for (std::size_t k = 0; k < stat_names.size(); ++k) table(r, 2 + k) = stats[k](0, order[r].first, order[r].second);
            }
            Step& st = rec.add_plain("heads_sorted", "The heads ranked by " + spec.sort + ", highest first", "sort by " + spec.sort,
                                     to_trace(table), {Axis::feature, Axis::feature});
            st.labels = {"layer", "head"};
            st.labels.insert(st.labels.end(), stat_names.begin(), stat_names.end());
            trace.set_param("sort", spec.sort);
        }
    }
    const Cube xf = layer_norm(x, m.ln_f);
    rec.add("ln_f", "The final LayerNorm", "ln_f(x)", xf, tokens_features);
    // the logits of the last position: its vector times every token embedding (tied)
    Mat logits = Mat::from_shape({1, V});
    sgemm(false, false, V, 1, C, 1.0f, m.wte.data, C, &xf(0, T - 1, 0), 1, 0.0f, logits.data(), 1);  // wte·x: V rows
    Summary ls = summary_of(Cube(xt::view(logits, xt::newaxis(), xt::all(), xt::all())));
    rec.add_summary("logits", "The logits of the next token (last position × wteᵀ)", "logits = ln_f(x)_T·wteᵀ", {V}, 1,
                    {Axis::feature}, ls, false);
    // softmax(logits / temperature), then the k most likely
    std::vector<double> p(V);
    const double mx = *std::max_element(logits.begin(), logits.end());
    double sum = 0.0;
    for (std::size_t v = 0; v < V; ++v) sum += (p[v] = std::exp((logits(0, v) - mx) / spec.temperature));
    for (double& v : p) v /= sum;
    std::vector<std::size_t> order(V);
    std::iota(order.begin(), order.end(), 0);
    const std::size_t k = std::min(spec.top_k, V);
    std::partial_sort(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k), order.end(),
                      [&](std::size_t a, std::size_t b2) { return p[a] > p[b2] || (p[a] == p[b2] && a < b2); });
    Mat top_ids = Mat::from_shape({1, k}), top_logits = Mat::from_shape({1, k}), top_p = Mat::from_shape({1, k});
    for (std::size_t i = 0; i < k; ++i) {
        top_ids(0, i) = static_cast<float>(order[i]);
        top_logits(0, i) = logits(0, order[i]);
        top_p(0, i) = static_cast<float>(p[order[i]]);
    }
    // the candidates' text names the columns
    const std::vector<std::string> names = token_labels(std::vector<std::size_t>(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(k)),
                                                        spec.tokenizer);
    rec.add("top_k_ids", "The " + std::to_string(k) + " most likely next tokens", "argsort(p)[:k]", top_ids, {Axis::feature}).labels = names;
    rec.add("top_k_logits", "Their logits", "logits[top_k_ids]", top_logits, {Axis::feature}).labels = names;
    Step& ps = rec.add("top_k_probs", "Their probabilities", "p = softmax(logits / " + format_number(spec.temperature) + ")", top_p,
                       {Axis::feature});
    ps.labels = names;
    if (spec.top_p) {
        double acc = 0.0;
        std::size_t n = 0;
        while (n < k && acc < *spec.top_p) acc += p[order[n++]];
        ps.note = "top-p " + format_number(*spec.top_p) + ": the first " + std::to_string(n) + " of these (probability " + format_number(acc) +
                  (acc < *spec.top_p ? ", more than top-k shows" : "") + ") are kept for sampling.";
    }
    if (spec.generate) generate(rec, m, ids, std::move(cache), logits, spec);
    return finish(std::move(trace), recording);
}

}  // namespace attnwalk
