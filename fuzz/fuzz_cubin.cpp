// libFuzzer target for the cubin reader behind `kprof source`: any bytes as a module's cubin —
// its ELF tables, every function's bytes, the DWARF line tables (.debug_line,
// .nv_debug_line_sass) and the embedded PTX — must be read or refused with one InputError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/error.h"
#include "importers/cubin/cubin.h"
#include "importers/cubin/line_table.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  using namespace kprof::importers::cubin;
  try {
    Cubin cubin = Cubin::parse(bytes, CubinOrigin{"fuzz.ncu-rep", 100, "the cubin"});
    for (const Symbol& symbol : cubin.symbols()) {
      if (!symbol.is_function()) continue;
      auto function = cubin.function(symbol.name);
      if (!function) continue;
      for (std::string_view table : {".debug_line", ".nv_debug_line_sass"}) {
        LineTable lines = read_line_table(cubin, table, function->section);
        for (std::uint64_t offset = 0; offset < function->size && offset < 4096; offset += 16) {
          if (const LineRow* row = lines.at(offset);
              row && row->file >= lines.files.size() && !lines.files.empty()) {
            __builtin_trap();  // a row's file must name an entry of its table
          }
        }
      }
    }
    ptx_lines(cubin);
  } catch (const kprof::InputError&) {
  }
  return 0;
}
