// GPT-2: LayerNorm before each sublayer, a GELU MLP of 4C, learned position embeddings,
// biases everywhere (but nanoGPT's bias=False), the head tied to the token embeddings.
// Its checkpoints need their own reading: one fused c_attn, Conv1D's x·W layout (or
// nanoGPT's nn.Linear one and names), sizes read off the tensors, a bare file without
// config.json (the gpt2 command). A GGUF file (llama.cpp's converter's GPT2Model) is read
// through the same reader, its tensors under these names and in this layout again.
#include <algorithm>
#include <cmath>
#include <memory>
#include <vector>

#include <xtensor/xbuilder.hpp>
#include <xtensor/xview.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/safetensors.hpp"
#include "attnwalk/model/blocks/heads.hpp"
#include "attnwalk/model/blocks/mlp.hpp"
#include "attnwalk/model/decoder.hpp"
#include "../config.hpp"

namespace attnwalk {

namespace {

using model_detail::Reader;

Model read_gpt2(model_detail::ConfigFile& config, const FamilySpec::OpenFiles& open, double memory_budget);
Model gpt2_of(const std::shared_ptr<const SafeTensors>& map, std::optional<std::size_t> heads, float norm_eps);

// The layers: one more than the largest N of any "h.N." name, so that a missing layer is
// a missing tensor, never a shorter model.
std::size_t count_layers(const SafeTensors& st, const std::string& prefix) {
    std::size_t layers = 0;
    for (const auto& [name, entry] : st.entries()) {
        if (name.compare(0, prefix.size() + 2, prefix + "h.") != 0) continue;
        const std::size_t dot = name.find('.', prefix.size() + 2);
        const std::string n = name.substr(prefix.size() + 2, dot == std::string::npos ? std::string::npos : dot - prefix.size() - 2);
        if (n.empty() || n.size() > 6 || n.find_first_not_of("0123456789") != std::string::npos) continue;
        layers = std::max(layers, static_cast<std::size_t>(std::stoul(n)) + 1);
    }
    return layers;
}

}  // namespace

const FamilySpec& gpt2_family() {
    static const FamilySpec spec = [] {
        FamilySpec f;
        f.model_type = "gpt2";
        f.gguf.vocabulary = "gpt2";  // llama.cpp's name for byte-level BPE, GPT-2's
        f.gguf.pre = {{"gpt-2", "", false, false}};
        f.models = "GPT-2";
        f.norm = NormKind::layer_norm;
        f.mlp = MlpKind::gelu_tanh;
        f.positions = PositionKind::learned;
        f.fields.tied_default = true;
        f.names.prefix = "";
        f.names.embed = "wte.weight";
        f.names.positions = "wpe.weight";
        f.names.layer = "h.{L}.";
        f.names.pre_attention_norm = "ln_1";
        f.names.pre_mlp_norm = "ln_2";
        f.heads.fused_qkv = "attn.c_attn";
        f.heads.query = f.heads.key = f.heads.value = "";
        f.heads.out = "attn.c_proj";
        f.heads.q_norm = f.heads.k_norm = "";
        f.dense.gate = "";
        f.dense.up = "mlp.c_fc";
        f.dense.down = "mlp.c_proj";
        f.dense.activation_fields = {"activation_function"};
        f.dense.activations = {"gelu_new"};
        f.fields.norm_eps = "layer_norm_epsilon";
        f.fields.norm_eps_default = 1e-5;
        f.names.final_norm = "ln_f";
        f.math_xw = true;
        f.norm_1_symbol = "ln_1";
        f.norm_2_symbol = "ln_2";
        f.read_weights = read_gpt2;
        // llama.cpp's GGUF (convert_hf_to_gguf.py's GPT2Model): wte → token_embd, wpe → position_embd,
        // c_attn → attn_qkv, c_proj → attn_output, c_fc → ffn_up, mlp.c_proj → ffn_down (these four
        // transposed to [out, in]), ln_1/ln_2/ln_f → attn_norm/ffn_norm/output_norm, and a copy of
        // wte as output.weight
        f.gguf.architecture = f.gguf.model_type = "gpt2";
        f.gguf.transposed = {"attn_qkv", "attn_output", "ffn_up", "ffn_down"};
        return f;
    }();
    return spec;
}

void check_weights_finite(const LoadedModel& model) {
    for (const auto& st : model.files)
        for (const auto& [name, entry] : st->entries()) {
            if (entry.dtype != "F32" && entry.dtype != "F16" && entry.dtype != "BF16") continue;
            const Tensor t = st->get(name);
            for (std::size_t i = 0; i < t.data.size(); ++i)
                if (!std::isfinite(t.data[i]))
                    throw InputError(st->file(), "$[\"" + name + "\"]",
                                     "holds " + std::string(std::isnan(t.data[i]) ? "NaN" : "inf") + " (element " + std::to_string(i) +
                                         "): a model's weights are finite numbers");
        }
}

Model load_gpt2(const std::string& path, std::optional<std::size_t> heads, double memory_budget) {
    return gpt2_of(std::make_shared<const SafeTensors>(path, memory_budget), heads, 1e-5f);
}

namespace {

Model gpt2_of(const std::shared_ptr<const SafeTensors>& map, std::optional<std::size_t> heads, float norm_eps) {
    const SafeTensors& st = *map;
    const std::string& path = st.file();
    const bool nano = st.find("transformer.wte.weight") != nullptr;
    const std::string prefix = nano ? "transformer." : "";
    if (!st.find(prefix + "wte.weight"))
        throw InputError(path, "$", "not a GPT-2 checkpoint: no \"wte.weight\" (Hugging Face names) or \"transformer.wte.weight\" (nanoGPT)");
    auto m = std::make_shared<LoadedModel>();
    m->files = {map};
    ModelInfo& info = m->info;
    info.file = path;
    info.naming = nano ? "nanogpt" : "huggingface";
    const SafeTensors::Entry& wte = *st.find(prefix + "wte.weight");
    if (wte.shape.size() != 2) throw InputError(path, "$[\"" + prefix + "wte.weight\"]", "expected a [vocab, C] matrix");
    info.vocab = wte.shape[0];
    info.width = wte.shape[1];
    info.dtype = wte.dtype;
    const SafeTensors::Entry* wpe = st.find(prefix + "wpe.weight");
    if (!wpe || wpe->shape.size() != 2) throw InputError(path, "$", "missing \"" + prefix + "wpe.weight\", the position embeddings [context, C]");
    info.context = wpe->shape[0];
    for (const auto& [name, entry] : st.entries())  // one naming scheme, not both (lm_head.weight goes with either)
        if (name.compare(0, 8, "lm_head.") != 0 && (name.compare(0, 12, "transformer.") == 0) != nano)
            throw InputError(path, "$[\"" + name + "\"]",
                             std::string("the file mixes two naming schemes: this name is ") + (nano ? "Hugging Face's" : "nanoGPT's") +
                                 " (no \"transformer.\" prefix), \"" + prefix + "wte.weight\" is " + (nano ? "nanoGPT's" : "Hugging Face's"));
    info.layers = count_layers(st, prefix);
    if (info.layers == 0) throw InputError(path, "$", "no layers: expected \"" + prefix + "h.0.ln_1.weight\" and so on");
    const std::size_t C = info.width;
    if (C == 0 || info.vocab == 0 || info.context == 0)
        throw InputError(path, "$[\"" + prefix + (info.context == 0 && C && info.vocab ? "wpe" : "wte") + ".weight\"]",
                         "the model has " + std::string(C == 0 ? "a width C of 0" : info.vocab == 0 ? "an empty vocabulary" : "a context of 0 tokens") +
                             ": nothing to compute");
    info.heads_inferred = !heads;
    info.heads = heads.value_or(C % 64 == 0 ? C / 64 : 0);
    if (info.heads == 0 || C % info.heads != 0)
        throw UsageError("C = " + std::to_string(C) + " cannot be split into " +
                         (info.heads ? std::to_string(info.heads) + " heads" : "heads of 64 (GPT-2's head size): give the number of heads"));
    const SafeTensors::Entry* attn = st.find(prefix + "h.0.attn.c_attn.weight");
    const bool linear = attn && attn->shape.size() == 2 && attn->shape[0] == 3 * C && attn->shape[1] == C && C != 3 * C;
    info.layout = linear ? "nn.Linear [out, in]" : "x·W (Conv1D)";

    DecoderConfig& c = m->weights.config;
    c.family = &gpt2_family();
    c.vocab = info.vocab;
    c.context = info.context;
    c.width = C;
    c.layers = info.layers;
    c.heads = info.heads;
    c.norm = NormKind::layer_norm;
    c.norm_eps = norm_eps;
    c.mlp = MlpKind::gelu_tanh;
    c.positions = PositionKind::learned;
    c.layer_specs.assign(info.layers, LayerSpec{});
    c.tied_head = st.find("lm_head.weight") == nullptr;  // a file's own head is used (an untied, fine-tuned one)

    Reader r({map}, prefix);
    info.biases = st.find(prefix + "h.0.ln_1.bias") != nullptr;  // all of them, or none (bias=False)
    if (!info.biases) r.without_biases();
    DecoderWeights& w = m->weights;
    w.embed = r.linear("wte.weight", C, info.vocab, true);  // [vocab, C]: the layout of a tied head
    w.positions = r.mat("wpe.weight", info.context, C);
    for (std::size_t l = 0; l < info.layers; ++l) {
        const std::string h = "h." + std::to_string(l) + ".";
        BlockWeights b;
        b.norm_1 = r.norm(h + "ln_1", C, NormKind::layer_norm);
        b.norm_2 = r.norm(h + "ln_2", C, NormKind::layer_norm);
        auto block = std::make_shared<HeadsBlock>();  // the heads kind's block, filled from GPT-2's fused names
        AttentionWeights& a = block->w;
        Linear qkv = r.linear(h + "attn.c_attn.weight", C, 3 * C, linear);
        qkv.b = r.bias(h + "attn.c_attn.bias", 3 * C);
        a.query = output_columns(qkv, 0, C);  // Q | K | V: columns of the x·W matrix (rows of nn.Linear's)
        a.key = output_columns(qkv, C, C);
        a.value = output_columns(qkv, 2 * C, C);
        a.out_proj = r.linear(h + "attn.c_proj.weight", C, C, linear);
        a.out_proj->b = r.bias(h + "attn.c_proj.bias", C);
        a.heads = info.heads;
        a.combined = true;
        b.attention = std::move(block);
        auto mlp = std::make_shared<MlpBlock>();  // the dense MLP kind's block
        mlp->up = r.linear(h + "mlp.c_fc.weight", C, 4 * C, linear);
        mlp->up.b = r.bias(h + "mlp.c_fc.bias", 4 * C);
        mlp->down = r.linear(h + "mlp.c_proj.weight", 4 * C, C, linear);
        mlp->down.b = r.bias(h + "mlp.c_proj.bias", C);
        b.feed_forward = std::move(mlp);
        w.blocks.push_back(std::move(b));
    }
    w.final_norm = r.norm("ln_f", C, NormKind::layer_norm);
    if (!c.tied_head) w.head = r.with_prefix("").linear("lm_head.weight", C, info.vocab, true);  // [vocab, C]
    info.unused = r.unused();
    r.touch_in_background();
    return m;
}

// A Hugging Face GPT-2 folder (config.json's n_head, one model.safetensors), or a GGUF
// file's tensors under those names. Its fields by GPT2Config's names or the ones its
// attribute_map gives them (num_attention_heads for n_head, …: a GGUF file's metadata
// become those); the sizes it states must be the tensors'.
Model read_gpt2(model_detail::ConfigFile& config, const FamilySpec::OpenFiles& open, double) {
    const auto name = [&](const char* own, const char* alias) { return config.get(own) || !config.get(alias) ? own : alias; };
    const std::size_t heads = config.count(name("n_head", "num_attention_heads"));
    const FamilySpec& f = gpt2_family();
    const double eps = config.number(f.fields.norm_eps, f.fields.norm_eps_default);
    config.require(eps, eps >= 0.0, config.at(f.fields.norm_eps), "a number of at least 0 (added to the variance)");
    std::string described;
    const model_detail::Files files = open(described);
    if (files.size() != 1) throw InputError(described, "", "a sharded GPT-2 checkpoint is not supported: one model.safetensors");
    Model m = gpt2_of(files.front(), heads, static_cast<float>(eps));
    auto copy = std::make_shared<LoadedModel>(*m);
    ModelInfo& info = copy->info;
    info.file = described;
    const auto agrees = [&](const std::string& key, std::size_t value, const std::string& what) {
        if (!config.get(key)) return;
        const std::size_t stated = config.count(key);
        config.require(static_cast<double>(stated), stated == value, config.at(key), std::to_string(value) + ", " + what);
    };
    agrees(name("n_embd", "hidden_size"), info.width, "the width C of the token embeddings");
    agrees(name("n_layer", "num_hidden_layers"), info.layers, "the number of layers the weights hold");
    agrees(name("n_positions", "max_position_embeddings"), info.context, "the rows of the position embeddings");
    agrees("vocab_size", info.vocab, "the rows of the token embeddings");
    agrees(name("n_inner", "intermediate_size"), 4 * info.width, "4C, the MLP's width");
    info.config = config.used();
    return copy;
}

}  // namespace

}  // namespace attnwalk
