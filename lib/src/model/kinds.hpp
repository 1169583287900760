// The kinds of block a decoder layer is made of, as the loader reads them; each is one file of
// blocks/: what it reads of config.json (once for the model), what it reads of the
// checkpoint (layer by layer, through the Reader, into its block: its type and weights
// declared in its public header attnwalk/model/blocks/<kind>.hpp) and its block's forward, a
// call into ops/ that hands the tap what it made at the hook points that header declares. The
// decoder calls a layer's blocks (model/block.hpp) and names no kind; the loader names a kind
// (which reader reads a layer), never a kind's own field or tensor (it reads the decoder's:
// sizes, norms, biases, the tied head, and hands attention_bias to the attention kinds);
// blocks/ implement this header and include nothing else of model/'s sources but config.hpp
// and reader.hpp. Internal to lib/src/model/.
//
//   layers.cpp    each layer's kinds, window and RoPE (layer_types, the family's pattern)
//   heads.cpp     attention heads: MHA, GQA, MQA; windows, sinks, an output gate, QK-norm
//   latent.cpp    multi-head latent attention (MLA)
//   deltanet.cpp  Gated DeltaNet
//   mlp.cpp       the dense MLP
//   experts.cpp   a mixture of experts: routers, experts (float rows or MXFP4), a shared expert
//   per_layer.cpp per-layer inputs (Gemma 4 E2B, E4B): a model part beside the layers' blocks
#pragma once

#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "attnwalk/model/decoder.hpp"
#include "config.hpp"
#include "reader.hpp"

namespace attnwalk::model_detail {

// ---- reading ---------------------------------------------------------------------------

// One kind's reader: made from config.json's fields (the sizes and settings every layer of
// the kind shares, read once), it reads one layer's tensors into its kind's block, which it
// sets as the layer's attention or feed_forward.
class KindReader {
public:
    virtual ~KindReader() = default;
    // `prefix`: the layer's tensors' prefix ("layers.3."), `layer` its index.
    virtual void read(const Reader& r, const std::string& prefix, std::size_t layer, BlockWeights& b) const = 0;
};

// layers.cpp: each layer's attention kind, window and RoPE into c.layer_specs (its
// feed-forward kind is the MLP's until experts_reader says otherwise).
void plan_layers(ConfigFile& cfg, const FamilySpec& f, DecoderConfig& c);
// "mlp.gate_proj" -> "gate_proj": a dense MLP's projection as an expert names it.
std::string last_part(const std::string& name);
// `pattern` with `mark` ("{L}" a layer, "{E}" an expert) replaced by the index.
std::string indexed(const std::string& pattern, std::size_t index, const char* mark = "{L}");

// mlp.cpp: the activation config.json names, checked against the family's; the dense MLP of
// `hidden` features (twice that on the layers that share keys and values, where the family's
// double_wide flag says so).
void check_activation(ConfigFile& cfg, const FamilySpec& f);
std::unique_ptr<KindReader> mlp_reader(ConfigFile& cfg, const FamilySpec& f, const DecoderConfig& c, std::size_t hidden);
// experts.cpp: null when the family has no experts or config.json sets none; marks the layers
// that have them (c.layer_specs[l].feed_forward).
std::unique_ptr<KindReader> experts_reader(ConfigFile& cfg, const FamilySpec& f, DecoderConfig& c, std::size_t hidden);
// deltanet.cpp: null without Gated DeltaNet layers. Its fields name the layers when
// config.json has no layer_types (deltanet_layers).
std::unique_ptr<KindReader> deltanet_reader(ConfigFile& cfg, const FamilySpec& f, const DecoderConfig& c);
std::vector<bool> deltanet_layers(ConfigFile& cfg, const FamilySpec& f, std::size_t layers);
// latent.cpp: null unless the family's attention is latent; sets the decoder's latent
// settings (head size, interleave, scaling).
std::unique_ptr<KindReader> latent_reader(ConfigFile& cfg, const FamilySpec& f, DecoderConfig& c, bool attention_bias);
// heads.cpp: the scale field (into c.attention_scale), biases as the family and
// attention_bias say.
std::unique_ptr<KindReader> heads_reader(ConfigFile& cfg, const FamilySpec& f, DecoderConfig& c, bool attention_bias);
// A part of the model outside its layers' two blocks, read once for the model (per-layer inputs).
class ModelPartReader {
public:
    virtual ~ModelPartReader() = default;
    virtual void read(const Reader& r, DecoderWeights& w) const = 0;
};
// per_layer.cpp: null unless the family has per-layer inputs and config.json sizes them (its
// default is not 0); sets c.per_layer_input and c.per_layer_vocab.
std::unique_ptr<ModelPartReader> per_layer_reader(ConfigFile& cfg, const FamilySpec& f, DecoderConfig& c);
// A norm stored around 0 and multiplied by (1 + w) is read as 1 + w, in float32 (Gemma's).
Norm read_norm(const Reader& r, const FamilySpec& f, const std::string& name, std::size_t size);

}  // namespace attnwalk::model_detail
