// Every test process gets a private TEST_TMPDIR, so gtest's TempDir() differs per process.
// ctest runs each test as its own process, two at a time (more on larger machines); tests that
// wrote "TempDir()/hostile.csv" and the like under a shared /tmp raced each other, and one
// read the file while the other was rewriting it ("the file shrank while kprof was reading it",
// CI run of 9ad5464). Linked into each test executable, not into the support library, so the
// linker cannot leave it out.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <string>

namespace {

class PrivateTempDir {
 public:
  PrivateTempDir() : owner_(::getpid()) {
    std::string pattern = ::testing::TempDir() + "kprof-proc-XXXXXX";
    if (::mkdtemp(pattern.data()) == nullptr) return;  // TempDir() stays shared, as before
    path_ = pattern;
    ::setenv("TEST_TMPDIR", path_.c_str(), 1);
  }
  ~PrivateTempDir() {
    // A fork child (a death test, a forked server) leaves the folder to the process that made it.
    if (path_.empty() || ::getpid() != owner_) return;
    std::error_code ignored;
    std::filesystem::remove_all(path_, ignored);
  }
  PrivateTempDir(const PrivateTempDir&) = delete;
  PrivateTempDir& operator=(const PrivateTempDir&) = delete;

 private:
  pid_t owner_;
  std::string path_;
};

const PrivateTempDir private_temp_dir;

}  // namespace
