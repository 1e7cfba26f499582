// The one ncu progress parser, on real ncu output recorded on the H200 (data/h200) and on the
// shapes ncu gives a progress line that something interrupts: a warning on a line of its own
// between "0%....50%" and "....100% - 38 passes", a warning glued to the progress, chunks of
// output that end inside a line. Expected counts are read off the recordings by hand (grep).
#include "capture/ncu_progress.h"

#include <gtest/gtest.h>

#include <fstream>
#include <random>

#include "support/test_data.h"

namespace kprof::capture {
namespace {

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

struct Recorded {
  std::vector<NcuProgressEvent> events;
  NcuProgress progress;
};

Recorded parse_lines(const std::vector<std::string>& lines) {
  Recorded recorded;
  NcuProgressParser parser([&](const NcuProgressEvent& e) { recorded.events.push_back(e); });
  for (const std::string& line : lines) parser.feed_line(line);
  parser.finish();
  recorded.progress = parser.progress();
  return recorded;
}

const char* kBackingUp =
    "==WARNING== Backing up device memory in system memory. Kernel replay might be slow. Consider "
    "using \"--replay-mode application\" to avoid memory save-and-restore.";

TEST(NcuProgress, KernelReplayLinesOfARealCapture) {
  // suite_triage: 10 "==PROF== Profiling" lines, each "- 14 passes".
  NcuProgress p = parse_progress(
      read(testing::data_path("h200/capture-recordings/suite_triage/ncu-stdout.txt")));
  EXPECT_EQ(p.processes_connected, 1u);
  EXPECT_EQ(p.kernels_profiled, 10u);
  EXPECT_EQ(p.passes, std::vector<int>(10, 14));
  EXPECT_EQ(p.kernel_names.front(), "k_dram_stream");
  EXPECT_EQ(p.kernel_names.back(), "k_atomic_one_address");
}

TEST(NcuProgress, ApplicationReplayCountsEachKernelOnceWithItsPasses) {
  // 3 kernels (ids 0-2), replayed up to pass 9 for ids 0 and 1, pass 8 for id 2.
  NcuProgress p =
      parse_progress(read(testing::data_path("h200/ncu-outputs/app_replay_random.out")));
  EXPECT_EQ(p.kernels_profiled, 3u);
  EXPECT_EQ(p.passes, (std::vector<int>{9, 9, 8}));
  EXPECT_EQ(p.kernel_names, std::vector<std::string>(3, "k_work(float *, int)"));
}

TEST(NcuProgress, AWarningOnItsOwnLineSplitsAProgressLine) {
  Recorded r = parse_lines({"==PROF== Profiling \"gemm_kernel\" - 0: 0%....50%", kBackingUp,
                            "....100% - 38 passes", "==PROF== Profiling \"k2\" - 1: 0%....50%",
                            "launched 3",  // the target's own output does not end the progress
                            "....100% - 40 passes"});
  EXPECT_EQ(r.progress.kernels_profiled, 2u);
  EXPECT_EQ(r.progress.passes, (std::vector<int>{38, 40}));
  EXPECT_EQ(r.progress.kernel_names, (std::vector<std::string>{"gemm_kernel", "k2"}));
  ASSERT_EQ(r.events.size(), 3u);
  EXPECT_EQ(r.events[0].kind, NcuProgressEvent::Kind::kMessage);
  EXPECT_EQ(r.events[0].line, kBackingUp);
  EXPECT_EQ(r.events[1].kind, NcuProgressEvent::Kind::kKernelProfiled);
  EXPECT_EQ(r.events[1].kernel, 1u);
  EXPECT_EQ(r.events[1].kernel_name, "gemm_kernel");
  EXPECT_EQ(r.events[1].passes, 38);
  EXPECT_EQ(r.events[2].kernel, 2u);
}

// Recorded on the H200 with 100 GB resident: ncu's warning came between "0%" and
// "....50%....100% - 14 passes" of the first kernel; the second kernel's line is whole.
TEST(NcuProgress, TheRecordedBackingUpWarningSplitsTheFirstKernelsLine) {
  Recorded r;
  NcuProgressParser parser([&](const NcuProgressEvent& e) { r.events.push_back(e); });
  parser.feed(read(testing::data_path("h200/ncu-outputs/backing_up_memory.out")));
  parser.finish();
  EXPECT_EQ(parser.progress().kernels_profiled, 2u);
  EXPECT_EQ(parser.progress().passes, (std::vector<int>{14, 14}));
  EXPECT_EQ(parser.progress().kernel_names.front(),
            "void at::native::vectorized_elementwise_kernel<(int)4, "
            "at::native::CUDAFunctor_add<float>, std::array<char *, (unsigned long)3>>(int, T2, "
            "T3)");
  EXPECT_EQ(parser.progress().report_paths.size(), 1u);
}

TEST(NcuProgress, AWarningGluedToTheProgressIsItsOwnLine) {
  Recorded r = parse_lines(
      {std::string("==PROF== Profiling \"k\": 0%....50%") + kBackingUp, "....100% - 38 passes"});
  EXPECT_EQ(r.progress.kernels_profiled, 1u);
  EXPECT_EQ(r.progress.passes, std::vector<int>{38});
  ASSERT_EQ(r.events.size(), 2u);
  EXPECT_EQ(r.events[0].line, kBackingUp);
  EXPECT_EQ(r.events[1].kernel_name, "k");
}

TEST(NcuProgress, ANameIsNeverSplit) {
  Recorded r = parse_lines({"==PROF== Profiling \"odd==WARNING==name\": 0%....100% - 3 passes"});
  EXPECT_EQ(r.progress.kernel_names, std::vector<std::string>{"odd==WARNING==name"});
  EXPECT_EQ(r.progress.passes, std::vector<int>{3});
}

TEST(NcuProgress, AKernelWhoseProgressNeverEndedIsNotCounted) {
  Recorded r = parse_lines({"==PROF== Profiling \"k1\": 0%....50%",
                            "==ERROR== Failed to profile \"k1\" in process 12",
                            "==PROF== Profiling \"k2\": 0%....50%....100% - 10 passes"});
  EXPECT_EQ(r.progress.kernel_names, std::vector<std::string>{"k2"});
}

TEST(NcuProgress, ChunksEndingAnywhereGiveTheSameProgress) {
  std::string output =
      read(testing::data_path("h200/capture-recordings/suite_triage/ncu-stdout.txt")) +
      "==PROF== Profiling \"gemm\" - 10: 0%....50%\r\n" + kBackingUp + "\n....100% - 38 passes\n" +
      read(testing::data_path("h200/ncu-outputs/app_replay_random.out")) +
      "==PROF== Report: /tmp/r.ncu-rep";  // the last line without '\n'
  NcuProgress whole = parse_progress(output);
  ASSERT_EQ(whole.kernels_profiled, 14u);
  EXPECT_EQ(whole.passes.at(10), 38);
  ASSERT_EQ(whole.report_paths.size(), 2u);  // suite_triage's own "Report:" line, then ours
  EXPECT_EQ(whole.report_paths.back(), "/tmp/r.ncu-rep");
  std::mt19937 random(12);
  for (size_t chunk : {1, 2, 3, 7, 64, 4096}) {
    for (int randomised = 0; randomised < 2; ++randomised) {
      NcuProgressParser parser;
      for (size_t at = 0; at < output.size();) {
        size_t n = randomised ? 1 + random() % (2 * chunk) : chunk;
        parser.feed(std::string_view(output).substr(at, n));
        at += n;
      }
      parser.finish();
      const NcuProgress& p = parser.progress();
      SCOPED_TRACE(chunk);
      EXPECT_EQ(p.kernels_profiled, whole.kernels_profiled);
      EXPECT_EQ(p.passes, whole.passes);
      EXPECT_EQ(p.kernel_names, whole.kernel_names);
      EXPECT_EQ(p.processes_connected, whole.processes_connected);
      EXPECT_EQ(p.report_paths, whole.report_paths);
    }
  }
}

TEST(NcuProgress, TheKernelsNcuListsWhenNothingMatched) {
  NcuProgress p = parse_progress(read(testing::data_path("h200/ncu-outputs/no_match.out")) +
                                 read(testing::data_path("h200/ncu-outputs/no_match.err")));
  EXPECT_EQ(p.available_kernels, std::vector<std::string>{"k_work"});
  EXPECT_EQ(p.kernels_profiled, 0u);
}

}  // namespace
}  // namespace kprof::capture
