// RFC 4180 records as ncu writes them: every field quoted, ',' separated, "" escapes a quote.
// Unquoted fields (the trailing empty field of details-page metric rows) are accepted too.
#pragma once

#include <functional>
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

// The records of one table and where it ended, for text that may go on after it (a program's
// own output after ncu's CSV, captured together).
struct CsvTable {
  std::vector<CsvRecord> records;
  std::size_t end = 0;       // offset in the text where the table ended: its size, or the start of
                             // the line that is not a record of it
  std::size_t end_line = 0;  // that line's number (the last line + 1 at the end of the text)
  std::size_t console_lines = 0;     // ncu console lines ("==…") skipped between its records
  std::size_t records_end = 0;       // offset just after its last record (0: none)
  std::size_t records_end_line = 0;  // the line there
};

// Reads records from `text`, whose first line is line `first_line` of the file, as
// parse_csv_records does, until a line where a record would start is one `is_record(index,
// rest)` refuses (index: how many records were read before it; rest: the text from that line's
// start): the table ends there, unread, so that whatever follows (even an unbalanced quote) is
// not parsed as CSV.
CsvTable read_csv_table(
    const std::string& path, std::string_view text, std::size_t first_line,
    const std::function<bool(std::size_t index, std::string_view rest)>& is_record);

}  // namespace kprof::importers
