// What the model walk will hold and compute, from the sizes alone (and the tokenizer's).
#include "model_walk.hpp"

namespace attnwalk {

using namespace model_walk;

Cost model_walk_cost(const Model& model, std::size_t T, const ModelSpec& spec, const Recording& recording) {
    const bool explainable = recording.explainable && !recording.summary;  // as walk_model's tap keeps them
    const LoadedModel& m = *model;
    const DecoderConfig& c = m.weights.config;
    const double L = static_cast<double>(c.layers), C = static_cast<double>(c.width), H = static_cast<double>(c.heads);
    const double G = static_cast<double>(c.key_heads()), d = static_cast<double>(c.head_size()), V = static_cast<double>(c.vocab);
    // a mixture of experts (in every layer, or after DeepSeek's dense first ones): the router, and each token through its k experts
    const auto moe_block = std::find_if(m.weights.blocks.begin(), m.weights.blocks.end(), [](const BlockWeights& b) { return b.feed_forward->as<ExpertsBlock>(); });
    const MoeWeights* moe = moe_block == m.weights.blocks.end() ? nullptr : &moe_block->feed_forward->get<ExpertsBlock>().w;
    const auto dense_block = std::find_if(m.weights.blocks.begin(), m.weights.blocks.end(), [](const BlockWeights& b) { return b.feed_forward->as<MlpBlock>(); });
    const double dense_hidden = dense_block == m.weights.blocks.end() ? 0.0 : static_cast<double>(dense_block->feed_forward->get<MlpBlock>().up.out());
    const double expert_hidden = moe ? 2.0 * static_cast<double>(moe->experts.front().down.in()) : 0.0;  // an expert's gate and up, per token
    const double I = m.weights.blocks.empty() ? 4.0 * C : std::max(dense_hidden, expert_hidden);
    const double mlp = std::max(moe ? moe_work(*moe, 1) : 0.0, dense_block == m.weights.blocks.end() ? 0.0 : (gated(c.mlp) ? 3.0 : 2.0) * C * dense_hidden);
    // each layer's heads as they are (Gemma 4's full layers: global_head_dim, num_global_key_value_heads; a layer that reads
    // another's keys and values projects none and caches none), each layer's MLP as wide as it is (Gemma 4's double-wide ones)
    double projections = 0.0, d_sum = 0.0, cached = 0.0, mlps = 0.0, qkv_widest = (H + 2.0 * G) * d;
    for (std::size_t l = 0; l < m.weights.blocks.size(); ++l) {
        const BlockWeights& b = m.weights.blocks[l];
        const HeadsBlock* h = b.attention->as<HeadsBlock>();
        const double dl = h ? static_cast<double>(h->w.head_size()) : d, Gl = h ? static_cast<double>(h->w.key_heads()) : G;
        const bool reads = l < c.layer_specs.size() && c.layer_specs[l].kv_from.has_value();
        projections += C * (H + (reads ? 0.0 : 2.0 * Gl)) * dl + H * dl * C;
        d_sum += dl;
        if (!reads) cached += Gl * dl;
        qkv_widest = std::max(qkv_widest, (H + 2.0 * Gl) * dl);
        const MlpBlock* dense_l = b.feed_forward->as<MlpBlock>();
        mlps += dense_l ? (gated(c.mlp) ? 3.0 : 2.0) * C * static_cast<double>(dense_l->up.out()) : mlp;
    }
    if (m.weights.blocks.empty()) projections = L * (C * (H + 2.0 * G) * d + H * d * C), d_sum = L * d, cached = L * G * d, mlps = L * mlp;
    // per-layer inputs (Gemma 4 E2B, E4B): the projection of x to L·P, and each layer's gate and projection back
    const double P = static_cast<double>(c.per_layer_input);
    const double per_layer = P > 0.0 ? C * L * P + L * 2.0 * C * P : 0.0;
    const double per_token = projections + mlps + per_layer;  // the layers' multiply-adds for one token
    const auto attention = [&](double queries, double keys) { return H * queries * keys * (2.0 * d_sum + 16.0 * L); };
    const double N = static_cast<double>(std::min<std::size_t>(spec.generate, c.context > T ? c.context - T : 0));
    const double t = static_cast<double>(T), all = t + N;
    // DeepSeek Sparse Attention's indexer (DeepSeek-V3.2): its projections per token (wq_b on the
    // query latent, wk, weights_proj), H_I·(d_I + 1) per query and key it scores (every earlier
    // key), and its top-k; its T×T dots per index head and its scores, kept mask and cached keys
    const LatentIndexerWeights* ix = nullptr;
    for (const BlockWeights& b : m.weights.blocks)
        if (const LatentBlock* lb = b.attention->as<LatentBlock>(); lb && lb->w.indexer) {
            ix = &*lb->w.indexer;
            break;
        }
    const double HI = ix ? static_cast<double>(ix->heads) : 0.0, dI = ix ? static_cast<double>(ix->head_dim()) : 0.0;
    const double index_per_token = ix ? L * (static_cast<double>(ix->wq_b.in()) * HI * dI + C * (dI + HI)) : 0.0;
    const auto index_work = [&](double queries, double keys) { return L * queries * keys * (HI * (dI + 1.0) + 8.0); };
    Cost cost;
    // the prompt, every generated token against the cache, then the whole sequence again
    cost.work = per_token * t + attention(t, t) + V * C;
    if (N > 0) cost.work += per_token * N + attention(N, all) + N * V * C + per_token * all + attention(all, all) + V * C;
    if (ix) {
        cost.work += index_per_token * t + index_work(t, t);
        if (N > 0) cost.work += index_per_token * (N + all) + index_work(N, all) + index_work(all, all);
    }
    // floats kept: a layer's working set (x, norms, q/k/v, the MLP's hidden), the layer shown
    // in full (its T×T tensors four times in the forward, twice in the trace), the view
    // (every layer's weights), summaries of the rest, the logits, the cache
    // (a mixture of experts: an expert's rows in, its gate and up, its hidden, its output)
    // (per-layer inputs: every layer's, the table's rows and the projection, T·L·P each)
    const double layer_rows = t * (10.0 * C + 3.0 * qkv_widest + 2.0 * I + (moe ? 2.0 * C + 1.5 * I : 0.0) + 3.0 * L * P);
    // (only summed: each core's scores and weights of one head at a time)
    const BlockWeights* shown_block = spec.layer < m.weights.blocks.size() ? &m.weights.blocks[spec.layer] : nullptr;
    const bool summed = sums_shown_layer(spec, recording.summary, explainable) && shown_block && c.layer_specs[spec.layer].attention == AttentionKind::heads &&
                        sums_square_summaries(c.head_size(), T);
    // (a layer not shown makes no T×T tensor: the blocked path, or attend's sums where they are made)
    const double shown_squares = summed ? 2.0 * std::min(H, static_cast<double>(cores())) * t * t : 6.0 * H * t * t;
    // a Gated DeltaNet layer shown: its effective matrix (H_v·T² floats, and the trace's copy), each
    // core's written errors U while it is made (T² doubles a head at a time)
    const DeltaNetBlock* shown_delta = shown_block ? shown_block->attention->as<DeltaNetBlock>() : nullptr;
    const double Hv = shown_delta ? static_cast<double>(shown_delta->w.v_heads) : 0.0;
    const double delta_squares = shown_delta ? 2.0 * Hv * t * t + 2.0 * std::min(Hv, static_cast<double>(cores())) * t * t : 0.0;
    const double shown = (spec.all_layers ? L : 1.0) * layer_rows + shown_squares + delta_squares;
    // latent attention (MLA) takes no blocked path: every layer makes its scores in two parts, their sum and the weights,
    // and its heads' keys and values from the latent
    const bool latent = any_layer(c, AttentionKind::latent);
    const double latent_rows = latent ? 5.0 * H * t * t + 4.0 * t * H * d : 0.0;
    const double index_rows = ix ? (HI + 4.0) * t * t + t * (HI * dI + 3.0 * dI + HI) : 0.0;  // the dots, scores, kept mask and top-k; q^I, k^I, the gates
    const double working = layer_rows + latent_rows + index_rows + (spec.view ? 4.0 * H * t * t : 0.0);
    const double view = spec.view ? 2.0 * L * H * t * t : 0.0;
    const double cache = N > 0 ? 2.0 * 2.0 * cached * all + 6.0 * H * all * all + (ix ? L * dI * all + (HI + 4.0) * all * all : 0.0) : 0.0;  // and the recomputation's T×T
    bool sixteen = false;  // 16-bit weights widened, as the first layer's show
    if (!m.weights.blocks.empty()) {
        const BlockWeights& first = m.weights.blocks.front();
        const MlpBlock* first_mlp = first.feed_forward->as<MlpBlock>();
        const HeadsBlock* first_heads = first.attention->as<HeadsBlock>();
        const LatentBlock* first_latent = first.attention->as<LatentBlock>();
        sixteen = (first_mlp && first_mlp->up.ext16) || (first_heads && first_heads->w.query.ext16) || (first_latent && first_latent->w.kv_a_proj.ext16);
    }
    // a layer kept to be explained: its forward (the rows, Q, K, V and their heads, the T×T
    // tensors) and the rows entering it; a latent attention layer also its parts (the score's
    // two parts, its latents and rotary parts)
    const double kept_layer = t * (2.0 * C + 3.0 * qkv_widest) + 4.0 * H * t * t + (latent ? 2.0 * H * t * t + 3.0 * t * H * d : 0.0);
    const double kept = spec.explain || explainable ? (explainable && spec.view ? L : 1.0) * kept_layer : 0.0;
    // the logit lens: every layer's stream kept, each through the final norm and the head (T×V logits at a time)
    const double lens = spec.logit_lens ? (L + 1.0) * t * C * 2.0 + 2.0 * t * V + 4.0 * (L + 1.0) * t : 0.0;
    if (spec.logit_lens) cost.work += (L + 1.0) * t * V * (C + 16.0);
    const double rollout = spec.rollout ? (L + 4.0) * t * t + 4.0 * H * t * t : 0.0;  // every layer's mean, and its forward's T×T tensors
    if (spec.rollout) cost.work += L * t * t * (t + H);
    // ablation: the original and each ablated forward again, with all T rows of logits
    const double ablations = (spec.ablate.empty() ? 0.0 : 2.0) + (spec.ablate_each ? H + 1.0 : 0.0);
    cost.work += ablations * (per_token * t + attention(t, t) + t * V * (C + 16.0));
    const double ablation_bytes = ablations > 0 ? 2.0 * t * V + layer_rows + 4.0 * H * t * t : 0.0;
    // circuits: attribution's forward keeping every layer's heads (their T×T tensors, the parts of the stream); patching's
    // clean and corrupted forwards kept so and again plain (the metric), then one forward per patch: L·T positions, L·H heads, 2·L outputs
    const double patches = spec.corrupt.empty() ? 0.0 : L * t + L * H + 2.0 * L;
    const double circuit_runs = (spec.attribution ? 1.0 : 0.0) + (spec.corrupt.empty() ? 0.0 : 4.0 + patches);
    cost.work += circuit_runs * (per_token * t + attention(t, t) + V * C) + (spec.attribution ? L * H * d * C : 0.0) + (spec.corrupt.empty() ? 0.0 : L * H * t * H * d * C);
    const double kept_runs = (spec.attribution ? 1.0 : 0.0) + (spec.corrupt.empty() ? 0.0 : 2.0);
    // and what writing out any entry after the walk needs (circuit_entries.cpp): each head's and layer's output vector, the
    // direction; each patch's swapped numbers (the stream entering every layer, the heads' z and the outputs at the last position)
    const double entries = (spec.attribution ? L * (H + 2.0) * C + 3.0 * L * (H + 2.0) + C : 0.0) +
                           (spec.corrupt.empty() ? 0.0 : 2.0 * L * t * C + 2.0 * L * H * d + 4.0 * L * C + 10.0 * (L * t + L * H + 2.0 * L));
    const double circuit_bytes =
        circuit_runs > 0 ? kept_runs * L * t * (6.0 * C + H * d) + layer_rows + 6.0 * H * t * t + 2.0 * L * (H + t + 2.0) + entries : 0.0;
    // a head's circuits: every token of the vocabulary through W_V,g and, unembedded, through W_O,h (in double), the T×T tables
    if (spec.circuits) cost.work += V * (4.0 * C + 2.0 * C * d + d * d) + t * (4.0 * C * d + t * (2.0 * d + C));
    const double qkov_bytes = spec.circuits ? 2.0 * (4.0 * C * d + d * d + t * (C + 4.0 * d)) + 4.0 * t * t + 2.0 * C : 0.0;
    const double r2 = 2.0 * static_cast<double>(spec.roles);  // head roles: every layer's weights for the 2n tokens
    if (spec.roles) cost.work += per_token * r2 + attention(r2, r2);
    const double roles_bytes = spec.roles ? L * H * r2 * r2 * 2.0 + r2 * (10.0 * C + 2.0 * I) : 0.0;
    // StreamingLLM's cache: a full cache beside it (the prompt again, each token again with its
    // logits), every cached key rotated again at each step
    double streamed = 0.0;
    if (spec.start_recent && N > 0) {
        cost.work += per_token * t + attention(t, t) + per_token * N + attention(N, all) + N * V * C + N * cached * all * 4.0;
        streamed = 2.0 * 2.0 * cached * all + 2.0 * G * d * all + 4.0 * V + 4.0 * N;
    }
    // 16-bit weights: each core's widened block, or a product's input de-interleaved for the kernel that
    // widens in registers; and each core's packed strip of 32 columns (products on the AVX-512 kernels:
    // float32 weights, or the weights times the values, over every key), kept by its thread
    const double threads = static_cast<double>(cores());
    const double widening = (sixteen ? threads * 1048576.0 + all * std::max(C, I) : 0.0) + threads * 32.0 * std::max({C, I, all});
    cost.bytes = 4.0 * (shown + working + view + cache + streamed + kept + lens + rollout + ablation_bytes + circuit_bytes + qkov_bytes + roles_bytes + 2.0 * V + widening);
    if (spec.tokenizer) cost.bytes += spec.tokenizer->memory_bytes();  // held through the walk: it names the tokens
    return cost;
}

Cost tokenize_cost(std::size_t n, const Tokenizer* tokenizer) {
    const double b = static_cast<double>(n);
    // the pieces, symbols and heap, and the tokenizer's tables; the merges
    return {256.0 * b + (tokenizer ? tokenizer->memory_bytes() : 0.0), 64.0 * b * (1.0 + std::log2(b + 1.0))};
}

}  // namespace attnwalk
