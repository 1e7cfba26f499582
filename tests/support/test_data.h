// Paths of the real captures under data/ for tests; the tests never read anything outside it.
#pragma once

#include <string>

namespace kprof::testing {

inline std::string data_path(const std::string& relative) {
  return std::string(KPROF_DATA_DIR) + "/" + relative;
}

}  // namespace kprof::testing
