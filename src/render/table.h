// A plain-text table for terminals: left-aligned text columns, right-aligned numbers, no colour.
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
  std::string to_string() const;

 private:
  std::vector<Column> columns_;
  std::vector<std::vector<std::string>> rows_;
};

// Shortens text to at most width characters (UTF-8 aware), ending in "…" when cut.
std::string ellipsize(const std::string& text, size_t width);

}  // namespace kprof::render
