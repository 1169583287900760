// "Did you mean": how far a name someone typed is from the names that exist (a JSON key,
// a vocabulary word, a step id, a command or an option). Light.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

namespace attnwalk {

// The fewest edits that turn a into b: inserting, deleting or replacing a character, and,
// with `swaps`, swapping two neighbours ("gtp2" is then one edit from "gpt2", not two).
std::size_t edit_distance(const std::string& a, const std::string& b, bool swaps = false);

// The `n` names of `known` closest to `name` (edit_distance without swaps), the nearest
// first and, at the same distance, in alphabetical order; only those within
// `max_distance` edits.
std::vector<std::string> closest(const std::string& name, const std::vector<std::string>& known, std::size_t n,
                                 std::size_t max_distance = static_cast<std::size_t>(-1));

}  // namespace attnwalk
