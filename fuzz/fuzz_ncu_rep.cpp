// libFuzzer target for the .ncu-rep reader: any bytes must yield a report or an InputError.
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/error.h"
#include "importers/ncu_rep/ncu_rep_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    kprof::importers::NcuRepImporter().import("fuzz.ncu-rep", bytes);
  } catch (const kprof::InputError&) {
  }
  return 0;
}
