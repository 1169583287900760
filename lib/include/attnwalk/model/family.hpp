// A model family as data: which kinds of block its layers are made of, where its
// checkpoints keep each tensor, and which config.json fields say its sizes. One loader
// (model/loader.cpp) and one decoder (model/decoder.hpp) read a spec; each kind of block
// (lib/src/model/blocks/: attention heads, latent attention, Gated DeltaNet, the dense MLP,
// experts) reads its own part of it, its own config.json fields and its own tensors; the
// lessons name a family's parts from it ("RMSNorm with (1 + w)", "no RoPE in this layer").
// Each family is one file of lib/src/model/families/ and one line of its registry
// (families.cpp); nothing else compares a family's name, and no file outside families/ and
// blocks/ names a field of a kind (tests/test_contract.cpp holds both).
//
// In the manner of gemma.cpp's ModelConfig/LayerConfig: plain fields, no behaviour.
// Light: no xtensor here.
#pragma once

#include <cstddef>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "attnwalk/io/tokenizer.hpp"
#include "attnwalk/model/model.hpp"
#include "attnwalk/ops/kinds.hpp"

namespace attnwalk {

class SafeTensors;  // io/safetensors.hpp

namespace model_detail {
class ConfigFile;  // config.json, each field read noted (lib/src/model/config.hpp)
}

// How the tokens learn their positions.
enum class PositionKind {
    learned,  // a table of position embeddings added to the tokens (GPT-2)
    rope      // none added: each layer rotates its queries and keys (LayerSpec::rope)
};

// Where a block normalises (the residual stream x, a sublayer f: attention or MLP):
enum class NormPlacement {
    pre,   // x + f(norm(x))          GPT-2, Llama, Qwen, SmolLM
    post,  // x + norm(f(x))          OLMo 2 and 3
    both,    // x + norm(f(norm(x)))    Gemma 2 and 3
    parallel // x + attn(norm(x)) + mlp(norm(x)), one norm    Cohere (Command R7B, Tiny Aya)
};

// QK-norm: an RMSNorm on the queries and keys before RoPE.
enum class QkNormSpan {
    none,
    per_head,  // over each head's d_h features (Qwen3, Gemma 3)
    whole      // over the whole projection, H·d_h and G·d_h, before the split (OLMo 2 and 3)
};

// How a layer's type (sliding-window or full attention) is known when config.json has no
// `layer_types` list.
enum class WindowPattern {
    none,          // every layer full
    every_nth_full, // every pattern-th layer full, the others sliding (Gemma 3: 6, OLMo 3: 4)
    nope_layers     // the layers without RoPE slide, when sliding_window is set (SmolLM3)
};

// The kinds of block a layer is made of, one file each in lib/src/model/blocks/. The
// decoder's config names each layer's (DecoderConfig::layer_specs).
enum class AttentionKind {
    heads,    // attention heads of q/k/v projections: MHA, GQA, MQA; windows, sinks, an output gate, QK-norm
    latent,   // multi-head latent attention (MLA, DeepSeek-V3): keys and values from a small latent per token
    deltanet  // Gated DeltaNet (Qwen3-Next's linear_attention): a state written by the delta rule, no softmax
};
enum class FeedForwardKind {
    mlp,     // the dense MLP
    experts  // a mixture of experts: a router and the few experts each token goes to
};

// Each kind's part of a family: the names of its tensors within a layer and the config.json
// fields it reads. An empty name: the family has no such tensor.

// Attention heads (blocks/heads.cpp).
struct HeadsPart {
    std::string query = "self_attn.q_proj", key = "self_attn.k_proj", value = "self_attn.v_proj", out = "self_attn.o_proj";
    std::string fused_qkv;                       // one tensor for Q | K | V (GPT-2's c_attn): the three above unused
    std::string q_norm = "self_attn.q_norm", k_norm = "self_attn.k_norm";
    std::string sinks;                           // learned attention sinks, one logit per head (gpt-oss: self_attn.sinks)
    QkNormSpan qk_norm = QkNormSpan::none;
    bool qkv_bias = false;                       // biases on q, k and v always (Qwen2); else config's attention_bias puts one on all four
    bool query_gate = false;                     // q_proj makes each head's query, then its output gate: Z ⊙ σ(gate) before o_proj (Qwen3-Next)
    std::string scale_field;                     // the scores are divided by √(this field) (Gemma: query_pre_attn_scalar)
    bool unscaled = false;                       // the scores are not scaled at all (Gemma 4: scaling 1.0)
    bool v_norm = false;                         // each head's values through an RMSNorm without a scale (Gemma 4's v_norm)
    std::string full_head_dim;                   // the full-attention layers' own d_h (Gemma 4: global_head_dim)
    std::string full_kv_heads;                   // and their own G, with keys_as_values (num_global_key_value_heads)
    std::string keys_as_values;                  // a flag: the full layers' key projection makes the values too (attention_k_eq_v)
    std::string shared_layers;                   // the last n layers read the keys and values of the last earlier layer of
                                                 // their type, and have no key or value projection (num_kv_shared_layers)
};

// Positions and windows, layer by layer (blocks/layers.cpp): which layers slide, RoPE's
// base and scaling on each.
struct LayersPart {
    // Whether the family has sliding-window layers at all (layer_types' sliding_attention,
    // or the window pattern); without, such entries are full attention, as Hugging Face's
    // classes that take no window from them compute.
    bool windows = false;
    std::string windows_flag;                    // a flag config.json must set for them (SmolLM3's use_sliding_window)
    bool rope_on_sliding_only = false;           // the full layers apply no RoPE (Cohere 2)
    bool rope_interleaved = false;               // RoPE's pairs are (0,1), (2,3), … (Cohere), not (i, i + d/2)
    WindowPattern window_pattern = WindowPattern::none;
    std::size_t window_pattern_default = 0;      // with every_nth_full, when config.json gives no pattern
    bool sliding_layers_scaled = false;          // rope_scaling applies to sliding layers too (false: to the full ones only)
    double rope_theta_default = 10000.0;         // rope_theta when config.json has none
    std::string sliding_rope_base;               // a sliding layer's own base (Gemma 3: rope_local_base_freq)
    double sliding_rope_base_default = 10000.0;
    std::string no_rope_layers;                  // a list, 0 where a layer applies no RoPE (SmolLM3)
    std::string no_rope_interval;                // without that list: every n-th layer applies none (SmolLM3's no_rope_layer_interval, 4)
    std::optional<std::size_t> window_default;   // sliding_window when config.json has none (Cohere 2: 4096)
    double full_proportion_default = 0.0;        // without rope_parameters, the full layers' RoPE is "proportional" with this
                                                 // partial_rotary_factor (Gemma 4: 0.25; RopeParams::proportion); 0: not
    bool last_layer_full = false;                // the last layer is full attention whatever layer_types says (Gemma4TextConfig forces it)
};

// Latent attention, MLA (blocks/latent.cpp): its projections and norms, and the fields that
// size it (DeepseekV3Config's).
struct LatentPart {
    std::string query = "self_attn.q_proj";      // without a query latent
    std::string q_a = "self_attn.q_a_proj", q_a_norm = "self_attn.q_a_layernorm", q_b = "self_attn.q_b_proj";
    std::string kv_a = "self_attn.kv_a_proj_with_mqa", kv_a_norm = "self_attn.kv_a_layernorm", kv_b = "self_attn.kv_b_proj";
    std::string out = "self_attn.o_proj";
    std::string query_rank = "q_lora_rank", rank = "kv_lora_rank";  // r_q (null: no query latent) and r
    std::string nope = "qk_nope_head_dim", rope = "qk_rope_head_dim", value = "v_head_dim";
    std::string interleave = "rope_interleave";  // the rotary pairs are (0,1), (2,3), … in the weights (empty: always, no field)
    // DeepSeek Sparse Attention's indexer (DeepSeek-V3.2): the module (empty: none) holding
    // wq_b, wk, k_norm (a LayerNorm) and weights_proj, and the fields that size it.
    std::string indexer;
    std::string index_heads = "index_n_heads", index_dim = "index_head_dim", index_topk = "index_topk";
};

// Gated DeltaNet (blocks/deltanet.cpp): the module holding in_proj_qkvz and in_proj_ba (or
// in_proj_qkv, in_proj_z, in_proj_b and in_proj_a), conv1d, A_log, dt_bias, norm, out_proj;
// and the fields that size it (Qwen3NextConfig's).
struct DeltaNetPart {
    std::string module = "linear_attn";
    std::string key_heads = "linear_num_key_heads", value_heads = "linear_num_value_heads";
    std::string key_dim = "linear_key_head_dim", value_dim = "linear_value_head_dim";
    std::string kernel = "linear_conv_kernel_dim";
    std::string interval = "full_attention_interval";  // without layer_types: every n-th layer full, the others DeltaNet
};

// The dense MLP (blocks/mlp.cpp).
struct MlpPart {
    std::string gate = "mlp.gate_proj", up = "mlp.up_proj", down = "mlp.down_proj";  // gate: gated kinds only
    std::vector<std::string> activation_fields = {"hidden_act"};  // the first present names the activation
    std::vector<std::string> activations = {"silu"};              // the values accepted for it
    std::string double_wide;                     // a flag: twice the hidden width on the layers that share keys and values (use_double_wide_mlp)
};

// Per-layer inputs (blocks/per_layer.cpp; Gemma 4 E2B and E4B, Gemma 3n): a second embedding
// table of P features per layer for each token, [vocab_pl, L·P], × √P, mixed with a projection
// of the embeddings x (× C^(−1/2), each layer's P through an RMSNorm): (proj + emb)·2^(−1/2);
// after each layer's MLP, x + norm(act(x·W_gateᵀ) ⊙ input_l ·W_projᵀ). Names without the
// prefix; norms without ".weight".
struct PerLayerPart {
    std::string size = "hidden_size_per_layer_input";  // P; 0: none
    std::size_t size_default = 256;                     // Gemma4TextConfig's, when config.json does not say
    std::string vocab = "vocab_size_per_layer_input";   // the table's rows
    std::size_t vocab_default = 262144;
    std::string embed = "embed_tokens_per_layer.weight", model_projection = "per_layer_model_projection.weight";
    std::string projection_norm = "per_layer_projection_norm";
    std::string gate = "per_layer_input_gate.weight", projection = "per_layer_projection.weight";  // each layer's, after its prefix
    std::string post_norm = "post_per_layer_input_norm";
};

// A mixture of experts (blocks/experts.cpp): the router (.weight [E, C], its bias or a
// choice bias), the experts (stacked gate_up_proj [E, C, 2I] and down_proj [E, I, C], + _bias,
// or their _blocks and _scales in MXFP4; or each expert its own gate/up/down, named as the
// dense MLP's), a shared expert beside them; and the fields that say how many, which layers.
struct ExpertsPart {
    RouterKind routing = RouterKind::softmax_top_k;
    ExpertKind kind = ExpertKind::clamped_swiglu;
    std::string router = "mlp.router", experts = "mlp.experts";
    std::string router_bias = "bias";            // after router, without ".weight" (DeepSeek: e_score_correction_bias)
    std::string expert = "{E}.";                 // each expert's own projections ("{E}" its index)
    std::string shared_experts;                  // a shared expert every token goes through
    std::string shared_expert_gate;              // its own gate, σ(x·w) (Qwen3-Next: mlp.shared_expert_gate); empty: none
    std::string count = "num_local_experts", per_token = "num_experts_per_tok", swiglu_limit = "swiglu_limit";
    std::string hidden = "intermediate_size";    // an expert's hidden size
    std::string first_dense;                     // the first layers keep a dense MLP (DeepSeek: first_k_dense_replace)
    std::string shared_count;                    // how many experts' width the shared one has (n_shared_experts)
    std::string shared_width;                    // or its width itself (shared_expert_intermediate_size)
    std::string sparse_step, dense_layers;       // every n-th layer has experts, but those listed (decoder_sparse_step, mlp_only_layers)
    std::string normalise = "norm_topk_prob";    // the chosen weights over their sum (softmax_all, sigmoid_grouped)
    bool normalise_default = true;               // when config.json does not say
    std::string groups = "n_group", top_groups = "topk_group";  // sigmoid_grouped: the groups, the best kept
    std::string routed_scale = "routed_scaling_factor";         // sigmoid_grouped: the weights' multiplier
};

// The names a checkpoint gives the tensors outside the blocks' own. `{L}` stands for the
// layer's index. Norms are named without ".weight".
struct TensorNames {
    std::string prefix = "model.";                   // before every name but the head's
    std::string embed = "embed_tokens.weight";
    std::string positions;                           // learned position embeddings (GPT-2's wpe)
    std::string layer = "layers.{L}.";               // before each name of a layer
    std::string pre_attention_norm = "input_layernorm";
    std::string post_attention_norm;                 // after the attention (placement post or both)
    std::string pre_mlp_norm = "post_attention_layernorm";
    std::string post_mlp_norm;                       // after the MLP (placement post or both)
    std::string final_norm = "norm";
    std::string head = "lm_head.weight";             // an untied head, without the prefix
    std::string layer_scalar;                        // one number a layer's output is multiplied by (Gemma 4: layer_scalar)
};

// config.json's field names for what differs between families outside the blocks, and their defaults.
struct ConfigFields {
    std::string norm_eps = "rms_norm_eps";
    double norm_eps_default = 1e-6;
    bool tied_default = false;                   // tie_word_embeddings when absent
    std::vector<std::string> refused_true;       // flags this family's support needs false (Qwen's use_sliding_window)
    std::string extra_layers;                    // layers the checkpoint holds beyond the forward's (num_nextn_predict_layers)
    std::string nested;                          // the text model's fields lie in this object (a multimodal checkpoint's text_config)
    std::string head_dim = "head_dim";           // d_h when not C/H; empty: always C/H (Cohere 2 ignores the field)
    std::string logit_scale;                     // the logits are multiplied by this field (Cohere: logit_scale)
    double logit_scale_default = 1.0;
    std::string logit_softcap;                   // the logits soft-capped, tanh(z / cap)·cap, by this field (Gemma 4: final_logit_softcapping)
    // fields this family's support needs 0 (absent counts as not 0), and what they would turn on
    std::vector<std::pair<std::string, std::string>> refused_nonzero;
};

// A family as llama.cpp's converter writes it into a GGUF file: its general.architecture,
// and whether the converter permuted the rows of q and k within each head (Llama: llama.cpp
// rotates adjacent pairs; the reader undoes it). `model_type`: the spec that says so (a spec
// made from another copies its part, and is not read from GGUF unless it sets its own).
struct GgufPart {
    std::string architecture, model_type;
    bool rows_permuted = false;
    // Its tokenizers as llama.cpp writes them: tokenizer.ggml.model's name for byte-level
    // BPE, and the pre-tokenizers (tokenizer.ggml.pre) its checkpoints' tokenizer.json files
    // hold. Read from every spec, whatever its model_type.
    std::string vocabulary;
    std::vector<GgufPreTokenizer> pre;
    // The parts of a layer (GGUF's names: "attn_qkv", "ffn_up") whose matrices the converter
    // transposed from the checkpoint's x·W layout (GPT-2's Conv1D) to GGUF's [out, in]: the
    // reader transposes them back, so the family reads them as from its folder.
    std::vector<std::string> transposed;
};

struct FamilySpec {
    std::string model_type;  // config.json's model_type
    std::string models;      // the models it covers, for messages and docs: "Llama 3, SmolLM2"

    // the block
    NormKind norm;
    bool norm_adds_one = false;        // Gemma: the checkpoint stores w, the norm multiplies by (1 + w)
    NormPlacement placement = NormPlacement::pre;
    MlpKind mlp;
    PositionKind positions;
    bool embed_scale_sqrt_width = false;  // Gemma: the embeddings × √C

    // the kinds its layers are made of, and each kind's part
    AttentionKind attention = AttentionKind::heads;  // full and sliding layers: heads, or latent attention
    HeadsPart heads;
    LayersPart layers;
    LatentPart latent;                               // with attention = latent
    std::optional<DeltaNetPart> deltanet;            // layer_types' linear_attention layers are Gated DeltaNet ones
    MlpPart dense;                                   // the dense MLP: its names, its activation
    std::optional<ExpertsPart> experts;              // a mixture of experts in place of the MLP, on the layers it says
    std::optional<PerLayerPart> per_layer;           // per-layer inputs, where config.json sizes them (Gemma 4 E2B, E4B)

    TensorNames names;
    ConfigFields fields;

    // Read from a GGUF file (llama.cpp's converter's output, model/gguf_model.cpp) when set.
    GgufPart gguf;

    // model_types close to this one that the loader refuses, and why (Gemma 3's
    // image-and-text "gemma3").
    std::vector<std::pair<std::string, std::string>> refused_types;
    // A family whose checkpoints need more than the names above reads its weights itself
    // (GPT-2: one fused c_attn, Conv1D's x·W layout or nanoGPT's names, sizes read off
    // the tensors), from config.json's fields (or a GGUF file's, in their names) and the
    // files `open` gives (a folder's, or a GGUF file's tensors under Hugging Face's names),
    // saying in `described` what they are. Null: the one loader reads it from the spec.
    // `memory_budget`: the bytes a file's JSON may take to parse.
    using OpenFiles = std::function<std::vector<std::shared_ptr<const SafeTensors>>(std::string& described)>;
    Model (*read_weights)(model_detail::ConfigFile& config, const OpenFiles& open, double memory_budget) = nullptr;

    // How the lessons write the family's math: GPT-2's code and papers multiply x·W
    // (Conv1D); Hugging Face's Linear layers x·Wᵀ. The norms as formulas name them.
    bool math_xw = false;
    std::string norm_1_symbol = "norm_1", norm_2_symbol = "norm_2";

    // The lesson's words for the norm: "LayerNorm", "RMSNorm", "RMSNorm with (1 + w)".
    std::string norm_words() const;
};

// Every family, in the order docs/families.md lists them.
const std::vector<const FamilySpec*>& families();
// The family whose model_type is `model_type`, or null.
const FamilySpec* find_family(const std::string& model_type);
// "gpt2, llama (Llama 3, SmolLM2), …": the model_types the loader reads, for messages.
std::string supported_families();

// The tokenizer of a GGUF file, of the vocabularies and pre-tokenizers the families' GgufParts
// name (model/gguf_model.cpp; io's read_gguf_tokenizer); null when the file has none.
std::shared_ptr<const Tokenizer> load_gguf_tokenizer(const std::string& path, double memory_budget, TokenizerUse use);

}  // namespace attnwalk
