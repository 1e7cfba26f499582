#include "importers/ncu_csv/csv_records.h"

#include <gtest/gtest.h>

#include "common/error.h"

namespace kprof::importers {
namespace {

using Fields = std::vector<std::string>;

TEST(CsvRecords, QuotedFieldsEscapesAndTrailingEmptyField) {
  auto records = parse_csv_records("t.csv", "\"a\",\"b,c\",\"say \"\"hi\"\"\"\n\"1\",\"2\",\n");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].fields, (Fields{"a", "b,c", "say \"hi\""}));
  EXPECT_EQ(records[1].fields, (Fields{"1", "2", ""}));
  EXPECT_EQ(records[1].line, 2u);
}

TEST(CsvRecords, SkipsNcuConsoleLinesAndBlankLinesAndHandlesCrlf) {
  auto records = parse_csv_records(
      "t.csv", "==PROF== Connected to process 1\r\n\r\n\"ID\",\"x\"\r\n\"0\",\"1\"\r\n");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].fields, (Fields{"ID", "x"}));
  EXPECT_EQ(records[0].line, 3u);
  EXPECT_EQ(records[1].fields, (Fields{"0", "1"}));
}

TEST(CsvRecords, NewlineInsideQuotesStaysInTheField) {
  auto records = parse_csv_records("t.csv", "\"a\nb\",\"c\"\n\"d\"\n");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[0].fields[0], "a\nb");
  EXPECT_EQ(records[1].line, 3u);
}

TEST(CsvRecords, UnterminatedQuoteNamesTheLineWhereItOpened) {
  try {
    parse_csv_records("t.csv", "\"a\",\"b\"\n\"c\",\"never closed\n\n");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.position().kind, InputPosition::Kind::kLine);
    EXPECT_EQ(error.position().value, 2u);
    EXPECT_EQ(std::string(error.what()).rfind("t.csv: line 2: unterminated", 0), 0u)
        << error.what();
  }
}

TEST(CsvRecords, TextAfterClosingQuoteIsAnError) {
  EXPECT_THROW(parse_csv_records("t.csv", "\"a\"x,\"b\"\n"), InputError);
  EXPECT_THROW(parse_csv_records("t.csv", "a\"b,c\n"), InputError);
}

}  // namespace
}  // namespace kprof::importers
