// libFuzzer target for reading ncu's console output: progress and diagnoses.
#include <cstddef>
#include <cstdint>
#include <string>

#include "capture/ncu_diagnosis.h"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::string output(reinterpret_cast<const char*>(data), size);
  kprof::capture::parse_progress(output);
  kprof::capture::diagnose(
      {{"ncu", "--launch-count", "3", "--kernel-name", "regex:x", "--", "./app"}, output, 0});
  kprof::capture::diagnose({{"ncu", "--", "env", "A=1", "./app"}, output, 1});
  return 0;
}
