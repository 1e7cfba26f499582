#include "common/utf8.h"

#include <fmt/format.h>
#include <simdjson.h>

#include <cstdint>

namespace kprof {
namespace {

constexpr std::string_view kReplacement = "\xEF\xBF\xBD";  // U+FFFD

// The well-formed sequence starting at text[i]: its length and code point, or length 0 and
// in `consumed` the length of the maximal subpart of a well-formed sequence (at least 1) to
// replace.
struct Decoded {
  size_t length = 0;
  size_t consumed = 1;
  std::uint32_t code_point = 0;
};

Decoded decode(std::string_view text, size_t i) {
  const auto byte = [&](size_t at) { return static_cast<unsigned char>(text[at]); };
  unsigned char lead = byte(i);
  Decoded result;
  if (lead < 0x80) {
    result.length = 1;
    result.code_point = lead;
    return result;
  }
  size_t length;
  unsigned char low = 0x80, high = 0xBF;  // allowed range of the second byte
  if (lead >= 0xC2 && lead <= 0xDF) {
    length = 2;
  } else if (lead >= 0xE0 && lead <= 0xEF) {
    length = 3;
    if (lead == 0xE0) low = 0xA0;   // no overlong forms
    if (lead == 0xED) high = 0x9F;  // no surrogates
  } else if (lead >= 0xF0 && lead <= 0xF4) {
    length = 4;
    if (lead == 0xF0) low = 0x90;   // no overlong forms
    if (lead == 0xF4) high = 0x8F;  // nothing above U+10FFFF
  } else {
    return result;  // a continuation byte or a byte never used in UTF-8
  }
  std::uint32_t code_point = lead & (length == 2 ? 0x1F : length == 3 ? 0x0F : 0x07);
  for (size_t k = 1; k < length; ++k) {
    if (i + k >= text.size()) {
      result.consumed = k;
      return result;
    }
    unsigned char c = byte(i + k);
    if (k == 1 ? (c < low || c > high) : (c < 0x80 || c > 0xBF)) {
      result.consumed = k;
      return result;
    }
    code_point = (code_point << 6) | (c & 0x3F);
  }
  result.length = length;
  result.consumed = length;
  result.code_point = code_point;
  return result;
}

bool needs_escape(std::uint32_t c) {
  return c < 0x20 || c == 0x7F || (c >= 0x80 && c <= 0x9F) || c == 0x061C || c == 0x200E ||
         c == 0x200F || (c >= 0x202A && c <= 0x202E) || (c >= 0x2066 && c <= 0x2069) ||
         c == 0x2028 || c == 0x2029;
}

}  // namespace

bool is_valid_utf8(std::string_view text) {
  return simdjson::validate_utf8(text.data(), text.size());
}

std::string to_valid_utf8(std::string_view text) {
  if (is_valid_utf8(text)) return std::string(text);
  std::string out;
  out.reserve(text.size() + 8);
  size_t i = 0;
  while (i < text.size()) {
    Decoded d = decode(text, i);
    if (d.length != 0) {
      out.append(text.substr(i, d.length));
      i += d.length;
    } else {
      out.append(kReplacement);
      i += d.consumed;
    }
  }
  return out;
}

bool make_valid_utf8(std::string& text) {
  if (is_valid_utf8(text)) return false;
  text = to_valid_utf8(text);
  return true;
}

std::string escape_for_terminal(std::string_view text, bool keep_newlines) {
  std::string out;
  out.reserve(text.size());
  size_t i = 0;
  while (i < text.size()) {
    Decoded d = decode(text, i);
    if (d.length == 0) {
      for (size_t k = 0; k < d.consumed; ++k) {
        out += fmt::format("\\x{:02x}", static_cast<unsigned char>(text[i + k]));
      }
      i += d.consumed;
      continue;
    }
    std::uint32_t c = d.code_point;
    if (!needs_escape(c) || (keep_newlines && c == '\n')) {
      out.append(text.substr(i, d.length));
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c < 0x80) {
      out += fmt::format("\\x{:02x}", c);
    } else {
      out += fmt::format("\\u{:04x}", c);
    }
    i += d.length;
  }
  return out;
}

}  // namespace kprof
