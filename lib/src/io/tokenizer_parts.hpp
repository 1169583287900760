// A tokenizer.json's pipeline built from parts rather than read from a file: the document
// without its vocabulary and merges, and those as lists (a GGUF file's tokenizer.ggml.*).
// Internal to lib/src/io/.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "attnwalk/io/json_input.hpp"
#include "attnwalk/io/tokenizer.hpp"

namespace attnwalk {

// `doc` as a tokenizer.json whose $.model.vocab is `tokens` (id = index) and $.model.merges
// `merges` ("a b"); `file` names it in messages, `where` names the lists ("tokenizer.ggml").
std::shared_ptr<const Tokenizer> tokenizer_of_parts(const std::string& file, const json_input::Value& doc, const std::vector<std::string>& tokens,
                                                    const std::vector<std::string>& merges, TokenizerUse use, const std::string& where);

}  // namespace attnwalk
