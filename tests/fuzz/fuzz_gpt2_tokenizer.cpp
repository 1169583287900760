// libFuzzer target: GPT-2's tokenizer files and the attention mask file. The input is
// "encoder.json NUL vocab.bpe NUL text NUL mask": the files are written to a folder of
// this process and loaded as `--tokenizer DIR` loads them, the text encoded and each id
// decoded; the mask is read as `--attn-mask` reads one, as booleans and as floats. Every
// fault must be an InputError or UsageError, never a crash, a leak or a hang.
#include <sys/stat.h>
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/bpe.hpp"
#include "attnwalk/io/embeddings.hpp"
#include "scratch.hpp"

namespace {

void write(const std::string& path, const std::string& text) {
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
        std::fwrite(text.data(), 1, text.size(), f);
        std::fclose(f);
    }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string dir = [] {
        char name[] = "/tmp/attnwalk_fuzz_gpt2_tokenizer_XXXXXX";
        if (!::mkdtemp(name)) return std::string("/tmp");
        fuzz::remove_at_exit(name);
        return std::string(name);
    }();
    std::vector<std::string> parts(4);
    std::size_t k = 0;
    for (std::size_t i = 0; i < size; ++i) {
        if (data[i] == 0 && k + 1 < parts.size()) ++k;
        else parts[k] += static_cast<char>(data[i]);
    }
    write(dir + "/encoder.json", parts[0]);
    write(dir + "/vocab.bpe", parts[1]);
    try {
        const auto bpe = attnwalk::Bpe::load(dir);
        for (std::size_t id : bpe->encode(parts[2])) (void)bpe->decode(id);
        (void)bpe->pieces(parts[2]);
    } catch (const attnwalk::InputError&) {
    } catch (const attnwalk::UsageError&) {
    }
    for (bool is_bool : {true, false}) {
        try {
            const attnwalk::Tensor mask = attnwalk::parse_attn_mask(parts[3], "mask.json", is_bool);
            if (mask.data.size() != mask.size()) __builtin_trap();
        } catch (const attnwalk::InputError&) {
        } catch (const attnwalk::UsageError&) {
        }
    }
    return 0;
}
