// attnwalk mla: multi-head latent attention on seeded weights; one call into lib/ (lessons/mla.cpp).
#include <cmath>
#include <memory>

#include "attnwalk/errors.hpp"
#include "attnwalk/lessons/mla.hpp"
#include "commands.hpp"

namespace attnwalk::app {

ATTNWALK_COMMAND(mla) {
    CLI::App* sub = add_command(cli, shell, "mla",
                                "  attnwalk mla                             # 2 heads, a latent of 2 numbers, 2 rotary features (seed 123)\n"
                                "  attnwalk mla --q-lora-rank 2             # the queries through their own latent too (DeepSeek-V3)\n"
                                "  attnwalk mla --steps 'absorbed.*,max_difference'   # W_UK absorbed into the queries: the same output\n"
                                "  attnwalk mla --heads 128 --kv-lora-rank 512 --qk-nope-head-dim 128 --qk-rope-head-dim 64 --v-head-dim 128 "
                                "--kv-heads 8 --layers 61 --context 4096 --cache-dtype bfloat16 --steps 'cache_*'   # DeepSeek-V3's cache against MHA and GQA\n");
    auto o = std::make_shared<SeededOptions<MlaSpec>>();
    MlaSpec& s = o->spec;
    sub->add_option("--seed", o->seed, "torch.manual_seed(S) before the layer's nn.Linear weights are drawn (default 123)")
        ->check(whole_number(0));
    sub->add_option("--heads", s.heads, "Heads H")->check(whole_number(1))->capture_default_str();
    sub->add_option("--kv-lora-rank", s.rank, "r: the latent c_KV each token's keys and values come from")->check(whole_number(1))
        ->capture_default_str();
    sub->add_option("--q-lora-rank", s.query_rank, "r_q: the queries through a latent of their own (0: straight from X)")
        ->check(whole_number(0))->capture_default_str();
    sub->add_option("--qk-nope-head-dim", s.nope, "Each head's query/key features without position")->check(whole_number(1))
        ->capture_default_str();
    sub->add_option("--qk-rope-head-dim", s.rope, "The rotary features, one key part shared by the heads (even; 0: none)")
        ->check(whole_number(0))->capture_default_str();
    sub->add_option("--v-head-dim", s.value, "Each head's value features")->check(whole_number(1))->capture_default_str();
    CLI::Option* base = sub->add_option("--rope-base", s.rope_base, "The base of the frequencies θ_c = base^(−2(c − 1)/d_rope)")
        ->check(number_check("B", [](double v) { return std::isfinite(v) && v > 1.0; }, "must be a number above 1"))
        ->capture_default_str();
    CLI::Option* interleave = sub->add_flag("--rope-interleave", s.interleave, "The rotary pairs are (0,1), (2,3), …, as DeepSeek-V3's config says (rope_interleave)");
    sub->add_option("--kv-heads", s.kv_heads, "Only for the cache's size: G of the grouped-query attention it is compared with (default H/2; 1 for odd H)")
        ->check(whole_number(1));
    sub->add_option("--layers", s.layers, "Layers, for the cache's size")->check(whole_number(1))->capture_default_str();
    sub->add_option("--context", o->context, "Tokens the cache's size is given for (default: the input's)")->check(whole_number(1));
    sub->add_option("--cache-dtype", o->dtype, "float32, bfloat16 or float16, for the cache's size")
        ->check(CLI::IsMember({"float32", "bfloat16", "float16"}))->capture_default_str();
    sub->callback([&shell, o, base, interleave] {
        shell.headline = headline_of(lesson("mla"));
        shell.walk = [&shell, o, rotary = base->count() ? "--rope-base" : interleave->count() ? "--rope-interleave" : ""] {
            const MlaSpec& spec = o->spec;
            if (spec.rope % 2)
                throw UsageError("--qk-rope-head-dim must be even (RoPE turns pairs of features), not " + std::to_string(spec.rope));
            if (spec.rope == 0 && *rotary) throw UsageError(std::string(rotary) + " shapes the rotary part, and --qk-rope-head-dim 0 leaves none");
            if (spec.kv_heads && (spec.kv_heads > spec.heads || spec.heads % spec.kv_heads))
                throw UsageError("--kv-heads " + std::to_string(spec.kv_heads) + " must divide --heads " + std::to_string(spec.heads) +
                                 " (each key/value head serves H/G query heads)");
            return seeded_walk(shell, *o, mla_cost, walk_mla);
        };
    });
}

}  // namespace attnwalk::app
