#include "render/table.h"

#include <algorithm>

#include "common/utf8.h"

namespace kprof::render {

size_t display_width(const std::string& text) {
  size_t width = 0;
  for (unsigned char c : text) {
    if ((c & 0xC0) != 0x80) ++width;  // count UTF-8 lead bytes only
  }
  return width;
}

std::string ellipsize(const std::string& raw, size_t width) {
  std::string text = escape_for_terminal(raw);
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

std::vector<std::string> wrap_text(const std::string& text, size_t width) {
  std::vector<std::string> lines;
  width = std::max<size_t>(width, 1);
  size_t start = 0;
  while (start < text.size()) {
    // Byte offset after `width` characters, and the last break opportunity before it.
    size_t end = start, characters = 0, last_break = std::string::npos;
    while (end < text.size()) {
      if ((static_cast<unsigned char>(text[end]) & 0xC0) != 0x80) {
        if (characters == width) break;
        ++characters;
      }
      char c = text[end++];
      if (c == ',' || c == ';' || c == ' ') last_break = end;
    }
    if (end < text.size() && last_break != std::string::npos && last_break > start + width / 2) {
      end = last_break;
    }
    lines.push_back(text.substr(start, end - start));
    start = end;
  }
  return lines;
}

void TextTable::add_row(std::vector<std::string> cells) {
  cells.resize(columns_.size());
  for (std::string& cell : cells) cell = escape_for_terminal(cell);
  rows_.push_back({std::move(cells), {}});
}

void TextTable::add_line(std::string text) { rows_.push_back({{}, escape_for_terminal(text)}); }

std::string TextTable::to_string() const {
  std::vector<size_t> widths(columns_.size());
  for (size_t c = 0; c < columns_.size(); ++c) {
    widths[c] = display_width(columns_[c].title);
    for (const auto& row : rows_) {
      if (!row.cells.empty()) widths[c] = std::max(widths[c], display_width(row.cells[c]));
    }
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
  for (const auto& row : rows_) {
    if (row.cells.empty()) {
      out += row.line + "\n";
    } else {
      emit(row.cells);
    }
  }
  return out;
}

}  // namespace kprof::render
