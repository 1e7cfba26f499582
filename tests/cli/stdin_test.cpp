// "-" as an input path: every verb that reads one file reads stdin to its end (a pipe here, as
// `cat FILE | kprof VERB -`), compressed input told by content, an empty stdin refused by name.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "support/run_process.h"
#include "support/test_data.h"

namespace kprof {
namespace {

using testing::data_path;

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

testing::ProcessResult kprof(std::vector<std::string> args) {
  args.insert(args.begin(), KPROF_BINARY);
  return testing::run_process(args);
}

testing::ProcessResult kprof_with_stdin(std::vector<std::string> args, const std::string& input) {
  args.insert(args.begin(), KPROF_BINARY);
  return testing::run_process_with_input(args, input);
}

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size()))
    text.replace(at, from.size(), to);
  return text;
}

// The verdicts of a report piped in are those of the file, row for row; only the report column
// says "-" instead of the path.
void expect_analyze_reads_stdin(const std::string& path, const std::string& piped) {
  auto from_file = kprof({"analyze", "--csv", path});
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  auto from_stdin = kprof_with_stdin({"analyze", "--csv", "-"}, piped);
  ASSERT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  EXPECT_EQ(from_stdin.out, replace_all(from_file.out, "\"" + path + "\"", "\"-\""));
  EXPECT_GE(std::count(from_stdin.out.begin(), from_stdin.out.end(), '\n'), 3) << from_stdin.out;
}

TEST(Stdin, AnalyzeReadsACompressedReportPipedIn) {
  std::string path = data_path("h200/big_full.ncu-rep.zst");
  expect_analyze_reads_stdin(path, file_text(path));  // zstd, told by its magic
}

TEST(Stdin, AnalyzeReadsAPlainCsvPipedIn) {
  std::string path = data_path("h200/multi_process_basic_raw.csv");
  expect_analyze_reads_stdin(path, file_text(path));
}

// The issue's symptom: /dev/stdin was sized by stat (0 for a pipe) and read as empty.
TEST(Stdin, DevStdinIsReadToItsEnd) {
  std::string path = data_path("h200/big_min.ncu-rep.zst");
  auto result = kprof_with_stdin({"inspect", "--json", "/dev/stdin"}, file_text(path));
  ASSERT_EQ(result.exit_code, 0) << result.err;
  auto reference = kprof({"inspect", "--json", path});
  ASSERT_EQ(reference.exit_code, 0) << reference.err;
  auto kernels = [](const std::string& text) {
    return nlohmann::json::parse(text).at("reports").at(0).at("kernels");
  };
  EXPECT_EQ(kernels(result.out), kernels(reference.out));
}

TEST(Stdin, RankReadsAGzipTracePipedIn) {
  std::string path = data_path("h200/trace_eager.json.gz");
  auto from_file = kprof({"rank", "--json", path});
  ASSERT_EQ(from_file.exit_code, 0) << from_file.err;
  auto from_stdin = kprof_with_stdin({"rank", "--json", "-"}, file_text(path));
  ASSERT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  auto expected = nlohmann::json::parse(from_file.out);
  auto actual = nlohmann::json::parse(from_stdin.out);
  EXPECT_EQ(actual.at("kernels"), expected.at("kernels"));
  EXPECT_EQ(actual.at("events"), 4501);  // as `rank` prints for the file (data/h200/README.md)
  EXPECT_EQ(actual.at("gpu_events"), expected.at("gpu_events"));
}

// A kernel whose name leaves its stage open (nvFuser's generated name), carrying all the GPU
// time: from a file rank reads the trace again for its launching operator; standard input is
// read once, so it keeps its name's stage, and kprof says so.
TEST(Stdin, AGeneratedKernelPipedInKeepsItsNamesStageAndKprofSaysSo) {
  const std::string trace = R"({"traceEvents": [
    {"ph": "X", "cat": "cpu_op", "name": "aten::mm", "pid": 1, "tid": 1, "ts": 100, "dur": 50},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 110,
     "dur": 5, "args": {"correlation": 7}},
    {"ph": "X", "cat": "kernel", "name": "nvfuser_none_f0_c0_r0_g0", "pid": 0, "tid": 7,
     "ts": 200, "dur": 100, "args": {"device": 0, "stream": 7, "correlation": 7}}]})";
  auto from_stdin = kprof_with_stdin({"rank", "-"}, trace);
  ASSERT_EQ(from_stdin.exit_code, 0) << from_stdin.err;
  EXPECT_NE(from_stdin.err.find("standard input is read once"), std::string::npos)
      << from_stdin.err;
  auto with_capture = kprof_with_stdin({"rank", "-", "--graph-capture", "-"}, trace);
  EXPECT_NE(with_capture.exit_code, 0);
}

TEST(Stdin, ExplainReadsALogPipedIn) {
  std::string log = data_path("h200/ncu-outputs/ok_basic.out");
  auto from_file = kprof({"explain", log});
  auto from_stdin = kprof_with_stdin({"explain", "-"}, file_text(log));
  EXPECT_EQ(from_stdin.exit_code, from_file.exit_code) << from_stdin.err;
  EXPECT_EQ(from_stdin.out, from_file.out);
  EXPECT_EQ(from_stdin.err, from_file.err);
  EXPECT_NE(from_stdin.out.find("kernel launch"), std::string::npos) << from_stdin.out;
}

TEST(Stdin, EmptyStdinIsAnErrorNamingIt) {
  for (const std::vector<std::string>& args : {std::vector<std::string>{"analyze", "-"},
                                               {"inspect", "--json", "-"},
                                               {"rank", "-"},
                                               {"explain", "-"}}) {
    auto result = kprof_with_stdin(args, "");
    EXPECT_EQ(result.exit_code, 4) << args[0] << ": " << result.err;  // input invalid
    EXPECT_EQ(result.out, "") << args[0];
    EXPECT_EQ(result.err.rfind("kprof: -: stdin is empty", 0), 0u) << args[0] << ": " << result.err;
  }
}

TEST(Stdin, IsReadOnce) {
  std::string path = data_path("h200/diff_suite_basic_base_a.ncu-rep.zst");
  auto result = kprof_with_stdin({"diff", "-", "-"}, file_text(path));
  EXPECT_EQ(result.exit_code, 2) << result.err;  // usage
  EXPECT_NE(result.err.find("stdin was already read"), std::string::npos) << result.err;
  EXPECT_EQ(result.out, "");
}

TEST(Stdin, NsightSystemsExportIsRefusedWithTheReason) {
  auto result =
      kprof_with_stdin({"rank", "-"}, file_text(data_path("h200/nsys_decode_steps.sqlite")));
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find("cannot be read from stdin"), std::string::npos) << result.err;
}

// What stdin holds is all in memory: the limit on decompressed data holds it too.
TEST(Stdin, IsHeldToTheSizeLimit) {
  std::string report = file_text(data_path("h200/big_min.ncu-rep.zst"));
  ASSERT_GT(report.size(), 16u * 1024);
  auto result = testing::run_process_with_input(
      {"/usr/bin/env", "KPROF_MAX_DECOMPRESSED=16K", KPROF_BINARY, "analyze", "-"}, report);
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_EQ(result.err.rfind("kprof: -: more than 16 KiB", 0), 0u) << result.err;
  EXPECT_EQ(result.out, "");
}

}  // namespace
}  // namespace kprof
