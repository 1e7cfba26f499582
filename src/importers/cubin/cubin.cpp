#include "importers/cubin/cubin.h"

#include <fmt/format.h>

#include "common/error.h"
#include "common/utf8.h"

namespace kprof::importers::cubin {
namespace {

constexpr std::uint32_t kSymtab = 2;       // SHT_SYMTAB
constexpr std::uint32_t kRela = 4;         // SHT_RELA
constexpr std::uint32_t kNobits = 8;       // SHT_NOBITS
constexpr std::uint16_t kXindex = 0xffff;  // SHN_XINDEX
constexpr std::uint64_t kHeaderSize = 64;
constexpr std::uint64_t kSectionHeaderSize = 64;
constexpr std::uint64_t kSymbolSize = 24;
constexpr std::uint64_t kRelaSize = 24;

std::uint64_t read_le(std::string_view bytes, std::uint64_t at, int size) {
  std::uint64_t value = 0;
  for (int i = size - 1; i >= 0; --i) {
    value = value << 8 | static_cast<unsigned char>(bytes[at + static_cast<std::uint64_t>(i)]);
  }
  return value;
}

// [offset, offset + size) lies inside a buffer of `total` bytes (no overflow).
bool inside(std::uint64_t offset, std::uint64_t size, std::uint64_t total) {
  return offset <= total && size <= total - offset;
}

// The NUL-terminated string at `at` of a string table section.
std::string table_string(const Cubin& cubin, const CubinOrigin& origin, const Section& table,
                         std::uint64_t at, std::string_view what) {
  if (at >= table.size) {
    throw_bad_cubin(
        origin, table.offset,
        fmt::format("{} names string {} of a {}-byte string table", what, at, table.size));
  }
  std::string_view text = cubin.bytes().substr(table.offset + at, table.size - at);
  size_t end = text.find('\0');
  if (end == std::string_view::npos) {
    throw_bad_cubin(origin, table.offset + at,
                    fmt::format("{}: its name runs past the end of its string table", what));
  }
  return to_valid_utf8(text.substr(0, end));
}

}  // namespace

void throw_bad_cubin(const CubinOrigin& origin, std::uint64_t at, const std::string& message) {
  throw_invalid(origin.path, InputPosition::byte(origin.offset + at),
                fmt::format("{}, its byte {}: {}", origin.what, at, message));
}

Cubin Cubin::parse(std::string_view bytes, const CubinOrigin& origin) {
  Cubin cubin;
  cubin.bytes_ = bytes;
  cubin.origin_ = origin;
  const std::uint64_t total = bytes.size();
  if (total < kHeaderSize || bytes.substr(0, 4) != std::string_view("\x7f"
                                                                    "ELF",
                                                                    4)) {
    throw_bad_cubin(origin, 0,
                    fmt::format("not an ELF file ({} bytes, no 64-byte header starting with "
                                "\\x7fELF)",
                                total));
  }
  if (bytes[4] != 2 || bytes[5] != 1) {
    throw_bad_cubin(origin, 4,
                    fmt::format("an ELF file of class {} and data encoding {}, not a "
                                "little-endian 64-bit cubin",
                                static_cast<int>(bytes[4]), static_cast<int>(bytes[5])));
  }
  std::uint64_t section_table = read_le(bytes, 0x28, 8);
  std::uint64_t entry_size = read_le(bytes, 0x3a, 2);
  std::uint64_t count = read_le(bytes, 0x3c, 2);
  std::uint64_t names_index = read_le(bytes, 0x3e, 2);
  if (section_table == 0) return cubin;  // no section table: nothing to look up
  if (entry_size < kSectionHeaderSize) {
    throw_bad_cubin(origin, 0x3a,
                    fmt::format("section headers of {} bytes, fewer than ELF64's 64", entry_size));
  }
  if (!inside(section_table, kSectionHeaderSize, total)) {
    throw_bad_cubin(origin, 0x28,
                    fmt::format("the section table at byte {} lies outside the {}-byte cubin",
                                section_table, total));
  }
  // Extended numbering: the count and the names' index in section 0.
  if (count == 0) count = read_le(bytes, section_table + 0x20, 8);
  if (names_index == kXindex) names_index = read_le(bytes, section_table + 0x28, 4);
  if (count > (total - section_table) / entry_size) {
    throw_bad_cubin(origin, 0x3c,
                    fmt::format("{} section headers of {} bytes from byte {} run past the end "
                                "of the {}-byte cubin",
                                count, entry_size, section_table, total));
  }
  std::vector<std::uint64_t> name_offsets;
  cubin.sections_.reserve(count);
  for (std::uint64_t i = 0; i < count; ++i) {
    std::uint64_t at = section_table + i * entry_size;
    Section section;
    name_offsets.push_back(read_le(bytes, at, 4));
    section.type = static_cast<std::uint32_t>(read_le(bytes, at + 4, 4));
    section.offset = read_le(bytes, at + 0x18, 8);
    section.size = read_le(bytes, at + 0x20, 8);
    section.link = static_cast<std::uint32_t>(read_le(bytes, at + 0x28, 4));
    section.info = static_cast<std::uint32_t>(read_le(bytes, at + 0x2c, 4));
    section.entry_size = read_le(bytes, at + 0x38, 8);
    if (section.type == kNobits || i == 0) {
      section.offset = section.size = 0;
    } else if (!inside(section.offset, section.size, total)) {
      throw_bad_cubin(origin, at + 0x18,
                      fmt::format("section {} ({} bytes at byte {}) runs past the end of the "
                                  "{}-byte cubin",
                                  i, section.size, section.offset, total));
    }
    cubin.sections_.push_back(std::move(section));
  }
  if (names_index != 0) {
    if (names_index >= count) {
      throw_bad_cubin(origin, 0x3e,
                      fmt::format("the section names are in section {} of {}", names_index, count));
    }
    const Section names = cubin.sections_[names_index];
    for (std::uint64_t i = 0; i < count; ++i) {
      if (i == 0 && name_offsets[i] == 0) continue;
      cubin.sections_[i].name =
          table_string(cubin, origin, names, name_offsets[i], fmt::format("section {}", i));
    }
  }
  for (const Section& table : cubin.sections_) {
    if (table.type != kSymtab) continue;
    std::uint64_t size = table.entry_size == 0 ? kSymbolSize : table.entry_size;
    if (size < kSymbolSize) {
      throw_bad_cubin(
          origin, table.offset,
          fmt::format("symbol table {} has entries of {} bytes, fewer than 24", table.name, size));
    }
    if (table.link >= count) {
      throw_bad_cubin(origin, table.offset,
                      fmt::format("symbol table {} names string table {} of {} sections",
                                  table.name, table.link, count));
    }
    const Section strings = cubin.sections_[table.link];
    std::uint64_t symbols = table.size / size;
    cubin.symbols_.reserve(symbols);
    for (std::uint64_t k = 0; k < symbols; ++k) {
      std::uint64_t at = table.offset + k * size;
      Symbol symbol;
      std::uint64_t name = read_le(bytes, at, 4);
      symbol.info = static_cast<std::uint8_t>(read_le(bytes, at + 4, 1));
      symbol.section = static_cast<std::uint16_t>(read_le(bytes, at + 6, 2));
      symbol.value = read_le(bytes, at + 8, 8);
      symbol.size = read_le(bytes, at + 16, 8);
      if (name != 0) {
        symbol.name = table_string(cubin, origin, strings, name, fmt::format("symbol {}", k));
      }
      cubin.symbols_.push_back(std::move(symbol));
    }
    break;  // a cubin has one symbol table; nvdisasm's -fun indexes it
  }
  return cubin;
}

std::optional<std::size_t> Cubin::section_index(std::string_view name) const {
  for (std::size_t i = 0; i < sections_.size(); ++i) {
    if (sections_[i].name == name) return i;
  }
  return std::nullopt;
}

std::string_view Cubin::section_bytes(std::size_t index) const {
  const Section& section = sections_.at(index);
  return bytes_.substr(section.offset, section.size);
}

std::optional<Function> Cubin::function(std::string_view mangled) const {
  for (std::size_t k = 0; k < symbols_.size(); ++k) {
    const Symbol& symbol = symbols_[k];
    if (!symbol.is_function() || symbol.name != mangled) continue;
    if (symbol.section == 0 || symbol.section >= sections_.size()) continue;  // undefined
    const Section& section = sections_[symbol.section];
    std::uint64_t size = symbol.size != 0 ? symbol.size : section.size;
    if (!inside(symbol.value, size, section.size)) {
      throw_bad_cubin(origin_, section.offset,
                      fmt::format("function {} ({} bytes from byte {} of its section) runs past "
                                  "the end of section {} ({} bytes)",
                                  symbol.name, size, symbol.value, section.name, section.size));
    }
    return Function{symbol.section, size, static_cast<std::uint32_t>(k),
                    bytes_.substr(section.offset + symbol.value, size)};
  }
  if (auto index = section_index(std::string(".text.").append(mangled))) {
    const Section& section = sections_[*index];
    return Function{*index, section.size, std::nullopt, section_bytes(*index)};
  }
  return std::nullopt;
}

std::vector<Relocation> Cubin::relocations(std::string_view target) const {
  std::vector<Relocation> out;
  auto index = section_index(std::string(".rela").append(target));
  if (!index) return out;
  const Section& section = sections_[*index];
  if (section.type != kRela) return out;
  std::uint64_t size = section.entry_size == 0 ? kRelaSize : section.entry_size;
  if (size < kRelaSize) {
    throw_bad_cubin(origin_, section.offset,
                    fmt::format("relocation section {} has entries of {} bytes, fewer than 24",
                                section.name, size));
  }
  std::uint64_t count = section.size / size;
  out.reserve(count);
  for (std::uint64_t k = 0; k < count; ++k) {
    std::uint64_t at = section.offset + k * size;
    Relocation relocation;
    relocation.offset = read_le(bytes_, at, 8);
    std::uint64_t info = read_le(bytes_, at + 8, 8);
    relocation.symbol = static_cast<std::uint32_t>(info >> 32);
    relocation.type = static_cast<std::uint32_t>(info & 0xffffffffu);
    relocation.addend = static_cast<std::int64_t>(read_le(bytes_, at + 16, 8));
    if (relocation.symbol >= symbols_.size()) {
      throw_bad_cubin(origin_, at + 8,
                      fmt::format("relocation {} of {} names symbol {} of {}", k, section.name,
                                  relocation.symbol, symbols_.size()));
    }
    out.push_back(relocation);
  }
  return out;
}

}  // namespace kprof::importers::cubin
