// libFuzzer target: a safetensors file (and, when it opens, the GPT-2 loader on it) must
// be refused with an InputError or UsageError, never crash, leak or hang.
#include <unistd.h>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <string>

#include "attnwalk/errors.hpp"
#include "attnwalk/model/model.hpp"
#include "attnwalk/io/safetensors.hpp"
#include "scratch.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    static const std::string path = [] {
        std::string p = "/tmp/attnwalk_fuzz_safetensors_" + std::to_string(::getpid());
        fuzz::remove_at_exit(p);
        return p;
    }();
    if (FILE* f = std::fopen(path.c_str(), "wb")) {
        if (size) std::fwrite(data, 1, size, f);
        std::fclose(f);
    }
    try {
        const attnwalk::SafeTensors st(path);
        for (const auto& [name, entry] : st.entries()) {
            try {
                (void)st.get(name);
            } catch (const attnwalk::InputError&) {
            }
        }
        (void)attnwalk::load_gpt2(path, 2);
    } catch (const attnwalk::InputError&) {
    } catch (const attnwalk::UsageError&) {
    }
    return 0;
}
