#include "mcp/compact.h"

#include <gtest/gtest.h>

#include <string>

namespace kprof::mcp {
namespace {

std::string rows(int n) {
  std::string text = "header\n";
  for (int i = 0; i < n; ++i)
    text += "row " + std::to_string(i) + " xxxxxxxxxxxxxxxxxxxxxxxxxxxxxx\n";
  return text;
}

TEST(McpCompact, TokensAreCharactersOverFour) {
  EXPECT_EQ(estimated_tokens(""), 0u);
  EXPECT_EQ(estimated_tokens("abcd"), 1u);
  EXPECT_EQ(estimated_tokens("abcde"), 2u);
}

TEST(McpCompact, TextThatFitsIsKeptWhole) {
  const std::string text = rows(3);
  EXPECT_EQ(cut_to_budget(text, text.size()), text);
}

TEST(McpCompact, CutAtWholeLinesSayingHowManyAreLeft) {
  const std::string text = rows(100);
  const std::string cut = cut_to_budget(text, 500);
  EXPECT_LE(cut.size(), 500u);
  EXPECT_EQ(cut.rfind("header\nrow 0 ", 0), 0u);
  const std::size_t last = cut.rfind("… ");
  ASSERT_NE(last, std::string::npos);
  // Every line kept is a whole line of the text, and the count is of the lines left out.
  const std::string kept = cut.substr(0, last);
  EXPECT_EQ(text.rfind(kept, 0), 0u);
  const int kept_rows = static_cast<int>(std::count(kept.begin(), kept.end(), '\n')) - 1;
  EXPECT_EQ(cut.substr(last),
            "… " + std::to_string(100 - kept_rows) + " more rows; call again with detail=full\n");
}

TEST(McpCompact, BlankLinesAreNotCountedAsRows) {
  const std::string text = "a\n" + std::string(40, 'x') + "\n\n\n" + std::string(40, 'y') + "\n";
  EXPECT_EQ(cut_to_budget(text, 50), "a\n… 2 more rows; call again with detail=full\n");
}

TEST(McpCompact, OneRowLeftIsSingular) {
  const std::string text = "a\n" + std::string(80, 'x');
  EXPECT_EQ(cut_to_budget(text, 60), "a\n… 1 more row; call again with detail=full\n");
}

}  // namespace
}  // namespace kprof::mcp
