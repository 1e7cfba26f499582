// libkprof_tracer.so running for real — its threads, pool, windows, control file, cap, flushes
// and exit — inside fake_app, a program whose "GPU" is fake_cupti (a libcupti.so.13 stand-in
// that follows CUPTI's documented buffer protocol). Each test scripts what the program does and
// checks the files and the stderr lines the tracer leaves, with kprof's own reader and budget.
// What only a GPU can show is tools/tracer/gpu-check.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <sstream>

#include "importers/chrome_trace/chrome_trace_reader.h"
#include "support/confined_fs.h"
#include "support/run_process.h"
#include "support/test_data.h"
#include "timeline/step_budget.h"
#include "tracer/cupti_support.h"

namespace kprof::tracer {
namespace {

namespace fs = std::filesystem;
using kprof::testing::ProcessResult;

class TracerLive : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kprof-live-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    traces_ = dir_ + "/traces";
    fs::create_directory(traces_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> argv(std::vector<std::string> settings,
                                const std::vector<std::string>& script) const {
    std::vector<std::string> args = {KPROF_FAKE_APP, KPROF_TRACER_LIBRARY,
                                     std::string("CUDA_INJECTION64_PATH=") + KPROF_TRACER_LIBRARY,
                                     std::string("NVTX_INJECTION64_PATH=") + KPROF_TRACER_LIBRARY,
                                     "KPROF_TRACE_DIR=" + traces_};
    args.insert(args.end(), settings.begin(), settings.end());
    args.push_back("--");
    args.insert(args.end(), script.begin(), script.end());
    return args;
  }
  ProcessResult run(std::vector<std::string> settings, const std::vector<std::string>& script) {
    return kprof::testing::run_process(argv(std::move(settings), script));
  }

  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(traces_)) out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  // The tracer's own stderr lines (a sanitizer build may add its own).
  static std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("kprof-tracer:", 0) == 0) out.push_back(line);
    }
    return out;
  }

  static nlohmann::json load(const std::string& path) {
    return nlohmann::json::parse(kprof::testing::read_gzip_text(path));
  }
  static size_t count(const nlohmann::json& trace, const std::string& category) {
    return static_cast<size_t>(std::count_if(
        trace["traceEvents"].begin(), trace["traceEvents"].end(),
        [&](const nlohmann::json& e) { return e["ph"] == "X" && e["cat"] == category; }));
  }

  std::string dir_, traces_;
};

TEST_F(TracerLive, OneWindowFromStartToExitReadByKprofBudget) {
  auto result = run({}, {"init", "wait:on", "steps:20"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  std::string name = fs::path(written[0]).filename().string();
  EXPECT_EQ(name.rfind("kprof-trace.", 0), 0u) << name;
  EXPECT_EQ(name.substr(name.size() - 10), ".1.json.gz") << name;
  auto said = lines(result.err);
  ASSERT_EQ(said.size(), 1u) << result.err;
  EXPECT_EQ(said[0].rfind("kprof-tracer: pid ", 0), 0u) << said[0];
  EXPECT_NE(said[0].find(" window 1 (stopped by process exit): " + written[0] +
                         ": 140 events; nothing dropped"),
            std::string::npos)
      << said[0];
  auto trace = load(written[0]);
  // 20 steps of 3 launches: 60 kernels, 60 launch calls, 20 NVTX ranges = 140 events.
  EXPECT_EQ(count(trace, "kernel"), 60u);
  EXPECT_EQ(count(trace, "cuda_runtime"), 60u);
  EXPECT_EQ(count(trace, "user_annotation"), 20u);
  EXPECT_EQ(trace["kprof"]["stop_reason"], "process exit");
  timeline::BudgetBuilder builder;
  importers::read_chrome_trace(written[0], builder);
  auto budget = builder.finish("", {});
  ASSERT_EQ(budget.steps.size(), 20u);
  for (const auto& step : budget.steps) {
    EXPECT_EQ(step.kernel_launches, 3u) << step.name;
    EXPECT_EQ(step.gpu_activities, 3u) << step.name;
  }
}

TEST_F(TracerLive, WithoutApiRecordsOnlyGpuWorkAndRangesAreWritten) {
  auto result = run({"KPROF_TRACE_API=0"}, {"init", "wait:on", "steps:20"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  auto said = lines(result.err);
  ASSERT_EQ(said.size(), 1u) << result.err;
  EXPECT_NE(said[0].find(": 80 events; nothing dropped"), std::string::npos) << said[0];
  auto trace = load(written[0]);
  EXPECT_EQ(count(trace, "kernel"), 60u);
  EXPECT_EQ(count(trace, "cuda_runtime"), 0u);  // no launch call was enabled in CUPTI
  EXPECT_EQ(count(trace, "cuda_driver"), 0u);
  EXPECT_EQ(count(trace, "user_annotation"), 20u);
}

TEST_F(TracerLive, TheControlFileOpensAndClosesWindowsAndInactiveRecordsNothing) {
  std::string control = dir_ + "/control";
  auto result = run(
      {"KPROF_TRACE_START=on-control", "KPROF_TRACE_CONTROL=" + control},
      {"init", "steps:5", "control:start", "wait:on", "steps:4", "control:stop", "wait:off",
       "steps:5", "control:start", "wait:on", "steps:3", "control:stop", "wait:off", "sleep:300"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 2u) << result.err;
  auto first = load(written[0]), second = load(written[1]);
  EXPECT_EQ(count(first, "kernel"), 12u);
  EXPECT_EQ(count(first, "user_annotation"), 4u);
  EXPECT_EQ(count(second, "kernel"), 9u);
  EXPECT_EQ(first["kprof"]["window"], 1);
  EXPECT_EQ(second["kprof"]["window"], 2);
  EXPECT_EQ(first["kprof"]["stop_reason"], "control file");
  EXPECT_EQ(second["kprof"]["stop_reason"], "control file");
  EXPECT_EQ(lines(result.err).size(), 2u) << result.err;
}

TEST_F(TracerLive, DelayAndDuration) {
  auto result = run({"KPROF_TRACE_DELAY_S=0.3", "KPROF_TRACE_DURATION_S=1"},
                    {"init", "launch:5", "wait:on", "launch:10", "wait:off", "launch:5"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  auto trace = load(written[0]);
  EXPECT_EQ(count(trace, "kernel"), 10u);
  EXPECT_EQ(trace["kprof"]["stop_reason"], "duration");
  const auto& k = trace["kprof"];
  double window_s = (k["window_stop"]["monotonic_ns"].get<double>() -
                     k["window_start"]["monotonic_ns"].get<double>()) /
                    1e9;
  EXPECT_GE(window_s, 1.0);
}

TEST_F(TracerLive, TheCapClosesTheWindowAndTheRestIsCounted) {
  auto result = run({"KPROF_TRACE_MAX_EVENTS=50"}, {"init", "wait:on", "launch:100", "wait:off"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  auto trace = load(written[0]);
  EXPECT_EQ(trace["kprof"]["stop_reason"], "event cap");
  EXPECT_EQ(trace["kprof"]["events"], 50);
  EXPECT_EQ(trace["kprof"]["cap_hit"], true);
  EXPECT_EQ(trace["kprof"]["dropped"]["over_cap_records"], 150);  // 200 records, 50 written
  EXPECT_NE(result.err.find("DROPPED: 150 records over the cap of 50 events"), std::string::npos)
      << result.err;
}

TEST_F(TracerLive, AnEmptyPoolDropsRecordsAndSaysSo) {
  // 16 MB: two buffers; three threads each want their own at once.
  auto result = run({"KPROF_TRACE_MEMORY_MB=16"}, {"init", "wait:on", "threads:3:10"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  auto trace = load(written[0]);
  const auto& dropped = trace["kprof"]["dropped"];
  std::uint64_t refused = dropped["buffer_requests_refused"],
                lost = dropped["cupti_dropped_records"];
  EXPECT_GE(refused, 1u);
  EXPECT_EQ(lost, refused);  // the stand-in drops one record per refused request
  EXPECT_EQ(count(trace, "kernel") + count(trace, "cuda_runtime") + lost, 60u);
  EXPECT_NE(result.err.find("records dropped by CUPTI"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("buffer requests refused (all buffers in use: raise "
                            "KPROF_TRACE_MEMORY_MB)"),
            std::string::npos)
      << result.err;
}

TEST_F(TracerLive, AnotherSubscriberOrAnOldLibcuptiKeepsItOff) {
  auto held = run({"FAKE_CUPTI_HOLDER=Nsight Systems"}, {"init", "launch:5"});
  EXPECT_EQ(held.out, "InitializeInjection returned 1\n");
  EXPECT_EQ(held.err,
            "kprof-tracer: another CUPTI client is attached to this process (Nsight Systems): the "
            "tracer stays off\n");
  auto old = run({"FAKE_CUPTI_VERSION=120000"}, {"init", "launch:5"});
  EXPECT_EQ(old.err, "kprof-tracer: libcupti reports version 120000, older than the " +
                         std::to_string(CUPTI_API_VERSION) +
                         " this tracer was built for: the tracer stays off\n");
  EXPECT_TRUE(files().empty());
}

TEST_F(TracerLive, TheRawDumpReplaysToTheSameEvents) {
  std::string raw = dir_ + "/raw";
  fs::create_directory(raw);
  auto result = run({"KPROF_TRACE_DUMP_RAW=" + raw}, {"init", "wait:on", "steps:5"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u);
  std::vector<fs::path> dumps{fs::directory_iterator(raw), fs::directory_iterator()};
  ASSERT_EQ(dumps.size(), 1u);
  std::string replayed = dir_ + "/replayed.json.gz", error;
  ASSERT_TRUE(convert_raw_dump(dumps[0].string(), replayed, &error)) << error;
  auto sorted = [](const nlohmann::json& trace) {
    std::vector<std::string> texts;
    for (const auto& e : trace["traceEvents"]) texts.push_back(e.dump());
    std::sort(texts.begin(), texts.end());
    return texts;
  };
  auto live = load(written[0]);
  EXPECT_EQ(sorted(live), sorted(load(replayed)));
  EXPECT_EQ(count(live, "kernel"), 15u);
}

TEST_F(TracerLive, AForkedChildIsLeftAloneAndTheParentTraced) {
  // The pause lets the tracer's writer finish opening the window first: a fork copies no thread,
  // and what only a busy thread's stack referenced would look leaked to LeakSanitizer in the
  // child of a sanitizer build.
  auto result = run({}, {"init", "wait:on", "steps:2", "sleep:200", "fork", "steps:2"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("child exited 0"), std::string::npos) << result.out;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  EXPECT_EQ(count(load(written[0]), "kernel"), 12u);
  EXPECT_EQ(lines(result.err).size(), 1u) << result.err;
}

TEST_F(TracerLive, AFullDiskAbandonsTheWindowAndLeavesNothing) {
  if (auto why = kprof::testing::confined_fs_unavailable()) GTEST_SKIP() << *why;
  std::string copy_back = dir_ + "/after";
  fs::create_directory(copy_back);
  auto result = kprof::testing::run_with_full_disk(traces_, "8k", copy_back,
                                                   argv({}, {"init", "wait:on", "steps:2000"}));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.err.find("No space left on device"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("window 1 abandoned"), std::string::npos) << result.err;
  EXPECT_TRUE(fs::is_empty(copy_back)) << "a partial trace was left behind";
}

}  // namespace
}  // namespace kprof::tracer
