// Every column of the verdict outputs declared once: its header in the terminal table, the CSV
// and the HTML page (empty where that output does not show it), how its cell is written in each,
// and when the table shows it. The table, the CSV writer and the HTML page read these
// declarations in their own order (each output's order is one list of names below), so a new
// column is one declaration and a name in the lists of the outputs that show it — as bloaty's
// one row model printed by each format. The JSON (kprof.analysis/1) is the schema's, apart.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "render/table.h"
#include "render/verdict_render.h"

namespace kprof::render {

// What a cell may need beyond its kernel.
struct CellContext {
  const analysis::Thresholds* thresholds = nullptr;
  size_t name_width = 48;
};

struct VerdictColumn {
  std::string_view name;  // the declaration's own name, used by the order lists
  // The terminal table: header, alignment, when it shows, the cell.
  std::string_view table_header;
  TextTable::Align align = TextTable::Align::kLeft;
  enum class Shown { kAlways, kWhenJoined, kWhenCalibrated } shown = Shown::kAlways;
  std::string (*table_cell)(const AnalyzedKernel&, const CellContext&) = nullptr;
  // The CSV: header (a field name) and the field, quoted or not as it is written.
  std::string_view csv_header;
  std::string (*csv_cell)(const AnalyzedKernel&, const CellContext&) = nullptr;
  // The HTML table: the whole <th>…</th> and <td>…</td> (classes and titles included).
  std::string_view html_header;
  std::string (*html_cell)(const AnalyzedKernel&, const CellContext&) = nullptr;
};

// The outputs' columns, in their order.
std::vector<const VerdictColumn*> table_columns(bool joined, bool calibrated);
std::vector<const VerdictColumn*> csv_columns();
std::vector<const VerdictColumn*> html_columns(bool joined);

// Text a page shows, escaped for HTML.
std::string html_escape(std::string_view text);

}  // namespace kprof::render
