// libFuzzer target: the vocabulary loader and the text lookup must reject bad input
// with an InputError or UsageError, never crash, leak or hang. The input is
// "sentence\nvocabulary JSON".
#include <cstddef>
#include <cstdint>
#include <string>

#include "attnwalk/errors.hpp"
#include "attnwalk/io/vocab.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
    const std::string all(reinterpret_cast<const char*>(data), size);
    const auto split = all.find('\n');
    const std::string sentence = split == std::string::npos ? "" : all.substr(0, split);
    const std::string vocab_text = split == std::string::npos ? all : all.substr(split + 1);
    try {
        const auto vocab = attnwalk::parse_vocab(vocab_text, "vocab.json");
        const auto e = attnwalk::embed_text(sentence, vocab, "sentence");
        if (e.x.data.size() != e.x.size() || e.tokens.size() != e.tokens_count()) __builtin_trap();
    } catch (const attnwalk::InputError&) {
    } catch (const attnwalk::UsageError&) {
    }
    return 0;
}
