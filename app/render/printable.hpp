// Text that reaches a terminal: tokens, file names and messages come from the user and
// may hold escape sequences, carriage returns or bidi overrides. Every text view shows
// them as visible stand-ins instead; the JSON keeps the exact text.
#pragma once

#include <string>

#include "attnwalk/trace.hpp"

namespace attnwalk::app {

// The length of the well-formed UTF-8 sequence at s[i] (as the standard defines it: no
// overlong forms, no surrogates, nothing above U+10FFFF) and its code point; 0 if none.
std::size_t utf8_sequence(const std::string& s, std::size_t i, unsigned& code);

// C0 controls as their Control Pictures (ESC -> ␛, LF -> ␊), DEL as ␡, C1 controls, the
// bidi controls (U+061C, U+200E/F, U+202A–U+202E, U+2066–U+2069) and the line and
// paragraph separators (U+2028, U+2029) and U+FFFE, U+FFFF (which XML forbids, so an SVG
// could not hold them) as \uXXXX, ill-formed UTF-8 as U+FFFD.
std::string printable(const std::string& text);

// The same for every text of a trace (tokens, titles, formulas, notes, labels, params).
Trace printable(Trace trace);

}  // namespace attnwalk::app
