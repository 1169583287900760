// attnwalk mha: multi-head attention, fused or stacked heads.
#include <cmath>
#include <cstdlib>
#include <memory>
#include <vector>

#include "attnwalk/errors.hpp"
#include "commands.hpp"

namespace attnwalk::app {

namespace {

struct MhaOptions {
    WeightsOptions weights;
    std::optional<std::size_t> context_length;
    DropoutOptions dropout{0.0, std::nullopt, false, true};  // MultiHeadAttention(..., dropout=0.0)
    std::size_t heads = 2;
    std::optional<std::size_t> kv_heads, window;
    bool show_einsum = false;
    bool output_gate = false, head_roles = false;
    std::optional<std::string> sinks;
    std::string variant = "fused";
    std::optional<std::string> query, explain;
    std::size_t head = 0;
};

}  // namespace

ATTNWALK_COMMAND(mha) {
    CLI::App* sub = add_command(cli, shell, "mha",
                                "  attnwalk mha --batch 2 --seed 123 --heads 2          # the textbook's MultiHeadAttention\n"
                                "  attnwalk mha --variant wrapper --batch 2 --seed 123  # MultiHeadAttentionWrapper\n"
                                "  attnwalk mha --query journey         # one row of every head\n"
                                "  attnwalk mha --explain journey,Your --head 2   # one cell of head 2, every number\n"
                                "  attnwalk mha --heads 4 --d-out 8 --kv-heads 2    # grouped-query attention (1: multi-query)\n"
                                "  attnwalk mha --window 3          # sliding-window attention: each token sees 3 keys\n"
                                "  attnwalk mha --variant combined-qkv --show-einsum  # one qkv Linear; einsum notation\n"
                                "  attnwalk mha --output-gate --steps gate,gated,output   # gated attention (Qwen3-Next)\n"
                                "  attnwalk mha --sinks 0,2 --steps weights,sink_share    # learned sinks (gpt-oss)\n"
                                "  attnwalk mha --head-roles --steps 'role_*'     # induction and previous-token scores, written out\n");
    auto o = std::make_shared<MhaOptions>();
    const OptionBuilder options(*sub, shell.named);
    MaybeOption explain = add_explain_option(options, o->explain);
    options.add_option("--query", o->query, "Show one query only, in every head: its position (from 1) or its text")
        ->check(non_empty())
        ->excludes(explain);
    add_counted_option(options, "--head", o->head, "The head --explain writes out, counted from 1")->needs(explain);
    add_weights_options(options, o->weights, shell, true);
    add_context_length_option(options, o->context_length);
    add_dropout_options(options, o->dropout);
    options.add_option("--heads", o->heads, "Number of heads H")->check(whole_number(1))->capture_default_str();
    options.add_option("--variant", o->variant,
                       "fused (MultiHeadAttention), wrapper (MultiHeadAttentionWrapper) or combined-qkv (one Linear(d_in, 3·d_out))")
        ->check(CLI::IsMember({"fused", "wrapper", "combined-qkv"}))->capture_default_str();
    options.add_option("--kv-heads", o->kv_heads,
                       "Grouped-query attention: G key/value heads shared by the H query heads (G divides H; 1 = multi-query)")
        ->check(whole_number(1));
    options.add_option("--window", o->window, "Sliding-window attention: each token sees itself and the W − 1 tokens before it")
        ->check(whole_number(1));
    options.add_flag("--output-gate", o->output_gate,
                     "Gated attention (Qwen3-Next): the context times σ(X·W_gate) before out_proj; W_gate is drawn right after W_query, "
                     "as the textbook's GatedMultiHeadAttention builds it");
    options.add_option("--sinks", o->sinks,
                       "Learned sinks (gpt-oss): a logit per head (or one for all), separated by commas, joins each row's softmax and is "
                       "dropped after, so the rows sum to less than 1; given, not drawn")
        ->check(non_empty());
    options.add_flag("--head-roles", o->head_roles,
                     "Head roles on the input itself: its rows run twice, and per head the induction, previous-token and duplicate scores, "
                     "each mean written out");
    options.add_flag("--show-einsum", o->show_einsum, "Write each operation in einsum notation too (in the steps' notes)");
    sub->callback([&shell, o] {
        shell.headline = headline_of(lesson("mha"));
        shell.walk = [&shell, o] {
            const std::size_t H = o->heads;
            const bool stacked = o->variant == "wrapper";
            if (o->kv_heads && stacked)
                throw UsageError("--kv-heads groups the heads of the fused layer; the wrapper's heads each have their own keys (drop --variant wrapper)");
            if (o->kv_heads && o->variant == "combined-qkv")
                throw UsageError("--kv-heads: the combined qkv layer has one key/value head per query head (use --variant fused)");
            if (o->kv_heads)
                if (auto problem = head_shape_problem(std::nullopt, H, *o->kv_heads)) throw UsageError(*problem + heads_options);
            if (o->output_gate && o->variant != "fused")
                throw UsageError("--output-gate gates the fused layer's context before out_proj (GatedMultiHeadAttention): use --variant fused");
            if (o->sinks && o->variant != "fused")
                throw UsageError("--sinks joins the fused layer's softmax (gpt-oss's attention): use --variant fused");
            std::vector<float> sinks;  // decimal numbers separated by commas, each finite in float32
            if (o->sinks)
                for (const std::string& item : comma_items(*o->sinks)) {
                    char* end = nullptr;
                    const double v = std::strtod(item.c_str(), &end);
                    if (item.empty() || end != item.c_str() + item.size() || item.find_first_of("xXpP") != std::string::npos || item.find_first_of(" \t") == 0)
                        throw UsageError("--sinks takes decimal numbers separated by commas (0.5,-1), not '" + item + "'");
                    if (!std::isfinite(v) || std::fabs(v) > 3.0e38) throw UsageError("--sinks: each sink logit must be a finite number");
                    sinks.push_back(static_cast<float>(v));
                }
            if (o->window && !o->dropout.causal)
                throw UsageError("--window is a sliding window over the tokens before each query: it needs causal attention (drop --no-causal)");
            const HeadLayout layout = stacked ? HeadLayout::stacked : HeadLayout::fused;
            const std::size_t width = stacked ? H * o->weights.width() : o->weights.width();
            const bool default_seed = !o->weights.file && !o->weights.seed;
            Randomness random(default_seed ? default_layer_seed : o->weights.seed, o->dropout.seed);
            MhaSpec spec;
            spec.query = o->query ? std::optional<std::size_t>(0) : std::nullopt;  // named once the input is read
            spec.explain = o->explain ? std::optional<Cell>(Cell{}) : std::nullopt;
            spec.causal = o->dropout.causal;
            spec.window = o->window;
            spec.show_einsum = o->show_einsum;
            spec.head_roles = o->head_roles;
            spec.dropout = random.dropout(o->dropout.p, !o->dropout.eval);
            spec.explain_head = o->head;
            const Embeddings input = prepare_input(
                shell,
                [&](const InputShape& s) { return mha_cost(s.batch, s.tokens, s.d_in, width, H, layout, spec, shell.recording, o->kv_heads.value_or(0), o->output_gate || o->sinks.has_value()); },
                o->context_length);
            WeightsShape shape{input.dim(), default_d_out, H, layout, !stacked};
            shape.kv_heads = o->kv_heads.value_or(0);
            shape.combined = o->variant == "combined-qkv";
            shape.gate = o->output_gate;
            shape.sinks = sinks;
            if (!stacked && !o->weights.file)
                if (auto problem = head_shape_problem(o->weights.width(), H)) throw UsageError(*problem + heads_hint(o->weights.width(), H));
            const Weights weights = make_weights(o->weights, shape, random);
            if (!stacked)
                if (auto problem = head_shape_problem(output_width(*weights), H))
                    throw UsageError(*problem + " (d_out from the weights file, H from --heads)");
            if (o->query) spec.query = resolve_token(*o->query, input.tokens, "--query");
            if (o->explain) spec.explain = parse_cell(*o->explain, input.tokens);
            if (o->head >= H)
                throw UsageError("--head " + std::to_string(o->head + 1) + " is out of range: there are " + std::to_string(H) +
                                 " heads (--heads), so the head must be 1.." + std::to_string(H));
            Trace trace = walk_mha(input, weights, spec, shell.recording);
            if (default_seed) trace.set_param("default_seed", true);
            return trace;
        };
    });
}

}  // namespace attnwalk::app
