// attnwalk kvshare: cross-layer KV sharing on a seeded stack; one call into lib/ (lessons/kvshare.cpp).
#include <memory>

#include "attnwalk/errors.hpp"
#include "attnwalk/lessons/kvshare.hpp"
#include "commands.hpp"

namespace attnwalk::app {

ATTNWALK_COMMAND(kvshare) {
    CLI::App* sub = add_command(cli, shell, "kvshare",
                                "  attnwalk kvshare                         # 4 layers, 1–2 make keys and values, 3–4 reuse layer 2's\n"
                                "  attnwalk kvshare --compact               # who makes what, the output, the proof, the cache\n"
                                "  attnwalk kvshare --steps 'layer3.*'      # a reusing layer: its own queries, layer 2's keys\n"
                                "  attnwalk kvshare --kv-producing-layers 4  # every layer its own: plain multi-head attention\n"
                                "  attnwalk kvshare --layers 35 --kv-producing-layers 15 --cache-heads 8 --cache-head-dim 256 "
                                "--kv-heads 1 --context 131072 --cache-dtype bfloat16 --steps cache_bytes   # Gemma 4 E2B-like\n");
    auto o = std::make_shared<SeededOptions<KvShareSpec>>();
    KvShareSpec& s = o->spec;
    sub->add_option("--seed", o->seed, "torch.manual_seed(S) before the layers' nn.Linear weights are drawn (default 123)")
        ->check(whole_number(0));
    sub->add_option("--layers", s.layers, "Layers L of the stack (n_layers)")->check(whole_number(1))->capture_default_str();
    sub->add_option("--kv-producing-layers", s.producing, "P: the first P layers make and cache keys and values, the rest reuse "
                    "layer P's (n_kv_producing_layers, 1 ≤ P ≤ L)")
        ->check(whole_number(1))->capture_default_str();
    sub->add_option("--heads", s.heads, "Heads H of every layer")->check(whole_number(1))->capture_default_str();
    sub->add_option("--d-out", s.d_out, "Width H·d_k of every layer's queries, keys, values and output")->check(whole_number(1))
        ->capture_default_str();
    sub->add_option("--context", o->context, "Tokens the cache's size is given for (default: the input's)")->check(whole_number(1));
    sub->add_option("--cache-dtype", o->dtype, "float32, bfloat16, float16 or float8, for the cache's size")
        ->check(CLI::IsMember({"float32", "bfloat16", "float16", "float8"}))->capture_default_str();
    sub->add_option("--cache-heads", s.cache_heads, "Only for the cache's size: H of another model (default: the stack's)")
        ->check(whole_number(1));
    sub->add_option("--cache-head-dim", s.cache_head_dim, "Only for the cache's size: d_k of another model (default: the stack's)")
        ->check(whole_number(1));
    sub->add_option("--kv-heads", s.kv_heads, "Only for the cache's size: G key/value heads of a grouped-query attention to compare "
                    "(dividing the heads)")
        ->check(whole_number(1));
    sub->callback([&shell, o] {
        shell.headline = headline_of(lesson("kvshare"));
        shell.walk = [&shell, o] {
            if (o->spec.producing > o->spec.layers)
                throw UsageError("--kv-producing-layers " + std::to_string(o->spec.producing) + " is more than --layers " +
                                 std::to_string(o->spec.layers) + ": at most every layer makes its own keys and values");
            return seeded_walk(shell, *o, kvshare_cost, walk_kvshare);
        };
    });
}

}  // namespace attnwalk::app
