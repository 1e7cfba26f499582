#pragma once
// One folder per test process for the files a test writes, under gtest's TempDir() (TEST_TMPDIR,
// TMPDIR or /tmp), removed when the process exits normally: ctest runs every test as its own
// process, and files named by pid alone were left behind by every run.

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <stdexcept>
#include <string>

namespace kprof::testing {

class ScratchDir {
 public:
  ScratchDir() : owner_(::getpid()) {
    std::string pattern = ::testing::TempDir() + "/kprof-test-XXXXXX";
    if (!::mkdtemp(pattern.data())) throw std::runtime_error("mkdtemp failed: " + pattern);
    path_ = pattern;
  }
  ~ScratchDir() {
    // A fork child (a death test) leaves the folder to the process that made it.
    if (::getpid() != owner_) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  const std::string& path() const { return path_; }

 private:
  pid_t owner_;
  std::string path_;
};

// The process's scratch folder, made on first use.
inline const std::string& scratch_dir() {
  static ScratchDir dir;
  return dir.path();
}

// An empty folder NAME in it, so that what a test leaves there can be listed exactly.
inline std::string fresh_dir(const std::string& name) {
  std::string dir = scratch_dir() + "/" + name;
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  return dir;
}

}  // namespace kprof::testing
