// A report of a format version kprof does not know, end to end through the kprof binary: the
// fixture is a real report (data/h200/big_full.ncu-rep.zst, ncu 2025.3.1) with its FileHeader
// version bumped from 7 to 8 — no report of a newer format was available. The ncu is
// tests/support/fake_ncu.py, which answers `ncu --import R --csv --page raw` with the raw CSV
// ncu 2025.3.1 exported of the same report (data/h200/big_full_raw.csv.zst).
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "common/file_bytes.h"
#include "support/run_process.h"
#include "support/scratch_dir.h"
#include "support/test_data.h"

namespace kprof {
namespace {

using testing::data_path;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

// The bumped report, and a recording folder for the fake ncu holding the report's raw export.
struct Fixture {
  std::string report, recording, log;
};

const Fixture& fixture() {
  static const Fixture made = [] {
    Fixture f;
    std::string source = data_path("h200/big_full.ncu-rep.zst");
    std::string plain = zstd_decompress(source, read_file(source));
    EXPECT_EQ(static_cast<unsigned char>(plain[9]), 7);  // FileHeader {Version: 7}
    plain[9] = 8;
    f.report = testing::scratch_dir() + "/big_full_v8.ncu-rep";
    std::ofstream(f.report, std::ios::binary) << plain;
    f.recording = testing::scratch_dir() + "/recording";
    std::filesystem::create_directories(f.recording);
    std::filesystem::copy_file(data_path("h200/big_full_raw.csv.zst"),
                               f.recording + "/raw.csv.zst");
    f.log = testing::scratch_dir() + "/ncu-calls.jsonl";
    return f;
  }();
  return made;
}

class ReadPolicy : public ::testing::Test {
 protected:
  void SetUp() override {
    setenv("FAKE_NCU_RECORDING", fixture().recording.c_str(), 1);
    setenv("FAKE_NCU_LOG", fixture().log.c_str(), 1);
    std::filesystem::remove(fixture().log);
  }
  void TearDown() override { unsetenv("KPROF_NCU"); }
  static void without_ncu() { setenv("KPROF_NCU", "/nonexistent/ncu", 1); }
  static void with_fake_ncu() { setenv("KPROF_NCU", KPROF_FAKE_NCU, 1); }
};

size_t count_lines(const std::string& text) {
  return static_cast<size_t>(std::count(text.begin(), text.end(), '\n'));
}

TEST_F(ReadPolicy, UnknownVersionIsReadWithOneWarningLine) {
  without_ncu();
  testing::ProcessResult run = testing::run_process({KPROF_BINARY, "analyze", fixture().report});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(count_lines(run.err), 1u) << run.err;
  EXPECT_NE(run.err.find("kprof: " + fixture().report +
                         ": report format version 8 (written by Nsight Compute 2025.3.1.0 "
                         "(build 36398880) (public-release)) is newer than the version 7 kprof "
                         "knows"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.err.find("--fallback-ncu"), std::string::npos) << run.err;
  EXPECT_NE(run.out.find("24 kernels"), std::string::npos) << run.out;
}

TEST_F(ReadPolicy, WithAnNcuOnPathTheWarningSaysHowNcuReadsIt) {
  with_fake_ncu();
  testing::ProcessResult run = testing::run_process({KPROF_BINARY, "analyze", fixture().report});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(count_lines(run.err), 1u) << run.err;
  EXPECT_NE(run.err.find("`ncu --import " + fixture().report + " --csv --page raw`"),
            std::string::npos)
      << run.err;
  EXPECT_FALSE(std::filesystem::exists(fixture().log)) << "ncu was run without --fallback-ncu";
}

TEST_F(ReadPolicy, FallbackNcuReadsNcusOwnExport) {
  with_fake_ncu();
  testing::ProcessResult run =
      testing::run_process({KPROF_BINARY, "analyze", "--fallback-ncu", fixture().report});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_NE(run.err.find("read through " + std::string(KPROF_FAKE_NCU) + "'s own export"),
            std::string::npos)
      << run.err;
  EXPECT_NE(run.out.find("ncu-csv-raw"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("24 kernels"), std::string::npos) << run.out;
  // One call, from an argv: ncu --import REPORT --csv --page raw.
  std::string calls = read_file(fixture().log);
  EXPECT_EQ(count_lines(calls), 1u) << calls;
  EXPECT_NE(
      calls.find("\"--import\", \"" + fixture().report + "\", \"--csv\", \"--page\", \"raw\""),
      std::string::npos)
      << calls;
  // inspect takes it too.
  testing::ProcessResult inspect = testing::run_process(
      {KPROF_BINARY, "inspect", "--fallback-ncu", "--session", fixture().report});
  EXPECT_EQ(inspect.exit_code, 0) << inspect.err;
}

// Issue 39 problem 18: a relative path that starts with '-' went to ncu as a word of its own
// after --import, where ncu reads it as an option; it goes as ./-NAME.
TEST_F(ReadPolicy, FallbackNcuPassesADashLeadingPathAsAPath) {
  with_fake_ncu();
  const std::string folder = testing::scratch_dir() + "/dash";
  std::filesystem::create_directories(folder);
  std::filesystem::copy_file(fixture().report, folder + "/-v8.ncu-rep",
                             std::filesystem::copy_options::overwrite_existing);
  const std::filesystem::path was = std::filesystem::current_path();
  std::filesystem::current_path(folder);
  testing::ProcessResult run =
      testing::run_process({KPROF_BINARY, "analyze", "--fallback-ncu", "--", "-v8.ncu-rep"});
  std::filesystem::current_path(was);
  EXPECT_EQ(run.exit_code, 0) << run.err;
  std::string calls = read_file(fixture().log);
  EXPECT_EQ(count_lines(calls), 1u) << calls;
  EXPECT_NE(calls.find("\"--import\", \"./-v8.ncu-rep\", \"--csv\""), std::string::npos) << calls;
}

TEST_F(ReadPolicy, FallbackWithoutAnNcuIsNotReady) {
  without_ncu();
  testing::ProcessResult run =
      testing::run_process({KPROF_BINARY, "analyze", "--fallback-ncu", fixture().report});
  EXPECT_EQ(run.exit_code, 9) << run.err;
  EXPECT_EQ(count_lines(run.err), 1u) << run.err;
  EXPECT_NE(run.err.find("--fallback-ncu: no ncu found"), std::string::npos) << run.err;
}

TEST_F(ReadPolicy, FallbackOnAKnownVersionRunsNoNcu) {
  with_fake_ncu();
  testing::ProcessResult run = testing::run_process(
      {KPROF_BINARY, "analyze", "--fallback-ncu", data_path("h200/big_full.ncu-rep.zst")});
  EXPECT_EQ(run.exit_code, 0) << run.err;
  EXPECT_EQ(run.err, "");
  EXPECT_FALSE(std::filesystem::exists(fixture().log));
}

}  // namespace
}  // namespace kprof
