// libFuzzer target: the embeddings loader must reject bad input with an InputError,
// never crash, leak or hang: JSON text, and NumPy's .npy (told by its first bytes, as -i does).
#include <cstddef>
#include <cstdint>
#include <string>

#include "attnwalk/io/embeddings.hpp"
#include "attnwalk/io/npy.hpp"
#include "attnwalk/errors.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string text(reinterpret_cast<const char*>(data), size);
    try {
        const auto e = attnwalk::is_npy(text) ? attnwalk::embeddings_of_npy(attnwalk::parse_npy(text, "fuzz.npy"), "fuzz.npy")
                                              : attnwalk::parse_embeddings(text, "fuzz.json");
        if (e.x.data.size() != e.x.size() || e.tokens.size() != e.tokens_count()) __builtin_trap();
    } catch (const attnwalk::InputError&) {
    }
    return 0;
}
