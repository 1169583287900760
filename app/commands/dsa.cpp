// attnwalk dsa: DeepSeek Sparse Attention on seeded weights; one call into lib/ (lessons/dsa.cpp).
#include <memory>

#include "attnwalk/errors.hpp"
#include "attnwalk/lessons/dsa.hpp"
#include "commands.hpp"

namespace attnwalk::app {

ATTNWALK_COMMAND(dsa) {
    CLI::App* sub = add_command(cli, shell, "dsa",
                                "  attnwalk dsa                         # 2 heads, an indexer of 2 heads × 2 features, each query keeps 3 keys (seed 123)\n"
                                "  attnwalk dsa --steps index_scores,index_kth,kept   # what the indexer scores and which keys survive\n"
                                "  attnwalk dsa --explain one,Your      # a key the indexer dropped: its score against the 3rd\n"
                                "  attnwalk dsa --topk 6 --steps full_difference   # k ≥ T: every key kept, full causal attention\n"
                                "  attnwalk dsa --d-out 2048 --heads 16 --index-heads 64 --index-head-dim 128 --topk 2048 --context 131072 "
                                "--steps 'work_*'   # the work at DeepSeek-V3.2's indexer sizes\n");
    struct Options {
        DsaSpec spec;  // the options' defaults are the library's
        std::optional<std::uint64_t> seed;
        std::optional<std::size_t> context;
        std::optional<std::string> explain;
        std::size_t head = 0;
    };
    auto o = std::make_shared<Options>();
    DsaSpec& s = o->spec;
    const OptionBuilder options(*sub, shell.named);
    MaybeOption explain = add_explain_option(options, o->explain);
    add_counted_option(options, "--head", o->head, "The head --explain writes out, counted from 1")->needs(explain);
    options.add_option("--seed", o->seed, "torch.manual_seed(S) before the layer's nn.Linear weights are drawn (default 123)")->check(whole_number(0));
    options.add_option("--d-out", s.d_out, "The attention's width d_out (H heads of d_out / H)")->check(whole_number(1))->capture_default_str();
    options.add_option("--heads", s.heads, "Attention heads H")->check(whole_number(1))->capture_default_str();
    options.add_option("--index-heads", s.index_heads, "The indexer's heads H_I")->check(whole_number(1))->capture_default_str();
    options.add_option("--index-head-dim", s.index_dim, "d_I: the features of each index head and of the indexer's one key")
        ->check(whole_number(1))->capture_default_str();
    options.add_option("--topk", s.topk, "k: the keys each query keeps (at least 1; k ≥ the tokens keeps every key: full causal attention)")
        ->check(whole_number(1))->capture_default_str();
    options.add_option("--context", o->context, "Tokens the work table is given for (default: the input's)")->check(whole_number(1));
    sub->callback([&shell, o] {
        shell.headline = headline_of(lesson("dsa"));
        shell.walk = [&shell, o] {
            DsaSpec spec = o->spec;
            spec.explain_head = o->head;
            spec.context_tokens = o->context.value_or(0);
            spec.seed = o->seed.value_or(default_layer_seed);
            if (spec.d_out % spec.heads)
                throw UsageError("--d-out " + std::to_string(spec.d_out) + " must be a multiple of --heads " + std::to_string(spec.heads) +
                                 " (each head takes d_out / H features)");
            const Embeddings input = prepare_input(shell, [&](const InputShape& in) { return dsa_cost(in.batch, in.tokens, in.d_in, spec); });
            if (o->explain) spec.explain = parse_cell(*o->explain, input.tokens);
            Trace trace = walk_dsa(input, spec, shell.recording);
            if (!o->seed) trace.set_param("default_seed", true);
            return trace;
        };
    });
}

}  // namespace attnwalk::app
