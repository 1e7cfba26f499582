// A cubin (the ELF64 file a CUDA module is compiled to, stored whole in an .ncu-rep's source
// entry): its sections, symbols and relocations, read with every offset and size checked
// against the bytes, for `kprof source` (a kernel's instructions by offset, its line table).
//
// Bounded: nothing is read outside the cubin, and each table's entries are counted against the
// bytes that hold them, so a damaged or hostile cubin costs at most one pass over itself. A
// cubin that breaks the format throws InputError naming the report, the byte (the cubin's
// offset in the report plus the offset in it) and what was wrong, with kInputInvalid (exit 4).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace kprof::importers::cubin {

// Where a cubin lies, for messages: the report it came from, the cubin's first byte in the
// report's (decompressed) bytes, and what it is ("the cubin of module 0x1700000001").
struct CubinOrigin {
  std::string path;
  std::uint64_t offset = 0;
  std::string what = "the cubin";
};

// Throws InputError (kInputInvalid) at origin.offset + at: "<what>, its byte <at>: <message>".
[[noreturn]] void throw_bad_cubin(const CubinOrigin& origin, std::uint64_t at,
                                  const std::string& message);

struct Section {
  std::string name;  // valid UTF-8 (ill-formed bytes replaced)
  std::uint32_t type = 0;
  std::uint64_t offset = 0, size = 0;  // inside the cubin, checked (but for SHT_NOBITS)
  std::uint32_t link = 0, info = 0;
  std::uint64_t entry_size = 0;
};

struct Symbol {
  std::string name;  // valid UTF-8 (ill-formed bytes replaced), as the model's kernel names
  std::uint8_t info = 0;
  std::uint16_t section = 0;  // st_shndx
  std::uint64_t value = 0, size = 0;

  bool is_function() const { return (info & 0xf) == 2; }  // STT_FUNC
};

struct Relocation {
  std::uint64_t offset = 0;  // in the section it applies to
  std::uint32_t symbol = 0;  // index into symbols()
  std::uint32_t type = 0;
  std::int64_t addend = 0;
};

// A kernel's code: the section holding it and its bytes.
struct Function {
  std::size_t section = 0;
  std::uint64_t size = 0;                     // bytes (16 per instruction on sm_70 and later)
  std::optional<std::uint32_t> symbol_index;  // in the symbol table (nvdisasm -fun takes it)
  std::string_view text;                      // the function's bytes, `size` of them
};

class Cubin {
 public:
  // The ELF header, the section table, section names and the symbol table(s). Throws InputError
  // (kInputInvalid) for anything that is not a little-endian ELF64 file or lies outside it.
  static Cubin parse(std::string_view bytes, const CubinOrigin& origin);

  std::string_view bytes() const { return bytes_; }
  const CubinOrigin& origin() const { return origin_; }
  const std::vector<Section>& sections() const { return sections_; }
  const std::vector<Symbol>& symbols() const { return symbols_; }

  std::optional<std::size_t> section_index(std::string_view name) const;
  // A section's bytes (empty for SHT_NOBITS); index < sections().size().
  std::string_view section_bytes(std::size_t index) const;

  // The function symbol named `mangled` (its section and size), else the section
  // `.text.<mangled>` whole; nullopt when neither exists. Throws when the symbol's bytes lie
  // outside its section.
  std::optional<Function> function(std::string_view mangled) const;

  // The entries of `.rela<target>` (SHT_RELA, 24 bytes each) in file order; empty when there is
  // no such section. Throws for a symbol index outside the symbol table.
  std::vector<Relocation> relocations(std::string_view target) const;

 private:
  std::string_view bytes_;
  CubinOrigin origin_;
  std::vector<Section> sections_;
  std::vector<Symbol> symbols_;  // of the first SHT_SYMTAB (cubins have one), by index
};

}  // namespace kprof::importers::cubin
