#include "common/text.h"

#include <gtest/gtest.h>

#include <limits>

namespace kprof {
namespace {

TEST(ParseNcuNumber, AcceptsThousandsSeparatorsAsNcuPrintsThem) {
  EXPECT_EQ(parse_ncu_number("1,980,000"), 1980000.0);
  EXPECT_EQ(parse_ncu_number("24,133.10"), 24133.10);
  EXPECT_EQ(parse_ncu_number("2.155339"), 2.155339);
  EXPECT_EQ(parse_ncu_number("0"), 0.0);
  EXPECT_EQ(parse_ncu_number("-3.5"), -3.5);
  EXPECT_EQ(parse_ncu_number("150,109,880,320"), 150109880320.0);
}

TEST(ParseNcuNumber, RejectsWhatIsNotANumber) {
  for (const char* text : {"", "n/a", "PolicySpread", "No-CC", "1,2", "12,34,567", ",123", "1,",
                           "1.2.3", "(384, 1, 1)", "1,234.5,6", "abc1"}) {
    EXPECT_FALSE(parse_ncu_number(text).has_value()) << text;
  }
}

TEST(ParseUint, WholeStringOnly) {
  EXPECT_EQ(parse_uint("42"), 42u);
  EXPECT_FALSE(parse_uint("42x").has_value());
  EXPECT_FALSE(parse_uint("-1").has_value());
  EXPECT_FALSE(parse_uint("").has_value());
}

// Every number read from an input that must become an integer goes through whole_number: out of
// range, fractional or not finite is nullopt, never an undefined cast.
TEST(WholeNumber, OnlyWhatTheTypeHoldsExactly) {
  EXPECT_EQ(whole_number<std::uint32_t>(4294967295.0), 4294967295u);
  EXPECT_EQ(whole_number<std::uint32_t>(4294967296.0), std::nullopt);
  EXPECT_EQ(whole_number<std::uint64_t>(18446744073709549568.0), 18446744073709549568ull);
  EXPECT_EQ(whole_number<std::uint64_t>(18446744073709551616.0), std::nullopt);  // 2^64
  EXPECT_EQ(whole_number<std::uint64_t>(4.44444e104), std::nullopt);
  EXPECT_EQ(whole_number<std::uint64_t>(-1.0), std::nullopt);
  EXPECT_EQ(whole_number<std::uint64_t>(1.5), std::nullopt);
  EXPECT_EQ(whole_number<std::uint64_t>(std::numeric_limits<double>::infinity()), std::nullopt);
  EXPECT_EQ(whole_number<std::uint64_t>(std::numeric_limits<double>::quiet_NaN()), std::nullopt);
  EXPECT_EQ(whole_number<std::int64_t>(-9223372036854775808.0), INT64_MIN);
  EXPECT_EQ(whole_number<std::int64_t>(9223372036854775808.0), std::nullopt);  // 2^63
}

TEST(FormatNumber, ReadableAtEveryMagnitude) {
  EXPECT_EQ(format_number(1980000), "1,980,000");
  EXPECT_EQ(format_number(28.74), "28.74");
  EXPECT_EQ(format_number(135.94), "135.9");
  EXPECT_EQ(format_number(0.1462), "0.146");
  EXPECT_EQ(format_number(168), "168");
  EXPECT_EQ(format_number(0), "0");
  EXPECT_EQ(format_number(-1234.0), "-1,234");
}

TEST(SplitWhitespace, CollapsesRuns) {
  EXPECT_EQ(split_whitespace("  ncu  --set full\tapp "),
            (std::vector<std::string>{"ncu", "--set", "full", "app"}));
  EXPECT_TRUE(split_whitespace("   ").empty());
}

}  // namespace
}  // namespace kprof
