// attnwalk quant: one block of quantized weights taken apart — a GGUF file's tensor's, or
// the built-in row quantized to Q8_0 or Q4_0.
#include <memory>

#include "attnwalk/errors.hpp"
#include "attnwalk/lessons/quant.hpp"
#include "commands.hpp"

namespace attnwalk::app {

ATTNWALK_COMMAND(quant) {
    CLI::App* sub = cli.add_subcommand("quant", lesson("quant").summary);
    sub->footer("Examples:\n"
                "  attnwalk quant                                    # the built-in row in Q8_0: a scale and 32 codes\n"
                "  attnwalk quant --type Q4_0                        # the same row in 4 bits\n"
                "  attnwalk quant --model tests/data/gguf/blocks.gguf --tensor q4_k --block 1   # a Q4_K super-block\n"
                "  attnwalk quant --model FILE.gguf --tensor blk.0.attn_q.weight --block 100\n");
    add_shell_options(OptionBuilder(*sub), shell, false);
    struct Options {
        std::string model, tensor, type = "Q8_0";
        std::size_t block = 1;
    };
    auto o = std::make_shared<Options>();
    CLI::Option* model = sub->add_option("--model", o->model, "A GGUF file (an Ollama blob, an LM Studio or llama.cpp file)")->check(non_empty());
    CLI::Option* tensor = sub->add_option("--tensor", o->tensor, "Its tensor whose block is taken apart (Q8_0, Q4_0 or Q4_K)")->check(non_empty())->needs(model);
    model->needs(tensor);
    sub->add_option("--block", o->block, "The block, counted from 1")->check(whole_number(1))->needs(model)->capture_default_str();
    sub->add_option("--type", o->type, "The built-in row's type: Q8_0 or Q4_0")
        ->check(CLI::IsMember({"Q8_0", "Q4_0", "Q4_K"}, CLI::ignore_case))
        ->excludes(model)
        ->capture_default_str();
    sub->callback([&shell, o] {
        shell.headline = headline_of(lesson("quant"));
        shell.walk = [&shell, o] {
            if (!shell.input.empty() || shell.sentence) throw UsageError("quant reads a block of --model FILE --tensor NAME, or the built-in row: no -i or --text");
            if (o->model.empty()) {
                std::string type = o->type;
                for (char& c : type) c = static_cast<char>(c == 'q' ? 'Q' : c == 'k' ? 'K' : c);
                if (type == "Q4_K")
                    throw UsageError("--type Q4_K: a Q4_K block is read from a GGUF file: give --model FILE --tensor NAME (llama-quantize searches "
                                     "a K-quant's scales, which this lesson does not do)");
                return walk_quant(quant_block_builtin(type));
            }
            return walk_quant(quant_block_of_file(o->model, o->tensor, o->block - 1, parse_bytes(shell.max_memory)));
        };
    });
}

}  // namespace attnwalk::app
