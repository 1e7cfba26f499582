// Valid UTF-8 for JSON and literal text for terminals. Expected replacements are those of the
// Unicode standard's own example (ch. 3, "U+FFFD Substitution of Maximal Subparts") and of
// Python's bytes.decode("utf-8", "replace"), which follows the same practice.
#include "common/utf8.h"

#include <gtest/gtest.h>

namespace kprof {
namespace {

const std::string kFffd = "\xEF\xBF\xBD";

std::string times(const std::string& text, int n) {
  std::string out;
  for (int i = 0; i < n; ++i) out += text;
  return out;
}

TEST(Utf8, ValidTextIsUnchanged) {
  for (std::string text : {std::string("plain"), std::string("ok\xC3\xA9\xF0\x9F\x98\x80"),
                           std::string("\xE2\x80\xAE"), std::string("nul\0inside", 10)}) {
    EXPECT_TRUE(is_valid_utf8(text));
    EXPECT_EQ(to_valid_utf8(text), text);
    std::string copy = text;
    EXPECT_FALSE(make_valid_utf8(copy));
    EXPECT_EQ(copy, text);
  }
}

TEST(Utf8, IllFormedSequencesBecomeOneReplacementPerMaximalSubpart) {
  // The standard's example: 61 F1 80 80 E1 80 C2 62 80 63 80 BF 64 -> a���b�c��d
  EXPECT_EQ(to_valid_utf8("\x61\xF1\x80\x80\xE1\x80\xC2\x62\x80\x63\x80\xBF\x64"),
            "a" + times(kFffd, 3) + "b" + kFffd + "c" + times(kFffd, 2) + "d");
  struct Case {
    std::string in, out;
  };
  for (const Case& c : {
           Case{"a\xFF"
                "b",
                "a" + kFffd + "b"},
           Case{"\xE2\x82", kFffd},  // truncated 3-byte sequence
           Case{"\xE2\x82x", kFffd + "x"},
           Case{"\xF0\x9F\x98", kFffd},                    // truncated 4-byte sequence
           Case{"\xED\xA0\x80", times(kFffd, 3)},          // an encoded surrogate
           Case{"\xC0\xAF", times(kFffd, 2)},              // overlong '/'
           Case{"\xE0\x80\x80", times(kFffd, 3)},          // overlong NUL
           Case{"\xF4\x90\x80\x80", times(kFffd, 4)},      // above U+10FFFF
           Case{"\xF8\x88\x80\x80\x80", times(kFffd, 5)},  // 5-byte form
           Case{"\x80\x80", times(kFffd, 2)},              // lone continuation bytes
       }) {
    EXPECT_FALSE(is_valid_utf8(c.in));
    EXPECT_EQ(to_valid_utf8(c.in), c.out);
    std::string copy = c.in;
    EXPECT_TRUE(make_valid_utf8(copy));
    EXPECT_EQ(copy, c.out);
    EXPECT_TRUE(is_valid_utf8(copy));
  }
}

TEST(Utf8, TerminalEscapesShowControlsBidiAndBadBytes) {
  EXPECT_EQ(escape_for_terminal("gemm_kernel<float>(int, 3.5)"), "gemm_kernel<float>(int, 3.5)");
  EXPECT_EQ(escape_for_terminal("\x1b]0;owned\x07k"), "\\x1b]0;owned\\x07k");  // OSC title
  EXPECT_EQ(escape_for_terminal("a\r\nkprof: forged"), "a\\r\\nkprof: forged");
  EXPECT_EQ(escape_for_terminal("tab\there\x7f"), "tab\\there\\x7f");
  EXPECT_EQ(escape_for_terminal("\xE2\x80\xAE"
                                "evil"),
            "\\u202eevil");                                                        // RLO
  EXPECT_EQ(escape_for_terminal("\xE2\x81\xA6x\xE2\x81\xA9"), "\\u2066x\\u2069");  // isolates
  EXPECT_EQ(escape_for_terminal("\xC2\x9B"
                                "31m"),
            "\\u009b31m");  // C1 CSI
  EXPECT_EQ(escape_for_terminal("\xE2\x80\xA8"), "\\u2028");
  EXPECT_EQ(escape_for_terminal("bad\xFFz"), "bad\\xffz");
  EXPECT_EQ(escape_for_terminal(std::string("nul\0", 4)), "nul\\x00");
  // Printable non-ASCII stays readable.
  EXPECT_EQ(escape_for_terminal("caf\xC3\xA9 \xE2\x80\x94 \xE2\x80\xA6"),
            "caf\xC3\xA9 \xE2\x80\x94 \xE2\x80\xA6");
  // Idempotent: what it writes contains nothing it would escape.
  std::string once = escape_for_terminal("\x1b[2J\xE2\x80\xAE\n\xFF\\x1b");
  EXPECT_EQ(escape_for_terminal(once), once);
  EXPECT_EQ(escape_for_terminal("two\nlines\x1b", true), "two\nlines\\x1b");
}

}  // namespace
}  // namespace kprof
