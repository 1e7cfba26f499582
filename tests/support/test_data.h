// Paths of the real captures under data/ for tests; the tests never read anything outside it.
#pragma once

#include <zlib.h>

#include <cstddef>
#include <cstdlib>
#include <fstream>
#include <string>
#include <vector>

namespace kprof::testing {

inline std::string data_path(const std::string& relative) {
  return std::string(KPROF_DATA_DIR) + "/" + relative;
}

// The text of a (possibly gzip-compressed) file, read whole.
inline std::string read_gzip_text(const std::string& path) {
  gzFile in = gzopen(path.c_str(), "rb");
  std::string text;
  if (!in) return text;
  char buffer[1 << 16];
  int n;
  while ((n = gzread(in, buffer, sizeof buffer)) > 0) text.append(buffer, static_cast<size_t>(n));
  gzclose(in);
  return text;
}

// A copy of data/`relative` at `copy`, for a test that alters a real capture (rows deleted,
// columns dropped) without touching the original. The copy's path.
inline std::string copy_of_data(const std::string& relative, const std::string& copy) {
  std::ifstream in(data_path(relative), std::ios::binary);
  std::ofstream(copy, std::ios::binary | std::ios::trunc) << in.rdbuf();
  return copy;
}

// A Chrome trace of `events` (JSON objects, comma-separated) written to `path`: the small traces
// tests build by hand. The path.
inline std::string write_chrome_trace(const std::string& path, const std::string& events) {
  std::ofstream(path, std::ios::binary | std::ios::trunc)
      << R"({"schemaVersion": 1, "traceEvents": [)" << events << "]}";
  return path;
}

// True when the tests run under an emulator (a cross build's ctest: qemu-user), where a few
// things only a native process can do are not there: GTEST_SKIP() with the reason there.
inline bool emulated() {
  const char* value = std::getenv("KPROF_TEST_EMULATED");
  return value && *value == '1';
}

// True in the sanitizer build (clang or GCC with AddressSanitizer: scripts/test-sanitizers).
inline constexpr bool under_sanitizers() {
#if defined(__SANITIZE_ADDRESS__)
  return true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
  return true;
#else
  return false;
#endif
#else
  return false;
#endif
}

// How many times a sweep over real captures repeats its work: `normal` in the normal build, a
// quarter of it (at least one) under the sanitizers. The sweeps (every trace under data/, every
// report, hundreds of damaged copies) are what the normal build checks for answers; under the
// sanitizers they rerun the same code paths many times over at 5-10x the cost, and were 340 s
// of CI's sanitizer stage. A sample keeps every code path while the fuzzers, which replay every
// committed input under the same sanitizers, cover the inputs.
inline std::size_t sanitizer_share(std::size_t normal) {
  return under_sanitizers() ? (normal + 3) / 4 : normal;
}

// `items` in the normal build; every fourth of them (the first included) under the sanitizers.
template <class T>
std::vector<T> sanitizer_sample(const std::vector<T>& items) {
  if (!under_sanitizers()) return items;
  std::vector<T> sample;
  for (std::size_t i = 0; i < items.size(); i += 4) sample.push_back(items[i]);
  return sample;
}

}  // namespace kprof::testing
