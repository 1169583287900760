// libFuzzer target: a tokenizer.json (a small one, as the test folders carry) must be read
// or refused with an InputError, and a text it reads encoded and decoded or refused with
// a UsageError (or an InputError: a regex of the file that fails on the text): never a
// crash, a leak or a hang. The input's first line is the text, the
// rest the file.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/tokenizer.hpp"
#include "scratch.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path = [] {
        std::string p = "/tmp/attnwalk_fuzz_tokenizer_" + std::to_string(::getpid()) + ".json";
        fuzz::remove_at_exit(p);
        return p;
    }();
    const std::string input(reinterpret_cast<const char*>(data), size);
    const std::size_t newline = input.find('\n');
    const std::string text = newline == std::string::npos ? "" : input.substr(0, newline);
    const std::string file = newline == std::string::npos ? input : input.substr(newline + 1);
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
        if (!file.empty()) std::fwrite(file.data(), 1, file.size(), f);
        std::fclose(f);
    }
    try {
        const auto tokenizer = attnwalk::load_tokenizer_json(path);
        try {
            for (std::size_t id : tokenizer->encode(text)) (void)tokenizer->decode(id);
            (void)tokenizer->pieces(text);
        } catch (const attnwalk::UsageError&) {
        } catch (const attnwalk::InputError&) {
        }
    } catch (const attnwalk::InputError&) {
    }
    try {  // read to name ids alone: the merges for their syntax only
        const auto names = attnwalk::load_tokenizer_json(path, 1e12, attnwalk::TokenizerUse::decode);
        for (std::size_t id = 0; id < names->vocab_size() && id < 64; ++id) (void)names->decode(id);
    } catch (const attnwalk::InputError&) {
    }
    return 0;
}
