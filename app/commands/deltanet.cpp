// attnwalk deltanet: Gated DeltaNet on seeded weights; one call into lib/ (lessons/deltanet.cpp).
#include <cmath>
#include <memory>

#include "attnwalk/errors.hpp"
#include "commands.hpp"

namespace attnwalk::app {

ATTNWALK_COMMAND(deltanet) {
    CLI::App* sub = add_command(cli, shell, "deltanet",
                                "  attnwalk deltanet                        # 2 heads of 2, seed 123: the state token by token\n"
                                "  attnwalk deltanet --steps 'step3.*'      # one token: decay, prediction, error, write, read\n"
                                "  attnwalk deltanet --decay-rate 0.05      # a slow decay: the state remembers earlier tokens\n"
                                "  attnwalk deltanet --steps effective_attention,max_difference   # the exact matrix behind the outputs\n"
                                "  attnwalk deltanet --chunk 4 --steps chunked_difference          # the chunked form, the same numbers\n"
                                "  attnwalk deltanet --heads 16 --d-out 2048 --layers 36 --context 262144 --cache-dtype bfloat16 --steps state_bytes\n");
    auto o = std::make_shared<SeededOptions<DeltaNetSpec>>();
    DeltaNetSpec& s = o->spec;
    sub->add_option("--seed", o->seed, "torch.manual_seed(S) before the layer's weights are drawn (default 123)")->check(whole_number(0));
    sub->add_option("--heads", s.heads, "Heads H")->check(whole_number(1))->capture_default_str();
    sub->add_option("--d-out", s.d_out, "Width H·d_k of the queries, keys and values (each head's state is d_k × d_k)")
        ->check(whole_number(1))->capture_default_str();
    sub->add_option("--decay-rate", s.decay_rate, "A = exp(A_log) for every head instead of the textbook's draw from U(0, 16): "
                    "small A, γ near 1, a state that remembers")
        ->check(number_check("A", [](double v) { return v >= 1e-30 && v <= 1e6; }, "must be in [1e-30, 1e6]"));
    sub->add_option("--chunk", s.chunk, "Tokens per chunk of the chunked form")->check(whole_number(1))->capture_default_str();
    sub->add_option("--layers", s.layers, "Layers, for the memory")->check(whole_number(1))->capture_default_str();
    sub->add_option("--context", o->context, "Tokens the memory is given for (default: the input's)")->check(whole_number(1));
    sub->add_option("--cache-dtype", o->dtype, "float32, bfloat16 or float16, for the memory")
        ->check(CLI::IsMember({"float32", "bfloat16", "float16"}))->capture_default_str();
    sub->callback([&shell, o] {
        shell.headline = headline_of(lesson("deltanet"));
        shell.walk = [&shell, o] {
            const DeltaNetSpec& spec = o->spec;
            if (spec.d_out % spec.heads)
                throw UsageError("--d-out " + std::to_string(spec.d_out) + " is not divisible by --heads " + std::to_string(spec.heads) +
                                 ": every head gets d_out / H features");
            return seeded_walk(shell, *o, deltanet_cost, walk_deltanet);
        };
    });
}

}  // namespace attnwalk::app
