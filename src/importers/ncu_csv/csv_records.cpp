#include "importers/ncu_csv/csv_records.h"

#include <fmt/format.h>

#include "common/error.h"

namespace kprof::importers {

std::vector<CsvRecord> parse_csv_records(const std::string& path, std::string_view text) {
  return read_csv_table(path, text, 1, {}).records;
}

CsvTable read_csv_table(
    const std::string& path, std::string_view text, std::size_t first_line,
    const std::function<bool(std::size_t index, std::string_view rest)>& is_record) {
  CsvTable table;
  std::vector<CsvRecord>& records = table.records;
  size_t i = 0;
  size_t line = first_line;
  const size_t n = text.size();
  size_t console_pending = 0;  // counted once a record follows them: inside the table
  while (i < n) {
    // At the start of a line: skip blank lines and ncu's console lines.
    if (text[i] == '\n' || text[i] == '\r') {
      if (text[i] == '\n') ++line;
      ++i;
      continue;
    }
    if (text.substr(i, 2) == "==") {
      while (i < n && text[i] != '\n') ++i;
      ++console_pending;
      continue;
    }
    if (is_record && !is_record(records.size(), text.substr(i))) {
      table.end = i;
      table.end_line = line;
      return table;
    }
    CsvRecord record;
    record.line = line;
    for (;;) {  // one field per iteration
      std::string field;
      if (i < n && text[i] == '"') {
        size_t quote_line = line;
        ++i;
        for (;;) {
          if (i >= n) {
            throw_invalid(path, InputPosition::line(quote_line),
                          "unterminated quoted field: the file ends before its closing quote");
          }
          char c = text[i++];
          if (c == '"') {
            if (i < n && text[i] == '"') {
              field.push_back('"');
              ++i;
              continue;
            }
            break;
          }
          if (c == '\n') ++line;
          field.push_back(c);
        }
        if (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
          throw_invalid(path, InputPosition::line(line),
                        fmt::format("unexpected character '{}' after a closing quote in field {}",
                                    text[i], record.fields.size() + 1));
        }
      } else {
        while (i < n && text[i] != ',' && text[i] != '\n' && text[i] != '\r') {
          if (text[i] == '"') {
            throw_invalid(
                path, InputPosition::line(line),
                fmt::format("stray quote inside unquoted field {}", record.fields.size() + 1));
          }
          field.push_back(text[i++]);
        }
      }
      record.fields.push_back(std::move(field));
      if (i < n && text[i] == ',') {
        ++i;
        continue;
      }
      break;  // end of line or of file
    }
    if (i < n && text[i] == '\r') ++i;
    if (i < n && text[i] == '\n') {
      ++i;
      ++line;
    }
    records.push_back(std::move(record));
    table.console_lines += console_pending;
    console_pending = 0;
    table.records_end = i;
    table.records_end_line = line;
  }
  table.end = n;
  table.end_line = line;
  return table;
}

}  // namespace kprof::importers
