// Text every output can trust: valid UTF-8 (JSON needs it) and, for terminals, nothing that a
// terminal would act on instead of showing (escape sequences, line breaks, bidi overrides).
#pragma once

#include <string>
#include <string_view>

namespace kprof {

bool is_valid_utf8(std::string_view text);

// The text with every ill-formed sequence replaced by U+FFFD, one per maximal subpart as the
// Unicode standard recommends (so "\xE2\x82" is one U+FFFD, "\xFF\xFF" two). Valid text is
// returned unchanged; make_valid_utf8 does the same in place and says whether it changed anything.
std::string to_valid_utf8(std::string_view text);
bool make_valid_utf8(std::string& text);

// Text as a terminal shows it literally. Control characters (C0, DEL, C1), the bidirectional
// controls that reorder what follows them (U+061C, U+200E, U+200F, U+202A–U+202E,
// U+2066–U+2069) and the line and paragraph separators (U+2028, U+2029) become visible escapes
// (\n, \r, \t, \x1b, \u0085, \u202e); bytes that are not UTF-8 become \xNN. Everything else,
// backslashes included, is kept as it is, so escaping twice changes nothing. With
// keep_newlines, '\n' stays a line break (for messages that are several lines on purpose).
std::string escape_for_terminal(std::string_view text, bool keep_newlines = false);

}  // namespace kprof
