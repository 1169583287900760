// The words of a family's parts, from its spec, for titles and formulas.
#include "model_walk.hpp"

namespace attnwalk::model_walk {

// 1000000 rather than 1e+06.
std::string whole_or_number(double v) {
    return v == std::floor(v) && std::fabs(v) < 1e15 ? std::to_string(static_cast<long long>(v)) : format_number(v);
}

// A tensor's short name: "self_attn.o_proj" -> "o_proj", "wte.weight" -> "wte".
std::string short_name(std::string name) {
    if (name.size() > 7 && name.compare(name.size() - 7, 7, ".weight") == 0) name.resize(name.size() - 7);
    const std::size_t dot = name.rfind('.');
    return dot == std::string::npos ? name : name.substr(dot + 1);
}
// A weight's symbol in formulas: "c_fc" -> "W_fc", "gate_proj" -> "W_gate".
std::string weight_symbol(const std::string& name) {
    std::string s = short_name(name);
    if (s.rfind("c_", 0) == 0) s = s.substr(2);
    if (s.size() > 5 && s.compare(s.size() - 5, 5, "_proj") == 0) s.resize(s.size() - 5);
    return "W_" + s;
}

Words words_of(const DecoderConfig& c, const DecoderWeights* weights) {
    const FamilySpec& f = *c.family;
    const TensorNames& n = f.names;
    const HeadsPart& h = f.heads;
    const MlpPart& m = f.dense;
    Words w;
    w.family = &f;
    w.fused = !h.fused_qkv.empty();
    w.pre = f.placement != NormPlacement::post;
    w.post = f.placement == NormPlacement::post || f.placement == NormPlacement::both;
    w.embed = short_name(n.embed);
    w.norm = f.norm_words();
    w.norm_1 = n.pre_attention_norm;
    w.norm_2 = n.pre_mlp_norm;
    w.post_attention = n.post_attention_norm;
    w.post_mlp = n.post_mlp_norm;
    w.out = short_name(h.out);
    w.final_norm = n.final_norm;
    w.fused_qkv = short_name(h.fused_qkv);
    w.n1 = f.norm_1_symbol;
    w.n2 = f.norm_2_symbol;
    w.t = f.math_xw ? "" : "ᵀ";
    w.parallel = f.placement == NormPlacement::parallel;
    if (w.parallel) {  // the MLP reads the attention's norm of the layer's input
        w.norm_2 = w.norm_1;
        w.n2 = w.n1;
    }
    const MlpBlock* first = weights && !weights->blocks.empty() ? weights->blocks.front().feed_forward->as<MlpBlock>() : nullptr;  // a dense first layer's MLP
    const bool bias = first && first->up.b.size() != 0;
    const std::string act = c.mlp == MlpKind::swiglu ? "SiLU" : c.mlp == MlpKind::geglu_tanh ? "GELU_tanh" : "GELU";
    const std::string in = w.pre ? "m" : "x";  // what the MLP reads: the normed stream, or the stream itself
    if (gated(c.mlp)) {
        w.mlp_hidden_title = "The MLP's hidden layer: " + act + "(" + short_name(m.gate) + ") ⊙ " + short_name(m.up);
        w.mlp_hidden = act + "(" + in + "·" + weight_symbol(m.gate) + w.t + ") ⊙ (" + in + "·" + weight_symbol(m.up) + w.t + ")";
    } else {
        const std::size_t hidden = first ? first->up.out() : 4 * c.width;
        w.mlp_hidden_title = "The MLP's hidden layer (" + (hidden == 4 * c.width ? std::string("4C") : std::to_string(hidden)) + "), after " + act;
        w.mlp_hidden = act + "(" + (w.pre ? w.n2 + "(x)" : "x") + "·" + weight_symbol(m.up) + w.t + " + b_" + weight_symbol(m.up).substr(2) + ")";
    }
    w.mlp = "hidden·" + weight_symbol(m.down) + w.t + (bias ? " + b_" + weight_symbol(m.down).substr(2) : "");
    const bool shared = weights && std::any_of(weights->blocks.begin(), weights->blocks.end(), [](const BlockWeights& b) {
        const ExpertsBlock* experts = b.feed_forward->as<ExpertsBlock>();
        return experts && experts->w.shared;
    });
    w.mlp_experts = "Σ_(e chosen) weight_e · expert_e(" + in + ")" + (shared ? " + shared(" + in + ")" : "");  // a mixture of experts
    if (c.logit_scale) w.logit_scale = " · " + format_number(*c.logit_scale) + " (" + f.fields.logit_scale + ")";
    if (c.logit_softcap)  // Gemma 4: z → tanh(z / cap)·cap
        w.logit_scale += ", soft-capped: tanh(z / " + format_number(*c.logit_softcap) + ")·" + format_number(*c.logit_softcap) + " (" + f.fields.logit_softcap + ")";
    w.layer_scalar = f.names.layer_scalar;
    w.per_layer = c.per_layer_input > 0;
    if (f.per_layer) w.per_layer_norm = f.per_layer->post_norm;
    w.mlp_act = c.mlp == MlpKind::swiglu ? "SiLU" : "GELU";
    if (c.attention_scale) w.scale = h.unscaled ? "1 (not scaled)" : format_number(*c.attention_scale) + " (√" + h.scale_field + ")";
    const float plain = 1.0f / std::sqrt(static_cast<float>(c.head_size()));
    if (c.latent_scaling && *c.latent_scaling != plain)  // DeepSeek-V3 with YaRN: (d_nope + d_rope)^(−1/2) × mscale²
        w.scale = format_number(1.0f / *c.latent_scaling) + " (√" + std::to_string(c.head_size()) + " ÷ mscale²)";
    return w;
}

std::optional<PointText> point_text(HookId p, const std::string& L, const Words& w, bool experts) {
    const std::string attn = "attn(" + (w.pre ? w.n1 + "(x)" : std::string("x")) + ")", mlp = "mlp(" + (w.pre ? w.n2 + "(x)" : std::string("x")) + ")";
    if (p == hooks::norm_1) return PointText{"ln_1", "Layer " + L + ": " + w.norm + " before attention (" + w.norm_1 + ")", w.n1 + "(x)"};
    if (p == hooks::attention) return PointText{"attention", "Layer " + L + ": the attention's output", attn};
    if (p == hooks::attention_norm)
        return PointText{"attention_norm", w.norm + " of the attention's output (" + w.post_attention + ")", "norm(" + attn + ")"};
    if (p == hooks::residual_1) return PointText{"residual_1", "Residual: added to the layer's input", "x + " + (w.post ? "norm(" + attn + ")" : attn)};
    if (p == hooks::norm_2) return PointText{"ln_2", w.norm + " before the MLP (" + w.norm_2 + ")", w.n2 + "(x)"};
    if (p == hooks::mlp_hidden) return PointText{"mlp_hidden", w.mlp_hidden_title, w.mlp_hidden};
    if (p == hooks::mlp) return experts ? PointText{"mlp", "The mixture of experts' output", w.mlp_experts} : PointText{"mlp", "The MLP's output", w.mlp};
    if (p == hooks::mlp_norm) return PointText{"mlp_norm", w.norm + " of the MLP's output (" + w.post_mlp + ")", "norm(" + mlp + ")"};
    if (p == hooks::per_layer_input) return PointText{"per_layer_input", "Layer " + L + "'s per-layer input: its P features of per_layer_inputs", "inputs_" + L};
    if (p == hooks::per_layer_gated)
        return PointText{"per_layer_gated", "The per-layer gate: " + w.mlp_act + " of the stream's projection, times the layer's input",
                         w.mlp_act + "(x·W_gate" + w.t + ") ⊙ inputs_" + L};
    if (p == hooks::per_layer_output)
        return PointText{"per_layer_output", "The per-layer input's output, added to the stream", "pl_" + L + " = " + w.per_layer_norm + "(gated·W_proj" + w.t + ")"};
    if (p == hooks::residual_2) {  // a parallel block: both sublayers read the norm of the layer's input x; Gemma 4's × layer_scalar
        const std::string sum = "x + " + (w.parallel ? attn + " + " : std::string()) + (w.post ? "norm(" + mlp + ")" : mlp) + (w.per_layer ? " + pl_" + L : "");
        return PointText{"residual_2", "Layer " + L + "'s output", w.layer_scalar.empty() ? sum : "(" + sum + ")·" + w.layer_scalar + "_" + L};
    }
    return std::nullopt;
}

}  // namespace attnwalk::model_walk
