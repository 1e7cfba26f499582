// Where a bundle's files land and what a bundle that cannot be written reports.
#include "capture/evidence_bundle.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "support/scratch_dir.h"

namespace kprof::capture {
namespace {

namespace fs = std::filesystem;

using kprof::testing::fresh_dir;

TEST(EvidenceBundle, AFolderThatCannotBeMadeIsAWriteFailure) {
  std::string dir = fresh_dir("bundle-under-file");
  std::ofstream(dir + "/a-file") << "x";
  try {
    EvidenceBundle bundle(dir + "/a-file/bundle");
    FAIL() << "expected an InputError";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kOutputUnwritable) << error.what();
  }
}

TEST(EvidenceBundle, FilesLandInANewFolderNeverInOnePlantedBeforehand) {
  std::string dir = fresh_dir("bundle-planted");
  std::string elsewhere = dir + "/elsewhere";
  fs::create_directories(elsewhere);
  // The staging name kprof used to pick (FINAL.partial-PID), planted as a link to elsewhere.
  fs::create_directory_symlink(elsewhere, dir + "/bundle.partial-" + std::to_string(::getpid()));
  EvidenceBundle bundle(dir + "/bundle");
  EXPECT_FALSE(fs::is_symlink(fs::symlink_status(bundle.staging_path())));
  bundle.write("report.txt", "hello");
  std::string final_path = bundle.commit({{"schema", "kprof.bundle/1"}, {"status", "ok"}});
  EXPECT_TRUE(fs::is_empty(elsewhere));
  EXPECT_TRUE(fs::is_regular_file(final_path + "/report.txt"));
  EXPECT_TRUE(fs::is_regular_file(final_path + "/manifest.json"));
}

TEST(EvidenceBundle, BytesThatAreNotUtf8AreWrittenAsReplacementsNotThrownOn) {
  // A manifest quotes what kprof read: a command line from /proc, a server's log line.
  std::string dir = fresh_dir("bundle-bytes");
  EvidenceBundle bundle(dir + "/bundle");
  std::string final_path =
      bundle.commit({{"schema", "kprof.bundle/1"}, {"quoted", std::string("serve \xff\xfe x")}});
  std::ifstream in(final_path + "/manifest.json");
  std::string text{std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
  EXPECT_NE(text.find("serve \xef\xbf\xbd\xef\xbf\xbd x"), std::string::npos) << text;  // U+FFFD
}

}  // namespace
}  // namespace kprof::capture
