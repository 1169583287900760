// libFuzzer target: the weights loaders (single head, fused and wrapper multi-head)
// must reject bad input with an InputError, never crash, leak or hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "attnwalk/errors.hpp"
#include "attnwalk/json_input.hpp"
#include "attnwalk/projection.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::size_t d_in = 1 + data[0] % 4;  // the first byte picks d_in and the loader
    const int loader = (data[0] >> 2) % 3;
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    try {
        if (loader == 0) {
            const auto doc = attnwalk::json_input::parse(text, "w.json");
            attnwalk::read_qkv(doc, "w.json", "$", d_in);
        } else {
            attnwalk::parse_multi_head(text, "w.json", d_in, loader == 2, 1 + (data[0] >> 4) % 3);
        }
    } catch (const attnwalk::InputError&) {
    }
    return 0;
}
