// `kprof capture` and `kprof explain` classify ncu's failures with one function
// (capture::diagnose); this holds them to it end to end: every recorded ncu run (the capture
// recordings and the ncu-outputs of data/h200) goes through capture, against the ncu stand-in,
// and the bundle's ncu.log, exit status and ncu command line then through explain. Both must
// give the same diagnoses, word for word; capture may add only what it alone can know.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "support/run_process.h"
#include "support/test_data.h"

namespace kprof {
namespace {
namespace fs = std::filesystem;
using testing::data_path;

// Found by capture from things other than ncu's output, status and command line: the report's
// contents, kprof's own timeout/interrupt/detach, an ncu that could not be started.
const std::set<std::string> kCaptureOnly = {"unknown_metric",
                                            "report_unreadable",
                                            "timeout",
                                            "interrupted",
                                            "target_gone",
                                            "ncu_not_started",
                                            "attach_process_not_found",
                                            "attached_other_process",
                                            "warm_not_attached",
                                            "warm_not_ready",
                                            "warmup_requests_failed",
                                            "load_requests_failed"};

std::string read_file(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class CaptureAndExplain : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kprof-agree-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    setenv("KPROF_NCU", KPROF_FAKE_NCU, 1);
    setenv("FAKE_NCU_VERSION", data_path("h200/ncu-outputs/ncu_version.txt").c_str(), 1);
    unsetenv("FAKE_NCU_LOG");
    unsetenv("FAKE_NCU_HANG");
  }
  void TearDown() override { fs::remove_all(dir_); }

  // Runs the recording through capture, then its bundle through explain; compares.
  void check(const std::string& name, const std::string& recording,
             std::vector<std::string> capture_args) {
    SCOPED_TRACE(name);
    fs::path bundle = dir_ / name;
    setenv("FAKE_NCU_RECORDING", recording.c_str(), 1);
    capture_args.insert(capture_args.begin(), {KPROF_BINARY, "capture", "-o", bundle.string()});
    testing::ProcessResult captured = testing::run_process(capture_args);
    ASSERT_TRUE(captured.exit_code == 0 || captured.exit_code == 7) << captured.err;
    nlohmann::json manifest = nlohmann::json::parse(read_file(bundle / "manifest.json"));

    std::vector<std::string> explain_args = {
        KPROF_BINARY,  "explain",
        "--json",      (bundle / "ncu.log").string(),
        "--exit-code", std::to_string(manifest["ncu"]["exit_code"].get<int>()),
        "--"};
    for (const auto& arg : manifest["ncu"]["argv"]) explain_args.push_back(arg);
    testing::ProcessResult explained = testing::run_process(explain_args);
    ASSERT_TRUE(explained.exit_code == 0 || explained.exit_code == 7) << explained.err;
    nlohmann::json explanation = nlohmann::json::parse(explained.out);

    nlohmann::json from_capture = nlohmann::json::array();
    bool capture_only_failure = false;
    for (const auto& d : manifest["diagnoses"]) {
      if (kCaptureOnly.count(d["id"])) {
        capture_only_failure |= d["failure"].get<bool>();
        continue;
      }
      from_capture.push_back(d);
    }
    EXPECT_EQ(from_capture, explanation["diagnoses"]);
    if (!capture_only_failure) {
      EXPECT_EQ(captured.exit_code, explained.exit_code) << captured.err << explained.err;
    }
    // Both print the diagnoses on stderr in the same words.
    for (const auto& d : explanation["diagnoses"]) {
      std::string line = std::string(d["failure"] ? "FAILED" : "warning") + " [" +
                         d["id"].get<std::string>() + "] " + d["what"].get<std::string>();
      EXPECT_NE(captured.err.find(line), std::string::npos) << line << "\n" << captured.err;
      EXPECT_NE(explained.err.find(line), std::string::npos) << line << "\n" << explained.err;
    }
    ++compared_;
    for (const auto& d : explanation["diagnoses"]) ids_.insert(d["id"].get<std::string>());
  }

  fs::path dir_;
  size_t compared_ = 0;
  std::set<std::string> ids_;
};

TEST_F(CaptureAndExplain, EveryRecordedRunGetsTheSameDiagnosesFromBoth) {
  // The capture recordings, with the options that provoked them (their README).
  const std::map<std::string, std::vector<std::string>> recordings = {
      {"suite_triage", {"-k", "^k_", "--", "./suite"}},
      {"attach_1", {"-k", "k_alpha", "--launch-count", "2", "--", "./targets", "long", "60"}},
      {"attach_nothing", {"--attach", "127.0.0.1", "--launch-count", "1"}},
      {"children", {"--launch-count", "1", "--", "python3", "-c", "import subprocess"}},
      {"injection_taken",
       {"--env", "CUDA_INJECTION64_PATH=/nonexistent/libother.so", "--", "./targets", "plain"}},
      {"missing_app", {"--", "./no_such_program"}},
      {"never_started",
       {"--ncu-arg=--profile-from-start", "--ncu-arg=off", "--", "./targets", "plain"}},
      {"no_match", {"-k", "doesnotexist", "--", "./targets", "plain"}},
      {"not_cuda", {"--", "/bin/true"}},
      {"profiler_stop",
       {"--ncu-arg=--profile-from-start", "--ncu-arg=on", "--launch-count", "5", "--", "./targets",
        "stop"}},  // what the old --honor-profiler-start-stop passed when this was recorded
      {"profiler_stop_ignored", {"--launch-count", "5", "--", "./targets", "stop"}},
      {"target_crash", {"--", "./targets", "crash"}},
      {"timeout", {"--", "./targets", "long", "60"}},
      {"unknown_metric", {"--metrics", "no__such_metric.sum", "--", "./targets", "plain"}},
      {"unknown_section", {"--section", "NoSuchSection", "--", "./targets", "plain"}},
      {"app_replay_random",
       {"--replay-mode", "application", "--preset", "basic", "--", "./targets", "random"}},
      {"window_open",
       {"--range", "cuda-profiler-api", "--preset", "basic", "--", "python3", "w.py", "window"}},
      {"window_never",
       {"--range", "cuda-profiler-api", "--preset", "basic", "--", "python3", "w.py", "never"}},
      {"nvtx_decode", {"--nvtx-include", "decode/", "--preset", "basic", "--", "python3", "w.py"}},
      {"nvtx_nomatch",
       {"--nvtx-include", "nosuchrange/", "--preset", "basic", "--", "python3", "w.py"}},
      {"eager_step", {"--nvtx-include", "step/", "--", "python3", "w.py", "eager"}},
      {"graph_node",
       {"--nvtx-include", "step/", "--graph-profiling", "node", "--", "python3", "w.py", "graph"}},
      {"children_default",
       {"--children", "--preset", "basic", "--launch-count", "3", "--", "python3", "w.py",
        "eager"}},
      {"children_filtered",
       {"--children", "--preset", "basic", "-k", "regex:SoftMax|layer_norm", "--launch-count", "2",
        "--", "python3", "w.py", "eager"}},
      {"children_serving",
       {"--children", "--range", "cuda-profiler-api", "--nvtx-include",
        "regex:^execute_context_0.0._generation_/", "--preset", "basic", "--launch-count", "12",
        "--", "tools/serving/gpu-check.sh", "out"}},
      {"graph_graph",
       {"--nvtx-include", "step/", "--graph-profiling", "graph", "--preset", "basic", "--",
        "python3", "w.py", "graph"}},
  };
  std::set<std::string> on_disk;
  for (const auto& entry : fs::directory_iterator(data_path("h200/capture-recordings"))) {
    if (entry.is_directory()) on_disk.insert(entry.path().filename().string());
  }
  for (const auto& [name, args] : recordings) on_disk.erase(name);
  EXPECT_TRUE(on_disk.empty()) << "a recording without a case here: " << *on_disk.begin();
  for (const auto& [name, args] : recordings) {
    check(name, data_path("h200/capture-recordings/" + name), args);
  }
  // ncu's own recordings, replayed under the command line capture builds.
  for (const auto& entry : fs::directory_iterator(data_path("h200/ncu-outputs"))) {
    if (entry.path().extension() != ".rc") continue;
    std::string name = entry.path().stem().string();
    check("ncu-outputs-" + name, data_path("h200/ncu-outputs/" + name), {"--", "./diag", "plain"});
  }
  EXPECT_EQ(compared_, recordings.size() + 19);  // the 19 ncu-outputs recordings
  // The comparison covered real failures, not only healthy runs.
  for (const char* id : {"no_kernel_matched", "no_cuda", "target_failed", "missing_application",
                         "unknown_section", "application_replay_inconsistent", "ncu_failed",
                         "no_attachable_process", "fewer_kernels_than_requested"}) {
    EXPECT_TRUE(ids_.count(id)) << id;
  }
}

}  // namespace
}  // namespace kprof
