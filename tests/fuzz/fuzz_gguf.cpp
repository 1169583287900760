// libFuzzer target: a GGUF file (and, when it opens, every tensor dequantized, the model and
// the tokenizer read from it, and one token through the model, which makes every tensor the
// model dequantizes as it is used) must be refused with an InputError or UsageError within a
// memory budget, never crash, leak or hang.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/gguf.hpp"
#include "attnwalk/io/tokenizer.hpp"
#include "attnwalk/model/decoder.hpp"
#include "attnwalk/model/family.hpp"
#include "attnwalk/model/model.hpp"
#include "scratch.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path = [] {
        std::string p = "/tmp/attnwalk_fuzz_gguf_" + std::to_string(::getpid());
        fuzz::remove_at_exit(p);
        return p;
    }();
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
        if (size) std::fwrite(data, 1, size, f);
        std::fclose(f);
    }
    const double budget = 64.0 * 1024 * 1024;
    try {
        const attnwalk::GgufFile g(path, budget);
        for (const auto& t : g.tensors()) {
            if (t.count > (1u << 20)) continue;
            std::vector<float> out(static_cast<std::size_t>(t.count));
            g.dequantize(t, out.data());
        }
        try {
            (void)attnwalk::load_gguf_tokenizer(path, budget, attnwalk::TokenizerUse::encode);
        } catch (const attnwalk::InputError&) {
        }
        const attnwalk::Model m = attnwalk::load_model(path, budget);
        (void)attnwalk::decoder_forward(m->weights, {0}, nullptr, nullptr);
    } catch (const attnwalk::InputError&) {
    } catch (const attnwalk::UsageError&) {
    }
    return 0;
}
