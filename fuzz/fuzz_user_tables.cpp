// libFuzzer target for the user's tables (--gpus, --stages, --expectations): the same bytes go
// to each loader; every outcome is a table or an InputError, never a crash.
#include <cstddef>
#include <cstdint>
#include <string>

#include "analysis/stages.h"
#include "common/error.h"
#include "hardware/gpu_specs.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string text(reinterpret_cast<const char*>(data), size);
  try {
    kprof::hardware::load_gpu_database_text("fuzz.json", text);
  } catch (const kprof::InputError&) {
  }
  try {
    kprof::analysis::parse_stage_table("fuzz.json", text);
  } catch (const kprof::InputError&) {
  }
  try {
    kprof::analysis::parse_expectations("fuzz.json", text);
  } catch (const kprof::InputError&) {
  }
  return 0;
}
