// RFC 4180 records as ncu writes them: every field quoted, ',' separated, "" escapes a quote.
// Unquoted fields (the trailing empty field of details-page metric rows) are accepted too.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace kprof::importers {

struct CsvRecord {
  std::size_t line = 0;  // 1-based line where the record starts
  std::vector<std::string> fields;
};

// Splits text into records. Lines starting with "==" outside a record (ncu's ==PROF== and
// ==WARNING== lines when the CSV was captured from the console) and blank lines are skipped.
// Throws InputError with the line number on an unterminated quote or text after a closing quote.
std::vector<CsvRecord> parse_csv_records(const std::string& path, std::string_view text);

}  // namespace kprof::importers
