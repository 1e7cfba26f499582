#include "importers/cubin/line_table.h"

#include <fmt/format.h>

#include <algorithm>
#include <map>
#include <optional>

#include "common/utf8.h"

namespace kprof::importers::cubin {
namespace {

// A bounded reader over one section: every read checked against the end it is given, a failure
// thrown at the byte it happened, in the report's terms.
class Reader {
 public:
  Reader(const Cubin& cubin, std::size_t section, std::string_view what)
      : cubin_(cubin),
        section_(cubin.sections()[section]),
        bytes_(cubin.section_bytes(section)),
        what_(what) {}

  std::uint64_t at() const { return at_; }
  void seek(std::uint64_t at) { at_ = at; }
  std::uint64_t size() const { return bytes_.size(); }

  [[noreturn]] void fail(std::uint64_t at, const std::string& message) const {
    throw_bad_cubin(
        cubin_.origin(), section_.offset + at,
        fmt::format("{} (section {}, its byte {}): {}", what_, section_.name, at, message));
  }

  void need(std::uint64_t count, std::uint64_t end, std::string_view what) const {
    if (at_ > end || count > end - at_) {
      fail(at_, fmt::format("{} runs past the end of its {}", what,
                            end == bytes_.size() ? "section" : "unit"));
    }
  }

  std::uint64_t fixed(int size, std::uint64_t end, std::string_view what) {
    need(static_cast<std::uint64_t>(size), end, what);
    std::uint64_t value = 0;
    for (int i = size - 1; i >= 0; --i) {
      value = value << 8 | static_cast<unsigned char>(bytes_[at_ + static_cast<std::uint64_t>(i)]);
    }
    at_ += static_cast<std::uint64_t>(size);
    return value;
  }

  std::uint64_t uleb(std::uint64_t end, std::string_view what) {
    std::uint64_t value = 0;
    int shift = 0;
    while (true) {
      need(1, end, what);
      auto byte = static_cast<unsigned char>(bytes_[at_++]);
      if (shift < 64) value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      shift += 7;
      if (!(byte & 0x80)) return value;
    }
  }

  std::int64_t sleb(std::uint64_t end, std::string_view what) {
    std::uint64_t value = 0;
    int shift = 0;
    unsigned char byte = 0;
    do {
      need(1, end, what);
      byte = static_cast<unsigned char>(bytes_[at_++]);
      if (shift < 64) value |= static_cast<std::uint64_t>(byte & 0x7f) << shift;
      shift += 7;
    } while (byte & 0x80);
    if (shift < 64 && (byte & 0x40)) value |= ~std::uint64_t{0} << shift;
    return static_cast<std::int64_t>(value);
  }

  std::string string(std::uint64_t end, std::string_view what) {
    std::string_view rest = bytes_.substr(at_, end - at_);
    size_t nul = rest.find('\0');
    if (nul == std::string_view::npos) fail(at_, fmt::format("{} has no terminating NUL", what));
    at_ += nul + 1;
    return to_valid_utf8(rest.substr(0, nul));
  }

  bool peek_nul(std::uint64_t end, std::string_view what) const {
    need(1, end, what);
    return bytes_[at_] == '\0';
  }

 private:
  const Cubin& cubin_;
  const Section& section_;
  std::string_view bytes_;
  std::string what_;
  std::uint64_t at_ = 0;
};

}  // namespace

const LineRow* LineTable::at(std::uint64_t offset) const {
  auto it =
      std::upper_bound(rows.begin(), rows.end(), offset,
                       [](std::uint64_t value, const LineRow& row) { return value < row.offset; });
  if (it == rows.begin()) return nullptr;
  return &*std::prev(it);
}

LineTable read_line_table(const Cubin& cubin, std::string_view section_name,
                          std::size_t text_section) {
  LineTable table;
  auto index = cubin.section_index(section_name);
  if (!index) return table;
  table.status = LineTable::Status::kRead;
  // Which symbol each relocated set_address operand names, by the operand's offset.
  std::map<std::uint64_t, const Relocation*> relocated;
  std::vector<Relocation> relocations = cubin.relocations(section_name);
  for (const Relocation& relocation : relocations) relocated[relocation.offset] = &relocation;

  Reader in(cubin, *index, "the line table");
  std::map<std::uint64_t, LineRow> rows;  // by offset; the last row given for one offset wins
  bool files_taken = false;
  while (in.at() < in.size()) {
    std::uint64_t unit_length = in.fixed(4, in.size(), "a unit length");
    if (unit_length >= 0xfffffff0u) {
      table.status = LineTable::Status::kUnsupported;
      table.unsupported = "64-bit DWARF";
      table.rows.clear();
      return table;
    }
    in.need(unit_length, in.size(), fmt::format("the unit of {} bytes", unit_length));
    const std::uint64_t end = in.at() + unit_length;
    std::uint64_t version = in.fixed(2, end, "the version");
    if (version < 2 || version > 4) {
      table.status = LineTable::Status::kUnsupported;
      table.unsupported = fmt::format("DWARF version {}", version);
      table.rows.clear();
      return table;
    }
    std::uint64_t header_length = in.fixed(4, end, "the header length");
    in.need(header_length, end, "the header");
    const std::uint64_t program = in.at() + header_length;
    std::uint64_t min_instruction = in.fixed(1, program, "the header");
    if (version >= 4) in.fixed(1, program, "the header");  // maximum_operations_per_instruction
    in.fixed(1, program, "the header");                    // default_is_stmt
    auto line_base = static_cast<std::int8_t>(in.fixed(1, program, "the header"));
    std::uint64_t line_range = in.fixed(1, program, "the header");
    std::uint64_t opcode_base = in.fixed(1, program, "the header");
    if (line_range == 0) in.fail(in.at() - 2, "line_range is 0");
    if (opcode_base == 0) in.fail(in.at() - 1, "opcode_base is 0");
    std::vector<std::uint64_t> operand_counts;
    for (std::uint64_t k = 1; k < opcode_base; ++k) {
      operand_counts.push_back(in.fixed(1, program, "the standard opcode lengths"));
    }
    std::vector<std::string> directories{""};
    while (!in.peek_nul(program, "the directory table")) {
      directories.push_back(in.string(program, "a directory name"));
    }
    in.seek(in.at() + 1);
    std::vector<std::string> files{""};  // DWARF v2-4 files count from 1
    while (!in.peek_nul(program, "the file table")) {
      std::string name = in.string(program, "a file name");
      std::uint64_t directory = in.uleb(program, "a file entry");
      in.uleb(program, "a file entry");  // modification time
      in.uleb(program, "a file entry");  // length
      if (directory != 0 && directory < directories.size() && !name.empty() && name[0] != '/') {
        std::string joined = directories[directory];
        if (!joined.empty() && joined.back() != '/') joined += '/';
        name = joined + name;
      }
      files.push_back(std::move(name));
    }
    in.seek(program);

    // The state machine (DWARF 4 §6.2.2), rows kept for the function's section only.
    std::uint64_t address = 0;
    std::uint64_t file = 1;
    std::uint64_t line = 1;  // unsigned: a hostile advance wraps, never overflows
    // The section of the sequence's function (SHN_XINDEX-free cubins: 16 bits); -1 until relocated.
    std::int64_t sequence_section = -1;
    bool unit_has_rows = false;
    auto emit = [&] {
      if (sequence_section < 0 || static_cast<std::size_t>(sequence_section) != text_section)
        return;
      unit_has_rows = true;
      // A file index outside the table is kept as 0 (no name), not trusted.
      auto file_index = static_cast<std::uint32_t>(file < files.size() ? file : 0);
      rows[address] = LineRow{address, file_index, line};
    };
    while (in.at() < end) {
      std::uint64_t opcode_at = in.at();
      std::uint64_t opcode = in.fixed(1, end, "an opcode");
      if (opcode >= opcode_base) {
        std::uint64_t adjusted = opcode - opcode_base;
        address += (adjusted / line_range) * min_instruction;
        line += static_cast<std::uint64_t>(line_base +
                                           static_cast<std::int64_t>(adjusted % line_range));
        emit();
        continue;
      }
      switch (opcode) {
        case 0: {  // extended
          std::uint64_t length = in.uleb(end, "an extended opcode");
          if (length == 0) in.fail(opcode_at, "an extended opcode of length 0");
          in.need(length, end, "an extended opcode");
          std::uint64_t next = in.at() + length;
          std::uint64_t sub = in.fixed(1, next, "an extended opcode");
          if (sub == 1) {  // DW_LNE_end_sequence: the end of the function, not a row of its own
            address = 0;
            file = 1;
            line = 1;
            sequence_section = -1;
          } else if (sub == 2) {  // DW_LNE_set_address
            std::uint64_t operand_at = in.at();
            std::uint64_t size = length - 1;
            if (size != 4 && size != 8) {
              in.fail(operand_at, fmt::format("a set_address operand of {} bytes", size));
            }
            address = in.fixed(static_cast<int>(size), next, "a set_address operand");
            auto relocation = relocated.find(operand_at);
            if (relocation != relocated.end()) {
              const Symbol& symbol = cubin.symbols()[relocation->second->symbol];
              sequence_section = symbol.section;
              address += symbol.value + static_cast<std::uint64_t>(relocation->second->addend);
            } else {
              sequence_section = -1;
            }
          }
          in.seek(next);  // DW_LNE_define_file and vendor opcodes: skipped by their length
          break;
        }
        case 1:  // DW_LNS_copy
          emit();
          break;
        case 2:  // DW_LNS_advance_pc
          address += in.uleb(end, "an advance_pc operand") * min_instruction;
          break;
        case 3:  // DW_LNS_advance_line
          line += static_cast<std::uint64_t>(in.sleb(end, "an advance_line operand"));
          break;
        case 4:  // DW_LNS_set_file
          file = in.uleb(end, "a set_file operand");
          break;
        case 8:  // DW_LNS_const_add_pc
          address += ((255 - opcode_base) / line_range) * min_instruction;
          break;
        case 9:  // DW_LNS_fixed_advance_pc
          address += in.fixed(2, end, "a fixed_advance_pc operand");
          break;
        case 6:   // negate_stmt
        case 7:   // set_basic_block
        case 10:  // set_prologue_end
        case 11:  // set_epilogue_begin
          break;
        default:  // 5 set_column, 12 set_isa, and opcodes this version does not know
          for (std::uint64_t k = 0; k < operand_counts[opcode - 1]; ++k) {
            in.uleb(end, "an opcode operand");
          }
      }
    }
    if (unit_has_rows && !files_taken) {
      table.files = files;
      files_taken = true;
    }
    in.seek(end);
  }
  table.rows.reserve(rows.size());
  for (auto& [offset, row] : rows) table.rows.push_back(row);
  return table;
}

std::vector<std::string> ptx_lines(const Cubin& cubin) {
  std::vector<std::string> lines;
  auto index = cubin.section_index(".nv_debug_ptx_txt");
  if (!index) return lines;
  std::string_view text = cubin.section_bytes(*index);
  size_t at = 0;
  while (at < text.size()) {
    size_t nul = text.find('\0', at);
    std::string_view line =
        text.substr(at, nul == std::string_view::npos ? text.size() - at : nul - at);
    std::string squeezed;
    bool space = false;
    for (char c : line) {
      if (c == ' ' || c == '\t' || c == '\r' || c == '\n') {
        space = !squeezed.empty();
        continue;
      }
      if (space) squeezed += ' ';
      space = false;
      squeezed += c;
    }
    lines.push_back(to_valid_utf8(squeezed));
    if (nul == std::string_view::npos) break;
    at = nul + 1;
  }
  return lines;
}

}  // namespace kprof::importers::cubin
