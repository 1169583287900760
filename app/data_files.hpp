// The files attnwalk ships (data/: the example inputs, vocab.json, GPT-2's tokenizer),
// found wherever attnwalk runs from: an installed binary reads PREFIX/share/attnwalk, a
// binary in the build tree reads the source tree's data/.
#pragma once

#include <optional>
#include <string>

namespace attnwalk::app {

// The shipped file or folder `name` (e.g. "gpt2", "vocab.json"): the first that exists of
// $ATTNWALK_DATA/name, <the binary's folder>/../share/attnwalk/name, <source tree>/data/name.
std::optional<std::string> shipped_file(const std::string& name);

// A path the user gave: itself when it exists; "data/NAME" that does not exist here is the
// shipped NAME (so the docs' examples run from any folder); otherwise itself, for the
// reader's error.
std::string user_path(const std::string& given);

// Where shipped files were looked for, for an error message.
std::string shipped_places();

}  // namespace attnwalk::app
