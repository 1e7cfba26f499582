// The capture session with a fake NcuRunner: what a real ncu printed (data/h200 recordings) is
// replayed line by line through the runner seam, so the session's progress events, detach
// policy, diagnoses, fetch, analysis and manifest are checked without ncu or a GPU.
#include "capture/capture_session.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "common/file_bytes.h"
#include "support/test_data.h"

namespace kprof::capture {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

std::string read(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class FakeRunner : public NcuRunner {
 public:
  std::string out;     // replayed through on_line, line by line
  std::string report;  // written where ncu would write it ("" writes none)
  int exit_code = 0;
  bool started = true, timed_out = false;
  std::optional<Diagnosis> fetch_failure;
  std::vector<std::string> argv;  // as the session asked
  int ticks = 0;
  bool fetched = false;

  ChildResult run(const ChildRequest& request) override {
    argv = request.argv;
    ChildResult result;
    result.started = started;
    if (!started) {
      result.start_error = "No such file or directory";
      return result;
    }
    std::istringstream lines(out);
    for (std::string line; std::getline(lines, line);) {
      if (request.on_line) request.on_line(line, false);
    }
    if (!report.empty()) write_file_atomically(export_ + ".ncu-rep", report);
    // An attach client waits for kprof to detach it: tick until the session asks.
    while (request.on_tick && ticks < 50) {
      ++ticks;
      if (request.on_tick()) {
        result.stop_requested = true;
        break;
      }
    }
    result.exit_code = result.stop_requested ? 130 : exit_code;
    result.timed_out = timed_out;
    result.out = out;
    result.combined = out;
    result.elapsed = std::chrono::milliseconds(1500);
    return result;
  }
  std::string export_path(const EvidenceBundle& bundle) override {
    export_ = bundle.path_of("report");
    return export_;
  }
  std::optional<Diagnosis> fetch_report(const std::string& written,
                                        const std::string& local) override {
    fetched = true;
    EXPECT_EQ(written, local);  // where this runner's ncu writes is the bundle
    return fetch_failure;
  }
  std::optional<bool> target_still_there(const AttachEndpoint&, const std::vector<int>&) override {
    return std::nullopt;
  }
  void describe(ManifestBuilder& manifest) const override {
    ManifestKubernetes where;
    where.method = "fake";
    manifest.kubernetes(where);
  }

 private:
  std::string export_;
};

struct Events : CaptureObserver {
  std::vector<std::string> seen;
  void started(const NcuCommand& command, const std::string& bundle) override {
    seen.push_back("started " + command.argv.front() + " " + bundle);
  }
  void process_connected(const std::string&) override { seen.push_back("connected"); }
  void kernel_profiled(size_t index, std::optional<std::int64_t> expected, const std::string& name,
                       std::optional<int> passes) override {
    seen.push_back("kernel " + std::to_string(index) + "/" +
                   (expected ? std::to_string(*expected) : "?") + " " + name + " " +
                   (passes ? std::to_string(*passes) : "?"));
  }
  void ncu_message(const std::string& line) override { seen.push_back("message " + line); }
  void detaching() override { seen.push_back("detaching"); }
  void detached(std::optional<bool> there) override {
    seen.push_back(std::string("detached ") + (there ? (*there ? "yes" : "no") : "unknown"));
  }
};

class Session : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("kprof-session-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    options_.argv = {"kprof", "capture"};
    options_.campaign = "c1";
  }
  void TearDown() override { fs::remove_all(dir_); }
  std::string bundle() const { return (dir_ / "bundle").string(); }

  fs::path dir_;
  SessionOptions options_;
};

TEST_F(Session, AnAttachCaptureReplayedThroughTheRunner) {
  // attach_1: ncu attached, profiled k_alpha twice at 10 passes, wrote the report.
  const std::string rec = testing::data_path("h200/capture-recordings/attach_1/");
  FakeRunner runner;
  runner.out = read(rec + "ncu-stdout.txt");
  runner.report = read_input_file(rec + "report.ncu-rep.zst").bytes;
  CaptureSpec spec;
  spec.ncu = "/opt/ncu/ncu";
  spec.attach = AttachEndpoint{"127.0.0.1", std::nullopt};
  spec.kernel_regex = "k_alpha";
  spec.launch_count = 2;
  std::string analysed;
  options_.analyze = [&](const std::string& report) -> std::optional<BundleAnalysis> {
    analysed = report;
    return BundleAnalysis{"table of " + report + "\n", "{\"report\": \"" + report + "\"}", {}};
  };
  Events events;
  CaptureResult result = CaptureSession(spec, options_, runner, events).run(bundle());

  EXPECT_EQ(runner.argv.front(), "/opt/ncu/ncu");
  EXPECT_EQ(result.status, "ok");
  EXPECT_EQ(result.bundle_path, bundle());
  EXPECT_GT(runner.ticks, 5);  // the report's size held steady for half a second first
  ASSERT_GE(events.seen.size(), 6u) << ::testing::PrintToString(events.seen);
  EXPECT_EQ(events.seen[0], "started /opt/ncu/ncu " + bundle());
  EXPECT_EQ(events.seen[2], "connected");
  EXPECT_EQ(events.seen[3], "kernel 1/2 k_alpha 10");
  EXPECT_EQ(events.seen[4], "kernel 2/2 k_alpha 10");
  EXPECT_EQ(events.seen[5], "detaching");
  EXPECT_EQ(events.seen.back(), "detached unknown");
  EXPECT_TRUE(runner.fetched);

  // The analysis read the report in the bundle being assembled; what it wrote names the bundle.
  EXPECT_NE(analysed.find(".partial"), std::string::npos);
  EXPECT_EQ(result.analysis_table, "table of " + bundle() + "/report.ncu-rep\n");
  EXPECT_EQ(read(bundle() + "/analysis.json"), "{\"report\": \"" + bundle() + "/report.ncu-rep\"}");
  EXPECT_EQ(read(bundle() + "/report.ncu-rep"), runner.report);
  EXPECT_EQ(read(bundle() + "/ncu-stdout.txt"), runner.out);

  json m = json::parse(read(bundle() + "/manifest.json"));
  json expected = result.manifest;
  expected["files"] = m["files"];  // added by the bundle as it is written
  EXPECT_EQ(m, expected);
  EXPECT_EQ(m["status"], "ok");
  EXPECT_EQ(m["campaign"], "c1");
  EXPECT_EQ(m["tool"]["argv"], json({"kprof", "capture"}));
  EXPECT_EQ(m["progress"]["kernels_profiled"], 2);
  EXPECT_EQ(m["ncu"]["exit_code"], 130);
  EXPECT_EQ(m["ncu"]["detached_by_kprof"], true);
  EXPECT_EQ(m["attach"]["host"], "127.0.0.1");
  EXPECT_EQ(m["kubernetes"]["method"], "fake");  // the runner's own block
  EXPECT_FALSE(m.contains("target"));
  EXPECT_TRUE(m["files"].contains("report.ncu-rep"));
}

TEST_F(Session, AProgressLineSplitByAWarningStillCountsItsKernel) {
  FakeRunner runner;
  runner.out =
      "==PROF== Connected to process 7 (/app)\n"
      "==PROF== Profiling \"gemm\" - 0: 0%....50%\n"
      "==WARNING== Backing up device memory in system memory.\n"
      "....100% - 38 passes\n";
  CaptureSpec spec;
  spec.ncu = "ncu";
  spec.target = {"/app"};
  spec.preset = Preset::kFull;
  spec.kernel_regex = "gemm";
  Events events;
  CaptureResult result = CaptureSession(spec, options_, runner, events).run(bundle());
  EXPECT_EQ(result.progress.kernels_profiled, 1u);
  EXPECT_EQ(result.manifest["progress"]["passes_per_kernel"], json({38}));
  EXPECT_NE(std::find(events.seen.begin(), events.seen.end(), "kernel 1/? gemm 38"),
            events.seen.end())
      << ::testing::PrintToString(events.seen);
  EXPECT_EQ(runner.ticks, 0);  // a launch capture is not detached
  EXPECT_EQ(result.manifest["target"]["argv"], json({"/app"}));
}

TEST_F(Session, AReportThatCannotBeFetchedFailsTheCapture) {
  FakeRunner runner;
  runner.out =
      "==PROF== Connected to process 7 (/app)\n"
      "==PROF== Profiling \"k\": 0%....50%....100% - 10 passes\n";
  runner.fetch_failure = Diagnosis{"copy_failed", true, "kubectl cp failed", "retry"};
  CaptureSpec spec;
  spec.ncu = "ncu";
  spec.target = {"/app"};
  bool analysed = false;
  options_.analyze = [&](const std::string&) -> std::optional<BundleAnalysis> {
    analysed = true;
    return std::nullopt;
  };
  Events events;
  CaptureResult result = CaptureSession(spec, options_, runner, events).run(bundle());
  EXPECT_EQ(result.status, "failed");
  EXPECT_FALSE(analysed);  // no report in the bundle
  ASSERT_FALSE(result.diagnoses.empty());
  EXPECT_EQ(result.diagnoses.back().id, "copy_failed");
  EXPECT_EQ(json::parse(read(bundle() + "/manifest.json"))["status"], "failed");
}

TEST_F(Session, ATimeoutLeavesAnIncompleteBundle) {
  FakeRunner runner;
  runner.out = "==PROF== Connected to process 7 (/app)\n";
  runner.timed_out = true;
  runner.exit_code = 130;
  options_.timeout_s = 3;
  CaptureSpec spec;
  spec.ncu = "ncu";
  spec.target = {"/app"};
  Events events;
  CaptureResult result = CaptureSession(spec, options_, runner, events).run(bundle());
  EXPECT_TRUE(result.incomplete);
  EXPECT_EQ(result.bundle_path, bundle() + ".incomplete");
  json m = json::parse(read(bundle() + ".incomplete/manifest.json"));
  EXPECT_EQ(m["status"], "incomplete");
  EXPECT_EQ(m["incomplete_reason"], "timeout");
  EXPECT_EQ(m["diagnoses"].back()["id"], "timeout");
  EXPECT_FALSE(runner.fetched);
}

TEST_F(Session, AnNcuThatCannotStartIsDiagnosed) {
  FakeRunner runner;
  runner.started = false;
  CaptureSpec spec;
  spec.ncu = "/nope/ncu";
  spec.target = {"/app"};
  Events events;
  CaptureResult result = CaptureSession(spec, options_, runner, events).run(bundle());
  EXPECT_EQ(result.status, "failed");
  ASSERT_EQ(result.diagnoses.size(), 1u);
  EXPECT_EQ(result.diagnoses[0].id, "ncu_not_started");
  EXPECT_NE(result.diagnoses[0].what.find("/nope/ncu could not be started"), std::string::npos);
  EXPECT_TRUE(result.manifest["ncu"]["exit_code"].is_null());
  EXPECT_FALSE(fs::exists(bundle() + "/ncu.log"));
}

}  // namespace
}  // namespace kprof::capture
