// A plain-text table for terminals: left-aligned text columns, right-aligned numbers, no colour.
// Every cell is shown literally (escape_for_terminal): names from reports and traces cannot move
// the cursor, start lines or reorder text.
#pragma once

#include <string>
#include <vector>

namespace kprof::render {

class TextTable {
 public:
  enum class Align { kLeft, kRight };
  struct Column {
    std::string title;
    Align align = Align::kLeft;
  };

  explicit TextTable(std::vector<Column> columns) : columns_(std::move(columns)) {}
  void add_row(std::vector<std::string> cells);
  // A line of its own between rows, outside the columns (their widths ignore it).
  void add_line(std::string text);
  std::string to_string() const;

 private:
  struct Row {
    std::vector<std::string> cells;  // empty for a line of its own
    std::string line;
  };
  std::vector<Column> columns_;
  std::vector<Row> rows_;
};

// Characters as a terminal counts them for alignment (UTF-8 lead bytes).
size_t display_width(const std::string& text);

// The text as a terminal shows it literally (escape_for_terminal), shortened to at most width
// characters (UTF-8 aware), ending in "…" when cut.
std::string ellipsize(const std::string& text, size_t width);

// Splits text into lines of at most width characters, after a ',', ';' or space where one is
// near the end, else anywhere (UTF-8 aware).
std::vector<std::string> wrap_text(const std::string& text, size_t width);

}  // namespace kprof::render
