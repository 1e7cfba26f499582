// libFuzzer target for the ncu CSV reader (raw and details pages).
#include <cstddef>
#include <cstdint>
#include <string_view>

#include "common/error.h"
#include "importers/ncu_csv/ncu_csv_importer.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string_view bytes(reinterpret_cast<const char*>(data), size);
  try {
    kprof::importers::NcuCsvImporter().import("fuzz.csv", bytes);
  } catch (const kprof::InputError&) {
  }
  return 0;
}
