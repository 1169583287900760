// libFuzzer target: combinations of real options. Each input byte picks a command, then
// options from the table below and one of a few values each (tokens, cells, seeds, sizes
// at their limits, strange text), so that the fuzzer spends its time on how options
// combine (--svg with --summary, --explain with masks, --ones with everything) rather
// than on spelling them. run_cli must return 0, 1 or 2 and never crash, leak or hang.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include "run_args.hpp"
#include "scratch.hpp"

namespace {

const char* const commands[] = {"scores", "softmax", "context", "causal", "dropout", "mha", "walkthrough",
                                 "kvcache", "rope", "flash", "sdpa", "params", "gpt2", "model", "tokenize"};

#define SOURCE(path) ATTNWALK_SOURCE_DIR "/" path

struct Choice {
    const char* option;
    std::vector<const char*> values;  // empty: a flag
};

const std::vector<Choice> choices = {
    {"--query", {"0", "journey", "#5", "00001", "6", "", "a,b", "the"}},
    {"--explain", {"1,2", "journey,starts", "5,0", "0,5", "#1,#2", "1", "x,y", ",", "1,2,3"}},
    {"--seed", {"0", "123", "789", "18446744073709551615", "18446744073709551616", "-1", ""}},
    {"--init", {"rand", "randn", "linear", "uniform"}},
    {"--d-out", {"1", "2", "3", "4", "0", "64"}},
    {"--qkv-bias", {}},
    {"--scale", {"1", "2", "0.5", "1e-300", "1e39", "0", "nan", "-1"}},
    {"--batch", {"1", "2", "3", "0", "-1"}},
    {"--heads", {"1", "2", "3", "4", "0"}},
    {"--variant", {"fused", "wrapper", "combined-qkv"}},
    {"--kv-heads", {"1", "2", "3", "0"}},
    {"--window", {"1", "2", "6", "0", "9223372036854775808", "18446744073709551615"}},
    {"--show-einsum", {}},
    {"--beyond", {}},
    {"--layers", {"1", "12", "0"}},
    {"--context", {"1", "1024", "18446744073709551615"}},
    {"--cache-dtype", {"float32", "bfloat16", "int8"}},
    {"--rope-base", {"10000", "1", "1.5", "1e308", "nan"}},
    {"--shift", {"0", "3", "18446744073709551615"}},
    {"--block", {"1", "2", "7", "0"}},
    {"--causal", {}},
    {"--queries", {"1", "2", "6", "7", "0"}},
    {"--attn-mask", {"mask.json", "[[1,0,1]]", "[[true,false,true],[1,1,1],[0,0,0]]", "[[0.5]]", "[[[1]]]", "[]", "[[\"a\"]]"}},
    {"--mask-dtype", {"bool", "float"}},
    {"--is-causal", {}},
    {"--d-in", {"1", "768", "0"}},
    {"--no-out-proj", {}},
    {"--dropout", {"0", "0.5", "0.1", "0.99", "1", "1e-320"}},
    {"--dropout-seed", {"0", "123", "9"}},
    {"--eval", {}},
    {"--no-causal", {}},
    {"--ones", {"1", "3", "6", "0"}},
    // the model commands: tiny folders of every family, a GPT-2 file, and what is not a model
    {"--model", {SOURCE("tests/data/models/tiny_qwen3"), SOURCE("tests/data/models/tiny_gemma3"), SOURCE("tests/data/models/tiny_llama"),
                 SOURCE("tests/data/models/tiny_qwen2"), SOURCE("tests/data/tiny_gpt2_hf_f32.safetensors"), "input.json", ".", "missing"}},
    {"--ids", {"1,2,3", "0", "1,2,", "299", "300", "99999999999999999999", "", "1,,2", "1,2,3,4,5,6,7,8,9,10,11,12,13,14,15,16,17"}},
    {"--text", {"cats climb trees", "Your journey", "hello there", "", "\xff\xfe", "<|endoftext|>a", "<bos>the cat", "a b c d e f g h i j k l m n o p q r s t", "\x1b[2J"}},
    {"--generate", {"1", "3", "0", "100", "18446744073709551615"}},
    {"--view", {}},
    {"--all-layers", {}},
    {"--layer", {"0", "1", "2", "18446744073709551615"}},
    {"--head", {"0", "1", "3", "4"}},
    {"--top-k", {"1", "5", "0", "100000"}},
    {"--temperature", {"1", "0.5", "0", "1e-30", "nan"}},
    {"--top-p", {"0.5", "1", "0", "2"}},
    {"--sort", {"entropy", "max_weight", "previous_token", "nonsense"}},
    {"--tokenizer", {SOURCE("data/gpt2"), SOURCE("tests/data/models/tiny_qwen3/tokenizer.json"), SOURCE("tests/data/models/tiny_gemma3"),
                     "input.json", "missing"}},
    {"--svg-step", {"weights", "attention_grid", "scores", "nonsense"}},
    {"--context-length", {"3", "6", "100", "-1"}},
    {"--summary", {}},
    {"--timing", {}},
    {"--svg", {"fuzz_out.svg", "mask.json", "input.json"}},  // the inputs must never be replaced
    {"--json", {}},
    {"--format", {"text", "torch"}},
    {"--precision", {"0", "4", "12", "13"}},
    {"--full", {}},
    {"--no-heatmap", {}},
    {"--color", {"never", "always"}},
    {"--show-weights", {}},
    {"--step", {}},
    {"--max-memory", {"1K", "64M", "4G", "garbage", "0"}},
    {"--max-work", {"1", "1e6", "1e12"}},
    {"--weights", {"weights.json", "wrapper.json"}},
    {"-i", {"input.json", "tokens.json"}},
    {"--vocab", {"vocab.json"}},
};

const char* const input_json = R"({"tokens": ["a", "b", "c"], "embeddings": [[1, 2, 3], [4, 5, 6], [7, 8, 9]]})";
const char* const mask_json = "[[1, 1, 0], [0, 0, 0], [1, 1, 1]]";

std::string read(const char* name) {
    std::string text;
    if (FILE* f = std::fopen(name, "r")) {
        for (int c; (c = std::fgetc(f)) != EOF;) text += static_cast<char>(c);
        std::fclose(f);
    }
    return text;
}

void write(const char* name, const char* text) {
    if (FILE* f = std::fopen(name, "w")) {
        std::fputs(text, f);
        std::fclose(f);
    }
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    if (!std::freopen("/dev/null", "r", stdin)) return 1;
    char dir[] = "/tmp/attnwalk_fuzz_options_XXXXXX";  // every file it reads or writes lives here
    if (!::mkdtemp(dir) || ::chdir(dir) != 0) return 1;
    fuzz::remove_at_exit(dir);
    write("input.json", input_json);
    write("tokens.json", "{\"tokens\": [\"the\", \"\\u001b[2J\", \"a,b\", \"the\", \"0\"], \"embeddings\": [[1, 0], [0, 1], [1, 1], [1, 0], [0.5, 0.5]]}");
    write("weights.json", R"({"W_query": [[1, 2], [3, 4], [5, 6]], "W_key": [[1, 0], [0, 1], [1, 1]], "W_value": [[1, 1], [2, 2], [3, 3]],
                              "out_proj": {"weight": [[1, 0], [0, 1]], "bias": [0, 0]}})");
    write("mask.json", mask_json);
    write("wrapper.json", R"({"heads": [{"W_query": [[1], [2], [3]], "W_key": [[1], [0], [1]], "W_value": [[1], [1], [1]]}]})");
    write("vocab.json", R"({"cats": [1, 2], "climb": [3, 4], "trees": [5, 6], "Your": [1, 1], "journey": [2, 2]})");
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size == 0) return 0;
    std::vector<std::string> args{"attnwalk", commands[data[0] % std::size(commands)]};
    for (std::size_t i = 1; i + 1 < size && args.size() < 24; i += 2) {
        const Choice& c = choices[data[i] % choices.size()];
        args.push_back(c.option);
        if (!c.values.empty()) args.push_back(c.values[data[i + 1] % c.values.size()]);
    }
    fuzz_run_cli(std::move(args));
    if (read("input.json") != input_json || read("mask.json") != mask_json) __builtin_trap();  // an input was replaced
    return 0;
}

