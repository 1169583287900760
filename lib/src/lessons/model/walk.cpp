// The model walk: a pretrained decoder run on token ids, recorded through the decoder's
// tap (model/decoder.hpp). The layer shown keeps mha's step ids; the other layers are
// summaries; then the next token's candidates, the analyses asked for, and greedy
// generation through the KV cache checked against the whole sequence recomputed.
#include <map>
#include <utility>

#include "model_walk.hpp"

namespace attnwalk {

using namespace model_walk;

Trace walk_model(const Model& model, const std::vector<std::size_t>& ids, const std::vector<std::string>& tokens, const ModelSpec& spec,
                 const Recording& recording) {
    const LoadedModel& m = *model;
    const ModelInfo& info = m.info;
    const DecoderConfig& c = m.weights.config;
    const std::size_t T = ids.size();
    check_prompt(c, ids, 0);
    if (spec.generate && T + 1 > info.context)
        throw UsageError("no room to generate: the prompt fills the model's context of " + std::to_string(info.context));
    const auto kind_of = [&](std::size_t l) { return l < c.layer_specs.size() ? c.layer_specs[l].attention : AttentionKind::heads; };
    const GatedDeltaNetWeights* shown_linear = kind_of(spec.layer) == AttentionKind::deltanet ? &m.weights.blocks[spec.layer].attention->get<DeltaNetBlock>().w : nullptr;
    const std::size_t heads_shown = shown_linear ? shown_linear->v_heads : info.heads;  // a Gated DeltaNet layer: its value heads
    if (spec.head && *spec.head >= heads_shown)
        throw UsageError("head " + std::to_string(*spec.head + 1) + " is out of range: " +
                         (shown_linear ? "layer " + std::to_string(spec.layer + 1) + " (Gated DeltaNet) has " : std::string("the model has ")) +
                         std::to_string(heads_shown) + " heads, counted from 1");
    if (spec.layer >= info.layers)
        throw UsageError("layer " + std::to_string(spec.layer + 1) + " is out of range: the model has " + std::to_string(info.layers) +
                         " layers, counted from 1");
    if (!is_positive_float32(spec.temperature))
        throw UsageError("the temperature must be a positive number that float32 holds (the trace keeps it so)");
    for (const auto& [layer, head] : spec.ablate) {
        if (layer >= info.layers)
            throw UsageError("the ablated layer " + std::to_string(layer + 1) + " is out of range: the model has " + std::to_string(info.layers) + " layers");
        if (head && *head >= info.heads)
            throw UsageError("the ablated head " + std::to_string(*head + 1) + " is out of range: the model has " + std::to_string(info.heads) + " heads");
    }
    if (spec.roles && (spec.roles < 2 || 2 * spec.roles > info.context))
        throw UsageError("head roles run " + std::to_string(spec.roles) + " random tokens twice: between 2 and half the context (" +
                         std::to_string(info.context / 2) + ")");
    if (spec.ablate_each && *spec.ablate_each >= info.layers)
        throw UsageError("layer " + std::to_string(*spec.ablate_each + 1) + " is out of range: the model has " + std::to_string(info.layers) + " layers");
    if (spec.top_p && !(*spec.top_p > 0.0 && *spec.top_p <= 1.0)) throw UsageError("top-p must be in (0, 1]");
    const auto& stat_names = head_stat_names();
    if (spec.explain && (spec.explain->i >= T || spec.explain->j >= T))
        throw UsageError("cell " + std::to_string(spec.explain->i + 1) + "," + std::to_string(spec.explain->j + 1) + " is out of range: the prompt has " +
                         std::to_string(T) + " tokens, counted from 1");
    const auto linear = std::find_if(c.layer_specs.begin(), c.layer_specs.end(), [](const LayerSpec& ls) { return ls.attention == AttentionKind::deltanet; });
    if (linear != c.layer_specs.end()) {  // Gated DeltaNet layers have no softmax weights to gather, average or switch off by head
        const std::string first = std::to_string(static_cast<std::size_t>(linear - c.layer_specs.begin()) + 1);
        const char* asked = spec.view ? "the model view" : spec.rollout ? "attention rollout" : spec.roles ? "head roles" : nullptr;
        if (asked)
            throw UsageError(std::string(asked) + " reads the softmax weights of every layer, and layer " + first +
                             " is a Gated DeltaNet layer (linear attention: a state, no softmax); show one layer instead, with its effective attention matrix");
        std::vector<std::size_t> ablated;
        for (const auto& a : spec.ablate) ablated.push_back(a.first);
        if (spec.ablate_each) ablated.push_back(*spec.ablate_each);
        for (std::size_t l : ablated)
            if (kind_of(l) == AttentionKind::deltanet)
                throw UsageError("layer " + std::to_string(l + 1) + " is a Gated DeltaNet layer, whose heads are not switched off here: ablate the heads of a "
                                 "full-attention layer");
    }
    for (const auto& [what, id] : {std::make_pair("the answer", spec.answer), std::make_pair("the wrong answer", spec.wrong)})
        if (id && *id >= c.vocab)
            throw UsageError(std::string(what) + "'s token id " + std::to_string(*id) + " is out of range: the vocabulary has " + std::to_string(c.vocab));
    if (!spec.corrupt.empty()) {
        if (spec.corrupt.size() != T)
            throw UsageError("the corrupted prompt has " + std::to_string(spec.corrupt.size()) + " tokens and the prompt " + std::to_string(T) +
                             ": activation patching swaps activations position by position, so both need the same number");
        check_prompt(c, spec.corrupt, 0);
    }
    if (spec.circuits && spec.circuit_offset >= info.context)
        throw UsageError("the offset " + std::to_string(spec.circuit_offset) + " is out of range: a query and a key are less than the context (" +
                         std::to_string(info.context) + ") apart");
    if (!spec.sort.empty() && std::find(stat_names.begin(), stat_names.end(), spec.sort) == stat_names.end())
        throw UsageError("heads are ranked by entropy, max_weight, first_token, previous_token or diagonal, not \"" + spec.sort + "\"");

    Trace trace;
    trace.command = "model";  // the gpt2 command names itself
    trace.tokens = tokens;
    trace.set_param("model", info.file);
    trace.set_param("naming", info.naming);
    trace.set_param("layout", info.layout);
    trace.set_param("dtype", info.dtype);
    if (!info.biases) trace.set_param("biases", std::string("none in the file (bias=False): zeros"));
    trace.set_param("vocab", static_cast<ull>(info.vocab));
    trace.set_param("context", static_cast<ull>(info.context));
    trace.set_param("width", static_cast<ull>(info.width));
    trace.set_param("layers", static_cast<ull>(info.layers));
    trace.set_param("heads", static_cast<ull>(info.heads));
    if (info.kv_heads) trace.set_param("kv_heads", static_cast<ull>(info.kv_heads));
    if (info.head_dim) trace.set_param("head_dim", static_cast<ull>(info.head_dim));
    {  // the layers whose heads are of another size (Gemma 4's full layers): said beside head_dim
        std::map<std::pair<std::size_t, std::size_t>, std::string> other;  // (d_k, G) -> "3, 6"
        for (std::size_t l = 0; l < m.weights.blocks.size(); ++l)
            if (const HeadsBlock* h = m.weights.blocks[l].attention->as<HeadsBlock>())
                if (h->w.head_size() != m.weights.config.head_size() || h->w.key_heads() != m.weights.config.key_heads()) {
                    std::string& layers = other[{h->w.head_size(), h->w.key_heads()}];
                    layers += (layers.empty() ? "" : ", ") + std::to_string(l + 1);
                }
        std::string said;
        for (const auto& [size, layers] : other)
            said += (said.empty() ? "" : "; ") + std::string(layers.find(',') == std::string::npos ? "layer " : "layers ") + layers + ": " +
                    std::to_string(size.first) + " features each, " + std::to_string(size.second) + " key/value head" + (size.second == 1 ? "" : "s");
        if (!said.empty()) trace.set_param("heads_elsewhere", said);
    }
    for (const auto& [field, value] : info.config) trace.set_param("config." + field, value);  // config.json, as the model read it
    trace.set_param("num_tokens", static_cast<ull>(T));
    trace.set_param("layer_index", Index{{spec.layer}, false, ""});
    if (spec.head) trace.set_param("head_index", Index{{*spec.head}, false, ""});
    trace.set_param("causal", true);
    trace.set_param("temperature", spec.temperature);
    {  // each layer's kind, where the layers differ (sliding and full, with and without RoPE)
        const auto& layers = m.weights.config.layer_specs;
        const bool windows = std::any_of(layers.begin(), layers.end(), [](const LayerSpec& la) { return la.window.has_value(); });
        const bool nope = m.weights.config.positions == PositionKind::rope &&
                          std::any_of(layers.begin(), layers.end(), [](const LayerSpec& la) { return !la.rope; });
        for (const LayerSpec& la : layers) {
            std::string kind = !windows ? "" : la.window ? "sliding window, W = " + std::to_string(*la.window) : "full attention";
            if (nope && !la.rope) kind += (kind.empty() ? "" : ", ") + std::string("no RoPE");
            trace.layer_kinds.push_back(kind);
        }
        if (!windows && !nope) trace.layer_kinds.clear();
    }
    Recorder rec(trace);

    Step& id_step = rec.add_plain("token_ids", "Token ids", "ids", integer_tensor({ids.begin(), ids.end()}, {T}), {Axis::token});
    if (!info.unused.empty()) {  // what the checkpoint holds that this model does not read
        std::string names;
        for (std::size_t i = 0; i < info.unused.size() && i < 8; ++i) names += (i ? ", " : "") + info.unused[i];
        if (info.unused.size() > 8) names += ", and " + std::to_string(info.unused.size() - 8) + " more";
        id_step.note = "The checkpoint also holds " + std::to_string(info.unused.size()) + " tensor" +
                       (info.unused.size() == 1 ? "" : "s") + " this model does not use: " + names + ".";
    }
    PromptTap tap(rec, spec, info, model, T, recording.explainable && !recording.summary);
    DecoderCache cache = spec.start_recent ? make_start_recent_cache(m.weights.config, spec.start_recent->first, spec.start_recent->second)
                                           : make_cache(m.weights.config);
    rec.summarise_from_here(recording.summary);  // the forward's steps: none ends the trace
    const Cube xf = decoder_forward(m.weights, ids, spec.generate ? &cache : nullptr, &tap);
    rec.summarise_from_here(false);
    if (spec.view) record_view(rec, spec, info, m.weights.config, tap.grid, T);
    if (spec.view && !tap.chosen_by_layer.empty()) record_experts_by_layer(rec, m.weights, tap.chosen_by_layer, T);
    const Words words = words_of(m.weights.config, &m.weights);
    rec.add("ln_f", "The final " + words.norm + " (" + words.final_norm + ")", words.final_norm + "(x)", xf, tokens_features);
    const Mat logits = decoder_logits(m.weights, xf, T - 1);  // the last position's
    record_candidates(rec, spec, logits, m.weights.config);
    if (!spec.ablate.empty() || spec.ablate_each) {
        std::size_t best = 0;
        for (std::size_t v = 1; v < logits.shape(1); ++v) best = logits(0, v) > logits(0, best) ? v : best;
        record_ablation(rec, spec, m.weights, ids, best);
    }
    if (spec.roles) record_roles(rec, spec, m.weights);
    const auto entries = std::make_shared<CircuitEntries>();  // the circuits' grids' entries, to write out any after the walk
    if (spec.attribution || !spec.corrupt.empty()) {  // the metric's answer: the one asked for, else the model's top token
        std::size_t answer = 0;
        for (std::size_t v = 1; v < logits.shape(1); ++v) answer = logits(0, v) > logits(0, answer) ? v : answer;
        if (spec.answer) answer = *spec.answer;
        if (spec.wrong && *spec.wrong == answer)
            throw UsageError("the wrong answer is the answer itself (" + token_labels({answer}, spec.tokenizer).front() + (spec.answer ? "" : ", the model's top token") +
                             "): logit(a) − logit(b) would be 0 in every run; name another token, or measure the answer's log-probability alone");
        trace.set_param("answer", token_labels({answer}, spec.tokenizer).front());
        if (spec.wrong) trace.set_param("wrong", token_labels({*spec.wrong}, spec.tokenizer).front());
        if (spec.attribution) record_attribution(rec, spec, m.weights, ids, answer, *entries);
        if (!spec.corrupt.empty()) record_patching(rec, spec, m.weights, ids, answer, *entries);
    }
    if (spec.circuits) {
        trace.set_param("circuits", true);
        record_head_circuits(rec, spec, m.weights, ids);
    }
    if (spec.rollout) {
        trace.set_param("rollout", true);
        record_rollout(rec, tap.head_means);
    }
    if (spec.logit_lens) {
        trace.set_param("logit_lens", true);
        record_logit_lens(rec, spec, m.weights, tap.residuals);
    }
    if (spec.generate) generate(rec, m, ids, std::move(cache), logits, spec);
    if (spec.explain) {  // one cell of the layer shown, written out
        const std::size_t head = spec.head.value_or(0);
        trace.set_param("explain_index", Index{{spec.explain->i, spec.explain->j}, true, shown_linear ? "effective_attention" : "weights"});
        trace.set_param("explain_head_index", Index{{head}, false, ""});
        const auto shown = std::find_if(tap.kept.begin(), tap.kept.end(), [&](const KeptAttention& k) { return k.layer->layer == spec.layer; });
        explain_cell(rec, CellRef{spec.layer, head, spec.explain->i, spec.explain->j}, view_of(*shown));
    }
    if (recording.explainable && !recording.summary)
        trace.explainer = combined(keep_for_explaining(std::move(tap.kept)),
                                   entries->attribution || entries->patching ? entries_explainer(entries) : nullptr);
    try {
        return finish(std::move(trace), recording);
    } catch (const RuntimeError&) {  // non-finite: a weight of the file, rather than an overflow?
        check_weights_finite(m);
        throw;
    }
}

}  // namespace attnwalk
