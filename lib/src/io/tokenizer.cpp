// A build without PCRE2 and utf8proc (ATTNWALK_TOKENIZER_JSON=OFF, the aarch64 cross build)
// reads no tokenizer.json and says so; tokenizer_json.cpp is the reader.
#include "attnwalk/io/tokenizer.hpp"

#include "attnwalk/errors.hpp"

namespace attnwalk {

#ifndef ATTNWALK_TOKENIZER_JSON
std::shared_ptr<const Tokenizer> load_tokenizer_json(const std::string& path) {
    throw InputError(path, "", "this build of attnwalk reads no tokenizer.json (it was built without PCRE2 and utf8proc)");
}
#endif

}  // namespace attnwalk
