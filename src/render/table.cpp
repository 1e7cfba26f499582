#include "render/table.h"

#include <algorithm>

namespace kprof::render {

static size_t display_width(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++width;  // count UTF-8 lead bytes only
  }
  return width;
}

std::string ellipsize(const std::string& text, size_t width) {
  if (display_width(text) <= width || width == 0) return text;
  std::string out;
  size_t kept = 0;
  for (size_t i = 0; i < text.size(); ++i) {
    unsigned char c = static_cast<unsigned char>(text[i]);
    if ((c & 0xC0) != 0x80) {
      if (kept == width - 1) break;
      ++kept;
    }
    out.push_back(text[i]);
  }
  return out + "…";
}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  rows_.push_back(std::move(cells));
}

std::string TextTable::to_string() const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = display_width(columns_[c].title);
    for (const auto& row : rows_) widths[c] = std::max(widths[c], display_width(row[c]));
  }
  std::string out;
  auto emit = [&](const std::vector<std::string>& cells) {
    std::string line;
    for (size_t c = 0; c < cells.size(); ++c) {
      size_t pad = widths[c] - display_width(cells[c]);
      if (c != 0) line += "  ";
      if (columns_[c].align == Align::kRight) line.append(pad, ' ');
      line += cells[c];
      if (columns_[c].align == Align::kLeft && c + 1 != cells.size()) line.append(pad, ' ');
    }
    while (!line.empty() && line.back() == ' ') line.pop_back();
    out += line + "\n";
  };
  std::vector<std::string> titles;
  for (const auto& column : columns_) titles.push_back(column.title);
  emit(titles);
  for (const auto& row : rows_) emit(row);
  return out;
}

}  // namespace kprof::render
