// Beyond the chapter: kvcache, rope, flash, sdpa and params. Each parses its options
// and makes one call into lib/ (walk_beyond.cpp).
#include <cmath>
#include <utility>
#include <memory>

#include "attnwalk/errors.hpp"
#include "commands.hpp"

namespace attnwalk::app {

namespace {

// Seeded (or read) fused weights for H heads, G key/value heads; `out_proj` as MultiHeadAttention.
struct LayerOptions {
    WeightsOptions weights;
    std::size_t heads = 2;
    std::optional<std::size_t> kv_heads;
};

void add_layer_options(CLI::App& sub, LayerOptions& o, Shell& shell, std::size_t heads) {
    o.heads = heads;
    add_weights_options(OptionBuilder(sub), o.weights, shell, true);
    sub.add_option("--heads", o.heads, "Number of heads H")->check(whole_number(1))->capture_default_str();
    sub.add_option("--kv-heads", o.kv_heads, "Grouped-query attention: G key/value heads (G divides H; 1 = multi-query)")
        ->check(whole_number(1));
}

Weights layer_weights(const LayerOptions& o, const Embeddings& input, Randomness& random, bool out_proj, std::size_t d_out) {
    // (the heads and d_out are checked here, before drawing, to name the options)
    // (a weights file says its own d_out, checked when it is read: here only H and G)
    const std::optional<std::size_t> width = o.weights.file ? std::nullopt : std::optional<std::size_t>(o.weights.d_out.value_or(d_out));
    if (auto problem = head_shape_problem(width, o.heads, o.kv_heads.value_or(0))) throw UsageError(*problem + heads_hint(width, o.heads));
    WeightsShape shape{input.dim(), d_out, o.heads, HeadLayout::fused, out_proj};
    shape.kv_heads = o.kv_heads.value_or(0);
    WeightsOptions w = o.weights;
    if (!w.d_out) w.d_out = d_out;
    return make_weights(w, shape, random);
}

// The input, read and checked against the budget, and the layer's weights: from a file,
// --seed, or mha's default seed (recorded as default_seed by `finish`).
struct Layer {
    Embeddings input;
    Weights weights;
    bool default_seed = false;

    Trace finish(Trace trace) const {
        if (default_seed) trace.set_param("default_seed", true);
        return trace;
    }
};

// `cost`: the walk's (default: walk_cost) from the input's shape, the width and the heads.
using LayerCost = std::function<Cost(const InputShape&, std::size_t width, std::size_t heads)>;

Layer prepare_layer(const Shell& shell, const LayerOptions& o, bool out_proj, std::size_t d_out, const LayerCost& cost = {}) {
    Layer layer;
    layer.default_seed = !o.weights.file && !o.weights.seed;
    Randomness random(layer.default_seed ? default_layer_seed : o.weights.seed, std::nullopt);
    layer.input = prepare_input(shell, [&](const InputShape& s) {
        const std::size_t width = o.weights.d_out.value_or(d_out);
        return cost ? cost(s, width, o.heads) : walk_cost(s.batch, s.tokens, s.d_in, width, o.heads, s.tokens);
    });
    layer.weights = layer_weights(o, layer.input, random, out_proj, d_out);
    return layer;
}

// --explain I,J and --head H (the head --explain writes out).
void add_explain_and_head(CLI::App& sub, std::optional<std::string>& explain, std::size_t& head) {
    const MaybeOption e = add_explain_option(OptionBuilder(sub), explain);
    add_counted_option(OptionBuilder(sub), "--head", head, "The head --explain writes out, counted from 1")->needs(e);
}

// rope's default d_out: one head of d_h = 4, two frequencies to see.
constexpr std::size_t rope_d_out = 4;

// --cache-dtype: the bytes of one cached value.
std::size_t dtype_bytes(const std::string& name) { return name == "float32" ? 4 : 2; }

}  // namespace

ATTNWALK_COMMAND(kvcache) {
    CLI::App* sub = add_command(cli, shell, "kvcache",
                                "  attnwalk kvcache                          # mha's weights (seed 123), one token at a time\n"
                                "  attnwalk kvcache --window 3               # a sliding window: the cache keeps 3 entries\n"
                                "  attnwalk kvcache --heads 4 --d-out 8 --kv-heads 1   # multi-query: one cached head\n"
                                "  attnwalk kvcache --layers 12 --context 1024 --steps cache_bytes   # the cache of a 12-layer model\n");
    struct Options {
        LayerOptions layer;
        KvCacheSpec spec;  // the options' defaults are the library's
        std::optional<std::size_t> context;
        std::string dtype = "float32";
        std::optional<std::string> explain;
    };
    auto o = std::make_shared<Options>();
    add_layer_options(*sub, o->layer, shell, 2);
    add_explain_and_head(*sub, o->explain, o->spec.explain_head);
    sub->add_option("--window", o->spec.window, "Sliding window: the cache keeps the last W keys and values")->check(whole_number(1));
    sub->add_option("--layers", o->spec.layers, "Layers, for the cache's size")->check(whole_number(1))->capture_default_str();
    sub->add_option("--context", o->context, "Tokens the cache's size is given for (default: the input's)")->check(whole_number(1));
    sub->add_option("--cache-dtype", o->dtype, "float32, bfloat16 or float16, for the cache's size")
        ->check(CLI::IsMember({"float32", "bfloat16", "float16"}))->capture_default_str();
    sub->callback([&shell, o] {
        shell.headline = headline_of(lesson("kvcache"));
        shell.walk = [&shell, o] {
            const Layer layer = prepare_layer(shell, o->layer, true, default_d_out, [](const InputShape& s, std::size_t width, std::size_t heads) {
                return kvcache_cost(s.batch, s.tokens, s.d_in, width, heads);
            });
            KvCacheSpec spec = o->spec;
            spec.context_tokens = o->context.value_or(0);
            spec.bytes_per_value = dtype_bytes(o->dtype);
            if (o->explain) spec.explain = parse_cell(*o->explain, layer.input.tokens);
            return layer.finish(walk_kvcache(layer.input, layer.weights, spec, shell.recording));
        };
    });
}

ATTNWALK_COMMAND(rope) {
    CLI::App* sub = add_command(cli, shell, "rope",
                                "  attnwalk rope                        # one head, d_k = 4, base 10000\n"
                                "  attnwalk rope --rope-base 100 --shift 10   # faster turns; positions + 10\n"
                                "  attnwalk rope --heads 2 --d-out 8 --steps 'rope_*,max_difference'\n");
    struct Options {
        LayerOptions layer;
        RopeSpec spec;  // the options' defaults are the library's
        std::optional<std::string> explain;
    };
    auto o = std::make_shared<Options>();
    add_layer_options(*sub, o->layer, shell, 1);
    add_explain_and_head(*sub, o->explain, o->spec.explain_head);
    sub->add_option("--rope-base", o->spec.base, "The base of the frequencies θ_c = base^(−2(c − 1)/d_k)")
        ->check(number_check("B", [](double v) { return std::isfinite(v) && v > 1.0; }, "must be a number above 1"))
        ->capture_default_str();
    sub->add_option("--shift", o->spec.shift, "Shift every position by K for the check")->check(whole_number(0))->capture_default_str();
    sub->callback([&shell, o] {
        shell.headline = headline_of(lesson("rope"));
        shell.walk = [&shell, o] {
            const Layer layer = prepare_layer(shell, o->layer, false, rope_d_out);
            RopeSpec spec = o->spec;
            if (o->explain) spec.explain = parse_cell(*o->explain, layer.input.tokens);
            return layer.finish(walk_rope(layer.input, layer.weights, spec, shell.recording));
        };
    });
}

ATTNWALK_COMMAND(flash) {
    CLI::App* sub = add_command(cli, shell, "flash",
                                "  attnwalk flash --block 2                 # raw embeddings, blocks of 2 keys\n"
                                "  attnwalk flash --block 4 --causal --seed 123   # projections, causal\n"
                                "  attnwalk flash --block 2 --window 2      # a window: rows with a fully masked block\n");
    struct Options {
        WeightsOptions weights;
        FlashSpec spec;  // the options' defaults are the library's
        std::optional<std::string> explain;
    };
    auto o = std::make_shared<Options>();
    add_explain_option(OptionBuilder(*sub), o->explain);
    sub->add_option("--block", o->spec.block, "Keys per block")->check(whole_number(1))->capture_default_str();
    sub->add_flag("--causal", o->spec.causal, "Mask future tokens");
    sub->add_option("--window", o->spec.window, "Sliding window of W keys (with --causal)")->check(whole_number(1));
    add_weights_options(OptionBuilder(*sub), o->weights, shell);
    add_scale_option(OptionBuilder(*sub), o->spec.scale);
    sub->callback([&shell, o] {
        shell.headline = headline_of(lesson("flash"));
        shell.walk = [&shell, o] {
            if (o->spec.window && !o->spec.causal)
                throw UsageError("--window is a sliding window over the tokens before each query: add --causal");
            Randomness random(o->weights.seed, std::nullopt);
            const OneHead h = prepare_one_head(shell, o->weights, random, false, std::nullopt, 28.0);  // every block's scores and running sums
            FlashSpec spec = o->spec;
            if (o->explain) spec.explain = parse_cell(*o->explain, h.input.tokens);
            return walk_flash(h.input, h.weights, spec, shell.recording);
        };
    });
}

ATTNWALK_COMMAND(sdpa) {
    CLI::App* sub = add_command(cli, shell, "sdpa",
                                "  attnwalk sdpa --is-causal                      # L = S: the usual causal mask\n"
                                "  attnwalk sdpa --queries 2 --is-causal          # 2 queries, 6 keys: top-left vs bottom-right\n"
                                "  attnwalk sdpa --attn-mask '[[1,1,0,0,0,0],[0,0,0,0,0,0],[1,1,1,1,1,1],[1,1,1,1,1,1],[1,1,1,1,1,1],[1,1,1,1,1,1]]'\n"
                                "                                                 # bool mask; row 2 fully masked: NaN, 0 or uniform\n"
                                "  attnwalk sdpa --attn-mask mask.json --mask-dtype float   # added to the scores\n"
                                "  attnwalk sdpa --is-causal --dropout-p 0.5 --dropout-seed 123   # dropout on the weights\n");
    struct Options {
        WeightsOptions weights;
        std::optional<std::size_t> queries;
        std::optional<std::string> mask;
        std::string dtype = "bool";
        bool is_causal = false;
        std::optional<double> scale;
        double dropout_p = 0.0;
        std::optional<std::uint64_t> dropout_seed;
    };
    auto o = std::make_shared<Options>();
    sub->add_option("--dropout-p", o->dropout_p, "dropout_p: SDPA drops attention weights whenever it is above 0 (train or not)")
        ->check(dropout_rate())
        ->capture_default_str();
    sub->add_option("--dropout-seed", o->dropout_seed, "Reseed the generator right before the dropout draw, like torch.manual_seed(S)")
        ->check(whole_number(0));
    sub->add_option("--queries", o->queries, "L: the last L tokens are the queries (default: all); the keys are every token")
        ->check(whole_number(1));
    CLI::Option* mask =
        sub->add_option("--attn-mask", o->mask, "L×S mask: a JSON file, or the JSON array itself ([[1,0],...]; true/false or numbers)")
            ->check(non_empty());
    sub->add_option("--mask-dtype", o->dtype, "bool (nonzero = attend) or float (added to the scores)")
        ->check(CLI::IsMember({"bool", "float"}))->needs(mask)->capture_default_str();
    sub->add_flag("--is-causal", o->is_causal, "is_causal=True: the top-left causal mask")->excludes(mask);
    sub->add_option("--scale", o->scale, "SDPA's scale, a multiplier (default 1/√d)")
        ->check(positive_float32("S"));
    add_weights_options(OptionBuilder(*sub), o->weights, shell);
    sub->callback([&shell, o] {
        shell.headline = headline_of(lesson("sdpa"));
        shell.walk = [&shell, o] {
            Randomness random(o->weights.seed, o->dropout_seed);
            const OneHead h = prepare_one_head(shell, o->weights, random, false, std::nullopt, 24.0);  // the mask, the bias, both fills
            SdpaSpec spec;
            spec.dropout = random.dropout(o->dropout_p, true);
            spec.queries = o->queries;
            spec.is_causal = o->is_causal;
            spec.scale = o->scale;
            if (o->mask) {
                const bool inline_json = o->mask->find('[') != std::string::npos && o->mask->front() == '[';
                const std::string name = inline_json ? "--attn-mask" : source_name(*o->mask);
                spec.mask_is_bool = o->dtype == "bool";
                spec.attn_mask = parse_attn_mask(inline_json ? *o->mask : read_text_file(*o->mask), name, spec.mask_is_bool);
                spec.mask_source = inline_json ? "inline" : name;
            }
            return walk_sdpa(h.input, h.weights, spec, shell.recording);
        };
    });
}

ATTNWALK_COMMAND(params) {
    CLI::App* sub = cli.add_subcommand("params", lesson("params").summary);
    sub->footer("Examples:\n"
                "  attnwalk params                              # GPT-2's MHA: 768, 12 heads, no qkv bias: 2,360,064\n"
                "  attnwalk params --kv-heads 4                 # the same with grouped-query attention\n"
                "  attnwalk params --d-in 4096 --d-out 4096 --heads 32 --kv-heads 8 --layers 32 --context 8192\n"
                "  attnwalk params --heads 8 --kv-heads 4 --layers 34 --context 32768 --window 1024 --swa-ratio 5:1   # Gemma 3's 5:1 pattern\n"
                "  attnwalk params --layers 35 --context 32768 --kv-producing-layers 15   # cross-layer KV sharing\n"
                "  attnwalk params --layers 61 --kv-lora-rank 512 --qk-rope-head-dim 64   # MLA's latent cache\n");
    add_shell_options(OptionBuilder(*sub), shell, false);
    auto o = std::make_shared<ParamsSpec>();
    auto dtype = std::make_shared<std::string>("float32");
    sub->add_option("--d-in", o->d_in, "Input size d_in")->check(whole_number(1))->capture_default_str();
    sub->add_option("--d-out", o->d_out, "Output size d_out (H·d_k)")->check(whole_number(1))->capture_default_str();
    sub->add_option("--heads", o->heads, "Heads H")->check(whole_number(1))->capture_default_str();
    sub->add_option("--kv-heads", o->kv_heads, "Key/value heads G (default H)")->check(whole_number(1));
    sub->add_flag("--qkv-bias", o->qkv_bias, "The query, key and value layers have a bias");
    sub->add_flag("!--no-out-proj", o->out_proj, "No output projection (the wrapper's concatenation)");
    sub->add_option("--layers", o->layers, "Layers")->check(whole_number(1))->capture_default_str();
    sub->add_option("--context", o->context_length, "Tokens of a full context (for the KV cache)")->check(whole_number(1))->capture_default_str();
    sub->add_option("--cache-dtype", *dtype, "float32, bfloat16 or float16")
        ->check(CLI::IsMember({"float32", "bfloat16", "float16"}))->capture_default_str();
    auto ratio = std::make_shared<std::string>();
    CLI::Option* window = sub->add_option("--window", o->window, "Sliding-window layers keep the last W tokens (the cache's size)")
                              ->check(whole_number(1));
    sub->add_option("--swa-ratio", *ratio, "A:B sliding-window to full layers in every block (default 1:0, every layer)")
        ->check(non_empty())->needs(window);
    CLI::Option* sharing = sub->add_option("--kv-producing-layers", o->kv_producing_layers,
                                           "Cross-layer KV sharing: only N layers cache keys and values, the others reuse them")
                               ->check(whole_number(1))->excludes(window);
    CLI::Option* mla = sub->add_option("--kv-lora-rank", o->kv_lora_rank, "MLA: the cache keeps a latent of r numbers per token and layer")
                           ->check(whole_number(1))->excludes(window)->excludes(sharing);
    sub->add_option("--qk-rope-head-dim", o->qk_rope_head_dim, "MLA: the rotary key cached beside the latent")->check(whole_number(0))->needs(mla);
    sub->callback([&shell, o, dtype, ratio] {
        shell.headline = headline_of(lesson("params"));
        shell.walk = [&shell, o, dtype, ratio] {
            if (!shell.input.empty() || shell.sentence) throw UsageError("params counts from the sizes given: it reads no input");
            ParamsSpec spec = *o;
            spec.bytes_per_value = dtype_bytes(*dtype);
            if (!ratio->empty()) {
                const std::size_t colon = ratio->find(':');
                const auto whole = [](const std::string& t) {
                    return !t.empty() && t.size() < 10 && t.find_first_not_of("0123456789") == std::string::npos;
                };
                if (colon == std::string::npos || !whole(ratio->substr(0, colon)) || !whole(ratio->substr(colon + 1)))
                    throw UsageError("--swa-ratio takes A:B, whole numbers of sliding-window and full layers per block (5:1), not '" + *ratio + "'");
                spec.swa_layers = std::stoul(ratio->substr(0, colon));
                spec.full_layers = std::stoul(ratio->substr(colon + 1));
                if (spec.swa_layers + spec.full_layers == 0) throw UsageError("--swa-ratio 0:0 has no layers in a block");
            }
            return walk_params(spec);
        };
    });
}

}  // namespace attnwalk::app
