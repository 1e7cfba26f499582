// Output that cannot be written, through the kprof binary: its own exit code (11), the real cause
// in one line, nothing printed on stdout, nothing half-written left behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "support/confined_fs.h"
#include "support/run_process.h"
#include "support/scratch_dir.h"
#include "support/test_data.h"

namespace kprof {
namespace {

namespace fs = std::filesystem;
using testing::data_path;

testing::ProcessResult kprof(std::vector<std::string> args) {
  args.insert(args.begin(), KPROF_BINARY);
  return testing::run_process(args);
}

using kprof::testing::fresh_dir;

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

size_t lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

TEST(OutputUnwritable, HelpDocumentsTheExitCode) {
  auto help = kprof({"--help"});
  EXPECT_NE(help.out.find("11 output could not be written"), std::string::npos) << help.out;
}

TEST(OutputUnwritable, HtmlUnderAFileNamesTheRealCause) {
  std::string dir = fresh_dir("html-under-file");
  std::ofstream(dir + "/a-file") << "x";
  auto result = kprof(
      {"analyze", data_path("h200/big_min.ncu-rep.zst"), "--html", dir + "/a-file/page.html"});
  EXPECT_EQ(result.exit_code, 11) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(lines(result.err), 1u) << result.err;
  EXPECT_NE(result.err.find(dir + "/a-file/page.html"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find(std::strerror(ENOTDIR)), std::string::npos) << result.err;
}

TEST(OutputUnwritable, HtmlOnAFullDiskLeavesNothingBehind) {
  if (auto reason = testing::confined_fs_unavailable()) GTEST_SKIP() << *reason;
  std::string dir = fresh_dir("html-full-disk");
  std::string after = fresh_dir("html-full-disk-after");
  // The page of big_full takes 27 kB: more than the 16 KiB there is.
  auto result =
      testing::run_with_full_disk(dir, "16k", after,
                                  {KPROF_BINARY, "analyze", data_path("h200/big_full.ncu-rep.zst"),
                                   "--html", dir + "/page.html"});
  EXPECT_EQ(result.exit_code, 11) << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(lines(result.err), 1u) << result.err;
  EXPECT_NE(result.err.find(std::strerror(ENOSPC)), std::string::npos) << result.err;
  EXPECT_EQ(entries(after), std::vector<std::string>{});  // no temporary, no partial page
}

TEST(OutputUnwritable, HtmlInAReadOnlyFolderNamesTheRealCause) {
  if (auto reason = testing::confined_fs_unavailable()) GTEST_SKIP() << *reason;
  std::string dir = fresh_dir("html-read-only");
  auto result = testing::run_with_read_only_dir(
      dir, {KPROF_BINARY, "analyze", data_path("h200/big_min.ncu-rep.zst"), "--html",
            dir + "/page.html"});
  EXPECT_EQ(result.exit_code, 11) << result.err;
  EXPECT_NE(result.err.find(std::strerror(EROFS)), std::string::npos) << result.err;
  EXPECT_EQ(entries(dir), std::vector<std::string>{});
}

}  // namespace
}  // namespace kprof
