// libFuzzer target: the weights loaders (single head, fused and wrapper multi-head)
// must reject bad input with an InputError, never crash, leak or hang.
#include <cstddef>
#include <cstdint>
#include <string>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/weights.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    if (size < 1) return 0;
    const std::size_t d_in = 1 + data[0] % 4;  // the first byte picks d_in and the loader
    const int loader = (data[0] >> 2) % 3;
    const std::string text(reinterpret_cast<const char*>(data) + 1, size - 1);
    try {
        const std::size_t heads = loader == 0 ? 1 : 1 + (data[0] >> 4) % 3;
        const auto layout = loader == 2 ? attnwalk::HeadLayout::stacked : attnwalk::HeadLayout::fused;
        attnwalk::parse_weights(text, "w.json", {d_in, 2, heads, layout, loader == 1});
    } catch (const attnwalk::InputError&) {
    }
    return 0;
}
