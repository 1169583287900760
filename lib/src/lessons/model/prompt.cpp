// The prompt's tap: the embeddings, every layer's points (the layer shown, or every layer
// when all are asked for, in full; the others as summaries), and the attention kept for
// writing its cells out. Each kind of block narrates its own layer in a file of its own, to
// which the tap's hook hands the kind's value.
#include "model_walk.hpp"

namespace attnwalk::model_walk {

PromptTap::PromptTap(Recorder& rec, const ModelSpec& spec, const ModelInfo& info, const Model& model, std::size_t T, bool explainable)
    : rec_(rec), spec_(spec), info_(info), model_(model), weights_(model->weights), config_(weights_.config),
      words_(words_of(config_, &weights_)), T_(T), explainable_(explainable) {
    if (spec.view) grid = xt::xtensor<float, 5>::from_shape({1, info.layers, info.heads, T, T});
}

std::string PromptTap::rope_words() const {
    const auto any = [&](AttentionKind kind) { return any_layer(config_, kind); };
    if (any(AttentionKind::deltanet))
        return "No position embeddings: each full-attention layer rotates its queries and keys by position (RoPE); the Gated DeltaNet layers "
               "use none, their convolution and state following the tokens' order.";
    const auto unrotated = std::count_if(config_.layer_specs.begin(), config_.layer_specs.end(), [](const LayerSpec& ls) { return !ls.rope; });
    if (unrotated > 0 && !any(AttentionKind::latent))  // some layers apply none: say which kind
        return config_.family->layers.rope_on_sliding_only
                   ? "No position embeddings: each sliding-window layer rotates its queries and keys by position (RoPE); the full-attention layers "
                     "apply none, the causal mask alone ordering their tokens."
                   : "No position embeddings: each layer rotates its queries and keys by position (RoPE) but " + std::to_string(unrotated) + " of the " +
                         std::to_string(config_.layers) + (unrotated == 1 ? ", which applies none (" : ", which apply none (") +
                         (config_.family->layers.no_rope_layers.empty() ? std::string("partial_rotary_factor turns no feature") : config_.family->layers.no_rope_layers) +
                         "): there the causal mask alone orders the tokens.";
    return !any(AttentionKind::latent)
               ? "No position embeddings: each layer rotates its queries and keys by position (RoPE)."
               : "No position embeddings: each layer rotates by position (RoPE) the last " + config_.family->latent.rope + " features of each head's query and "
                 "the rotary key all heads share.";
}

void PromptTap::hook(std::size_t l, HookId id, const Hooked& value) {
    if (id == hooks::heads) heads(l, value.get<Forward>());
    else if (id == hooks::latent) latent(l, value.get<LatentForward>());
    else if (id == hooks::deltanet) linear(l, value.get<GatedDeltaNetForward>());
    else if (id == hooks::experts) experts(l, value.get<MoeOutput>());
    else if (const Cube* t = value.as<Cube>(); t && l == no_layer) embeddings(id, *t);
    else if (t) block(l, id, *t);  // the block's points; another kind's value it does not narrate passes by
}

// The token embeddings' rows, the position embeddings' (learned positions only), the first input.
void PromptTap::embeddings(HookId id, const Cube& t) {
    const std::string& E = words_.embed;
    if (id == hooks::embed) {
        rec_.add("token_embeddings", "Token embeddings: rows of " + E, E + "[ids]", t, tokens_features);
        return;
    }
    if (id == hooks::per_layer_embed || id == hooks::per_layer_projection || id == hooks::per_layer_inputs) {  // per-layer inputs (Gemma 4 E2B, E4B)
        per_layer(id, t);
        return;
    }
    if (id == hooks::pos_embed) {
        rec_.add("position_embeddings", "Position embeddings: rows 1…T of wpe", "wpe[0:T]", t, tokens_features);
        return;
    }
    if (id != hooks::embeddings) return;
    const Cube& x = t;
    if (keeps_cells(0)) stream_ = x;  // the rows entering layer 1
    if (spec_.logit_lens) residuals.push_back(x);
    if (config_.positions == PositionKind::learned) {
        rec_.add("embeddings", "The input of layer 1", "x = wte[ids] + wpe[0:T]", x, tokens_features);
    } else if (config_.embed_scale) {
        rec_.add("embeddings", "The input of layer 1: the embeddings × √C", "x = " + E + "[ids] · " + format_number(*config_.embed_scale), x,
                 tokens_features)
            .note = rope_words();
    } else {
        rec_.add("embeddings", "The input of layer 1", "x = " + E + "[ids]", x, tokens_features).note =
            rope_words();
    }
}

// Per-layer inputs, made before the layers from the ids and the embeddings, in the family's names.
void PromptTap::per_layer(HookId id, const Cube& t) {
    if (!config_.family->per_layer) return;
    const PerLayerPart& n = *config_.family->per_layer;
    const std::string table = short_name(n.embed), projection = short_name(n.model_projection), norm = short_name(n.projection_norm);
    if (id == hooks::per_layer_embed) {
        rec_.add("per_layer_embeddings", "Per-layer inputs: rows of " + table + " × √P",
                 table + "[ids] · " + format_number(std::sqrt(static_cast<float>(config_.per_layer_input))), t, tokens_features)
            .note = "P = " + std::to_string(config_.per_layer_input) + " features for each of the " + std::to_string(config_.layers) +
                    " layers, one row of " + std::to_string(t.shape(2)) + " per token: layer l reads features l·P … (l + 1)·P − 1.";
    } else if (id == hooks::per_layer_projection) {
        rec_.add("per_layer_projection", "Per-layer inputs: the embeddings through " + projection + ", each layer's part normed",
                 norm + "(x·W_model" + words_.t + " · " + format_number(static_cast<float>(std::pow(static_cast<double>(config_.width), -0.5))) + ")",
                 t, tokens_features)
            .note = "x is the input of layer 1 (the embeddings × √C); × C^(−1/2), then each layer's P features through their own RMSNorm (" + norm + ").";
    } else {
        rec_.add("per_layer_inputs", "Per-layer inputs: the projection and the embeddings, combined",
                 "inputs = (per_layer_projection + per_layer_embeddings) · " + format_number(static_cast<float>(std::pow(2.0, -0.5))), t, tokens_features)
            .note = "Each layer mixes its own P features into its output after the MLP: x + " + words_.per_layer_norm + "((" + words_.mlp_act + "(x·W_gate" +
                    words_.t + ") ⊙ inputs_l)·W_proj" + words_.t + ").";
    }
}

void PromptTap::block(std::size_t l, HookId p, const Cube& t) {
    if (p == hooks::norm_1 && keeps_cells(l)) normed_ = t;
    if (p == hooks::residual_2) {
        if (l + 1 < config_.layers && keeps_cells(l + 1)) stream_ = t;  // the rows entering the next layer
        else stream_ = Cube();
        normed_ = Cube();
    }
    if (p == hooks::residual_2 && spec_.logit_lens) residuals.push_back(t);
    const std::optional<PointText> text = point_text(p, std::to_string(l + 1), words_, weights_.blocks[l].feed_forward->as<ExpertsBlock>() != nullptr);
    if (!text) return;  // a point this walk does not narrate
    const std::string id = "layer" + std::to_string(l + 1) + "." + text->id;
    if (l == spec_.layer || spec_.all_layers) rec_.add(id, text->title, text->formula, t, tokens_features);
    else rec_.add_summary(id, text->title, text->formula, {T_, t.shape(2)}, 1, tokens_features, summary_of(t), false);
}

LayerSource PromptTap::layer_source(std::size_t l) const {
    const FamilySpec& fam = *config_.family;
    const BlockWeights& b = weights_.blocks[l];
    const LayerSpec& la = config_.layer_specs[l];
    LayerSource L;
    L.layer = l;
    L.stream = stream_;
    L.norm = b.norm_1;
    L.norm_kind = config_.norm;
    L.eps = config_.norm_eps;
    L.norm_words = fam.norm_words();
    L.norm_name = fam.names.pre_attention_norm;
    L.norm_adds_one = fam.norm_adds_one;
    L.layer_has_rope = config_.positions != PositionKind::rope || la.rope.has_value();
    L.rope = la.rope;
    if (la.rope && la.window) L.rope_words = "A sliding-window layer (W = " + std::to_string(*la.window) + "): RoPE base " + whole_or_number(la.rope->base) + ".";
    L.q_name = words_.fused ? words_.fused_qkv : short_name(fam.heads.query);
    L.k_name = words_.fused ? words_.fused_qkv : short_name(fam.heads.key);
    if (la.kv_from) L.shared_kv = "layer " + std::to_string(*la.kv_from + 1);
    return L;
}

void PromptTap::keep(std::size_t l, const Forward& f) {
    const BlockWeights& b = weights_.blocks[l];
    KeptAttention k;
    k.f = f;
    k.x = b.norm_1 ? normed_ : stream_;
    if (const HeadsBlock* heads = b.attention->as<HeadsBlock>()) k.weights = std::shared_ptr<const AttentionWeights>(model_, &heads->w);  // latent attention's: its LatentSource (below)
    k.scale.value = f.scale;
    k.scale.symbol = words_.scale.empty() ? "√d_k" : words_.scale;
    k.scale.words = words_.scale.empty() ? "√d_k = √" + std::to_string(f.d_h) : words_.scale;
    if (config_.attention_scale && !words_.scale.empty())  // a config field's scale: said once, in words
        k.scale.why = "Not √d_k: this family divides the scores by √" + config_.family->heads.scale_field + ", a number its config.json sets (" +
                      format_number(*config_.attention_scale * *config_.attention_scale) + " here, so √ = " + format_number(*config_.attention_scale) +
                      "), where d_k = " + std::to_string(f.d_h) + ".";
    if (config_.layer_specs[l].attention == AttentionKind::latent) {  // its parts, kept at its latent hook
        if (!latent_kept_) return;
        k.latent = std::move(latent_kept_);
        k.scale = latent_scale(l, k.latent->f.scaling);
    }
    k.layer = layer_source(l);
    kept.push_back(std::move(k));
}

}  // namespace attnwalk::model_walk
