// A cubin's line tables, for one function: which source line each instruction came from.
//
// `nvcc -lineinfo` (or -G) writes `.debug_line`, a DWARF line-number program (version 2 from
// CUDA 13.0's ptxas; versions 2 to 4 are read here, 32-bit DWARF) mapping SASS offsets to CUDA
// file:line, and `.nv_debug_line_sass`, the same format mapping them to lines of the module's PTX
// (kept in `.nv_debug_ptx_txt`, one NUL-terminated string per line). A cubin holds one sequence
// per function, all starting at address 0: the DW_LNE_set_address operand is relocated
// (`.rela.debug_line`) against a symbol of the function's `.text` section, which is what ties a
// sequence to its function. Rows of other functions' sequences are not kept.
//
// Bounded like cubin.h: every read is checked against the section, an opcode's operands cannot
// run past the unit, and a DWARF form not read (version 5, 64-bit DWARF) is said, not guessed.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "importers/cubin/cubin.h"

namespace kprof::importers::cubin {

struct LineRow {
  std::uint64_t offset = 0;  // from the start of the function's section
  std::uint32_t file = 0;    // index into LineTable::files
  std::uint64_t line = 0;
};

struct LineTable {
  enum class Status { kAbsent, kRead, kUnsupported };
  Status status = Status::kAbsent;
  std::string unsupported;  // why, for kUnsupported ("DWARF version 5")
  // File names as the table gives them (directory joined), valid UTF-8.
  std::vector<std::string> files;
  std::vector<LineRow> rows;  // the function's rows by offset; for one offset, the last row given

  // The row in effect at `offset`: the last one at or before it; nullptr before the first.
  const LineRow* at(std::uint64_t offset) const;
};

// The rows of `section_name` (".debug_line", ".nv_debug_line_sass") that belong to the function
// in section `text_section`. kAbsent when the cubin has no such section. Throws InputError
// (kInputInvalid, the report and the byte) for a table that breaks the format.
LineTable read_line_table(const Cubin& cubin, std::string_view section_name,
                          std::size_t text_section);

// `.nv_debug_ptx_txt` as lines: element N-1 is PTX line N, white space runs as one space.
std::vector<std::string> ptx_lines(const Cubin& cubin);

}  // namespace kprof::importers::cubin
