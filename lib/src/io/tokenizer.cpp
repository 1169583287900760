// What every tokenizer shares: how its tables' bytes are counted for the estimates. And a
// build without PCRE2 and utf8proc (ATTNWALK_TOKENIZER_JSON=OFF, the aarch64 cross build)
// reads no tokenizer.json, nor a GGUF file's tokenizer, and says so; tokenizer_json.cpp is
// the reader.
#include "attnwalk/io/tokenizer.hpp"

#include "attnwalk/errors.hpp"
#include "tokenizer_parts.hpp"

namespace attnwalk {

double string_bytes(const std::string& s) { return 32.0 + (s.size() > 15 ? static_cast<double>(s.size()) + 1.0 + 16.0 : 0.0); }

#ifndef ATTNWALK_TOKENIZER_JSON
std::shared_ptr<const Tokenizer> load_tokenizer_json(const std::string& path, double, TokenizerUse) {
    throw InputError(path, "", "this build of attnwalk reads no tokenizer.json (it was built without PCRE2 and utf8proc)");
}

std::shared_ptr<const Tokenizer> tokenizer_of_parts(const std::string& file, const json_input::Value&, const std::vector<std::string>&,
                                                    const std::vector<std::string>&, TokenizerUse, const std::string& where) {
    throw InputError(file, where + ".*\"", "this build of attnwalk reads no tokenizer (it was built without PCRE2 and utf8proc)");
}
#endif

}  // namespace attnwalk
