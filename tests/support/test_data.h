// Paths of the real captures under data/ for tests; the tests never read anything outside it.
#pragma once

#include <zlib.h>

#include <cstdlib>
#include <fstream>
#include <string>

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

}  // namespace kprof::testing
