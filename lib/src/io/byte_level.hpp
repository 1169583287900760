// Byte-level BPE's map, shared by GPT-2's tokenizer (bpe.cpp) and tokenizer.json's
// ByteLevel (tokenizer_json.cpp): GPT-2's bytes_to_unicode, every byte as a printable
// character (bytes that print as themselves keep their code point; the others move to
// U+0100 and up), and back.
#pragma once

#include <string>

namespace attnwalk::byte_level {

// Each byte of `bytes` as its printable character.
std::string encode(const std::string& bytes);
// The bytes the characters of `text` (valid UTF-8) stand for; a character outside the map
// (a special token's) stays as it is.
std::string decode(const std::string& text);

}  // namespace attnwalk::byte_level
