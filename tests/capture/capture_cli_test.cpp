// kprof capture end to end against a stand-in for ncu (tests/support/fake_ncu.py) that replays
// real ncu runs recorded on the H200 (data/h200/capture-recordings, data/h200/ncu-outputs):
// the argv kprof gives ncu, the diagnosis and exit code of each failure, and the bundle.
#include <arpa/inet.h>
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <thread>

#include "common/child_process.h"
#include "common/error.h"
#include "common/json_table.h"
#include "load/request_driver.h"
#include "support/canned_http_server.h"
#include "support/run_process.h"
#include "support/test_data.h"

namespace kprof {
namespace {
namespace fs = std::filesystem;
using testing::data_path;

std::string read_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

class Capture : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) /
           ("kprof-capture-" + std::to_string(getpid()) + "-" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    setenv("KPROF_NCU", KPROF_FAKE_NCU, 1);
    setenv("FAKE_NCU_VERSION", data_path("h200/ncu-outputs/ncu_version.txt").c_str(), 1);
    setenv("FAKE_NCU_LOG", (dir_ / "ncu-calls.jsonl").c_str(), 1);
    unsetenv("FAKE_NCU_HANG");
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::string bundle() const { return (dir_ / "bundle").string(); }

  testing::ProcessResult capture(const std::string& recording, std::vector<std::string> args) {
    setenv("FAKE_NCU_RECORDING", recording.c_str(), 1);
    args.insert(args.begin(), {KPROF_BINARY, "capture", "-o", bundle()});
    return testing::run_process(args);
  }

  nlohmann::json manifest(const std::string& path) const {
    return nlohmann::json::parse(read_file(path + "/manifest.json"));
  }

  // Every ncu invocation kprof made, in order (the profiling run, then the exports).
  std::vector<nlohmann::json> ncu_calls() const {
    std::vector<nlohmann::json> calls;
    std::ifstream in(dir_ / "ncu-calls.jsonl");
    for (std::string line; std::getline(in, line);) calls.push_back(nlohmann::json::parse(line));
    return calls;
  }

  static std::vector<std::string> diagnosis_ids(const nlohmann::json& manifest) {
    std::vector<std::string> ids;
    for (const auto& d : manifest["diagnoses"]) ids.push_back(d["id"]);
    return ids;
  }

  fs::path dir_;
};

std::string recording(const std::string& name) {
  return data_path("h200/capture-recordings/" + name);
}

TEST_F(Capture, TriageCaptureWritesACompleteBundle) {
  auto result =
      capture(recording("suite_triage"), {"-k", "^k_", "--env", "FOO=bar baz", "--", "./suite"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  // Progress while ncu ran, one line per kernel with its passes.
  EXPECT_NE(result.err.find("kernel 1: k_dram_stream (14 passes)"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("kernel 10: k_atomic_one_address (14 passes)"), std::string::npos);
  // The verdict table of the capture on stdout.
  EXPECT_NE(result.out.find("k_fp32_fma"), std::string::npos);
  EXPECT_NE(result.out.find("compute-bound"), std::string::npos);

  for (const char* file : {"manifest.json", "report.ncu-rep", "raw.csv", "speed_of_light.csv",
                           "analysis.json", "ncu.log", "ncu-stdout.txt", "ncu-stderr.txt"}) {
    EXPECT_TRUE(fs::exists(bundle() + "/" + file)) << file;
  }
  EXPECT_FALSE(fs::exists(bundle() + ".incomplete"));
  nlohmann::json m = manifest(bundle());
  EXPECT_EQ(m["schema"], "kprof.bundle/1");
  EXPECT_EQ(m["status"], "ok");
  EXPECT_EQ(m["preset"], "triage");
  EXPECT_EQ(m["clock_control"], "none");
  EXPECT_EQ(m["kernel_regex"], "^k_");
  EXPECT_EQ(m["progress"]["kernels_profiled"], 10);
  EXPECT_EQ(m["progress"]["passes_min"], 14);
  EXPECT_EQ(m["ncu"]["version"], "Version 2025.3.1.0 (build 36398880) (public-release)");
  EXPECT_EQ(m["target"]["env"]["FOO"], "bar baz");
  EXPECT_TRUE(m["diagnoses"].empty()) << m["diagnoses"].dump();
  // Digests in the manifest equal sha256sum's.
  for (const auto& [name, entry] : m["files"].items()) {
    auto sum = testing::run_process({"/usr/bin/sha256sum", bundle() + "/" + name});
    EXPECT_EQ(sum.out.substr(0, 64), entry["sha256"].get<std::string>()) << name;
    EXPECT_EQ(fs::file_size(bundle() + "/" + name), entry["bytes"].get<uintmax_t>()) << name;
  }
  // analysis.json is the verdict analysis of the bundle's report.
  nlohmann::json analysis = nlohmann::json::parse(read_file(bundle() + "/analysis.json"));
  auto again =
      testing::run_process({KPROF_BINARY, "analyze", "--json", bundle() + "/report.ncu-rep"});
  nlohmann::json direct = nlohmann::json::parse(again.out);
  ASSERT_EQ(analysis["kernels"].size(), 10u);
  for (size_t i = 0; i < 10; ++i) {
    EXPECT_EQ(analysis["kernels"][i]["roofline"], direct["kernels"][i]["roofline"]);
    EXPECT_EQ(analysis["kernels"][i]["bound_by"], direct["kernels"][i]["bound_by"]);
  }

  // What ncu was given: hygiene options, the environment on ncu itself, the target after --.
  std::vector<nlohmann::json> calls = ncu_calls();
  ASSERT_GE(calls.size(), 4u);  // --version, the capture, two exports
  std::vector<std::string> argv = calls[1]["argv"];
  auto value_of = [&](const std::string& option) {
    auto it = std::find(argv.begin(), argv.end(), option);
    return it == argv.end() || it + 1 == argv.end() ? std::string("<absent>") : *(it + 1);
  };
  EXPECT_EQ(value_of("--clock-control"), "none");
  EXPECT_EQ(value_of("--config-file"), "off");
  EXPECT_EQ(value_of("--target-processes"), "application-only");
  EXPECT_EQ(value_of("--kernel-name"), "regex:^k_");
  EXPECT_EQ(argv.back(), "./suite");
  EXPECT_EQ(*(argv.end() - 2), "--");
  EXPECT_EQ(calls[1]["env"]["FOO"], "bar baz");
  for (const std::string& arg : argv) EXPECT_EQ(arg.find("FOO"), std::string::npos) << arg;
  EXPECT_EQ(calls[2]["argv"][1].get<std::string>(), "--import");
}

struct FailureCase {
  const char* recording;
  std::vector<std::string> args;  // what reproduces the recorded ncu command line
  int exit_code;
  const char* diagnosis;
};

TEST_F(Capture, EachRecordedFailureIsDiagnosed) {
  const std::vector<FailureCase> cases = {
      {"no_match", {"-k", "doesnotexist", "--", "./targets", "plain"}, 7, "no_kernel_matched"},
      {"not_cuda", {"--", "/bin/true"}, 7, "no_cuda"},
      {"children",
       {"--launch-count", "1", "--", "python3", "-c", "import subprocess"},
       7,
       "no_cuda"},
      {"never_started",
       {"--ncu-arg=--profile-from-start", "--ncu-arg=off", "--", "./targets", "plain"},
       7,
       "profiling_never_started"},
      {"unknown_metric",
       {"--metrics", "no__such_metric.sum", "--", "./targets", "plain"},
       7,
       "unknown_metric"},
      {"unknown_section",
       {"--section", "NoSuchSection", "--", "./targets", "plain"},
       7,
       "unknown_section"},
      {"app_replay_random",
       {"--replay-mode", "application", "--preset", "basic", "--", "./targets", "random"},
       7,
       "application_replay_inconsistent"},
      {"target_crash", {"--", "./targets", "crash"}, 7, "target_failed"},
      {"window_never",
       {"--range", "cuda-profiler-api", "--preset", "basic", "--", "python3", "window_target.py",
        "never"},
       7,
       "profiling_never_started"},
      {"nvtx_nomatch",
       {"--nvtx-include", "nosuchrange/", "--preset", "basic", "--", "python3", "window_target.py",
        "window"},
       7,
       "nvtx_filter_matched_nothing"},
      {"missing_app", {"--", "./no_such_program"}, 7, "missing_application"},
      {"profiler_stop",
       // Recorded with the old --honor-profiler-start-stop, which passed exactly this.
       {"--ncu-arg=--profile-from-start", "--ncu-arg=on", "--launch-count", "5", "--", "./targets",
        "stop"},
       0,
       "fewer_kernels_than_requested"},
  };
  for (const FailureCase& c : cases) {
    SCOPED_TRACE(c.recording);
    fs::remove_all(bundle());
    auto result = capture(recording(c.recording), c.args);
    EXPECT_EQ(result.exit_code, c.exit_code) << result.err;
    ASSERT_TRUE(fs::exists(bundle() + "/manifest.json")) << result.err;
    nlohmann::json m = manifest(bundle());
    std::vector<std::string> ids = diagnosis_ids(m);
    EXPECT_NE(std::find(ids.begin(), ids.end(), c.diagnosis), ids.end()) << m["diagnoses"].dump();
    EXPECT_EQ(m["status"], c.exit_code == 0 ? "ok" : "failed");
    // One line of what happened and one of what to do, on stderr.
    EXPECT_NE(result.err.find("[" + std::string(c.diagnosis) + "]"), std::string::npos)
        << result.err;
    EXPECT_NE(result.err.find("    → "), std::string::npos);
  }
}

// Recorded on the H200 with tools/capture/window_target.py: a window opened by the application
// (cudaProfilerStart/Stop) and an NVTX range hold only their kernels.
TEST_F(Capture, ProfilerWindowAndNvtxRangeHoldOnlyTheirKernels) {
  struct Case {
    const char* recording;
    std::vector<std::string> args;
    std::vector<std::string> kernels;  // in the bundle's analysis, by launch order
    std::vector<std::string> ncu_options;
  };
  const std::vector<Case> cases = {
      {"window_open",
       {"--range", "cuda-profiler-api", "--preset", "basic", "--", "python3", "window_target.py",
        "window"},
       {"vectorized_elementwise_kernel", "softmax_warp_forward", "vectorized_elementwise_kernel"},
       {"--profile-from-start", "off"}},
      {"nvtx_decode",
       {"--nvtx-include", "decode/", "--preset", "basic", "--", "python3", "window_target.py",
        "window"},
       {"vectorized_elementwise_kernel", "softmax_warp_forward"},
       {"--nvtx-include", "decode/"}},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.recording);
    fs::remove_all(bundle());
    fs::remove(dir_ / "ncu-calls.jsonl");
    auto result = capture(recording(c.recording), c.args);
    ASSERT_EQ(result.exit_code, 0) << result.err;
    nlohmann::json m = manifest(bundle());
    EXPECT_EQ(m["status"], "ok");
    EXPECT_EQ(m["progress"]["kernels_profiled"], c.kernels.size());
    EXPECT_TRUE(m["diagnoses"].empty()) << m["diagnoses"].dump();
    nlohmann::json analysis = nlohmann::json::parse(read_file(bundle() + "/analysis.json"));
    std::vector<std::string> names;
    for (const auto& k : analysis["kernels"]) names.push_back(k["target"]);
    std::sort(names.begin(), names.end());
    std::vector<std::string> expected = c.kernels;
    std::sort(expected.begin(), expected.end());
    EXPECT_EQ(names, expected);
    std::vector<std::string> argv = ncu_calls().at(1)["argv"];
    auto at = std::search(argv.begin(), argv.end(), c.ncu_options.begin(), c.ncu_options.end());
    EXPECT_NE(at, argv.end()) << nlohmann::json(argv).dump();
  }
}

// Recorded on the H200 (2026-12-01): tools/serving/serve.py, an HTTP front process that starts an
// engine process running a Llama model with CUDA-graph decode (tools/serving/README.md), driven
// by its gpu-check.sh under `--children --range cuda-profiler-api --nvtx-include` of the decode
// steps: ncu connected to the front and then to the engine, and all 12 kernels came from the
// engine (a child of the front, a grandchild of the script kprof started), inside the profiler
// window the engine opened at POST /start_profile.
TEST_F(Capture, EngineChildProcessKernelsInsideItsProfilerWindow) {
  auto result = capture(recording("children_serving"),
                        {"--children", "--range", "cuda-profiler-api", "--nvtx-include",
                         "regex:^execute_context_0.0._generation_/", "--preset", "basic",
                         "--launch-count", "12", "--", "tools/serving/gpu-check.sh", "out"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json m = manifest(bundle());
  EXPECT_EQ(m["status"], "ok");
  EXPECT_EQ(m["progress"]["kernels_profiled"], 12);
  EXPECT_EQ(m["target_processes"], "all");
  EXPECT_EQ(m["range"], "cuda-profiler-api");
  EXPECT_NE(result.err.find("Connected to process 540"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("Connected to process 619"), std::string::npos) << result.err;
  std::vector<std::string> argv = ncu_calls().at(1)["argv"];
  for (const std::vector<std::string>& option :
       {std::vector<std::string>{"--target-processes", "all"},
        std::vector<std::string>{"--profile-from-start", "off"},
        std::vector<std::string>{"--nvtx-include", "regex:^execute_context_0.0._generation_/"}}) {
    EXPECT_NE(std::search(argv.begin(), argv.end(), option.begin(), option.end()), argv.end())
        << nlohmann::json(argv).dump();
  }
  // Every profiled kernel ran in the engine (pid 619), none in the front (540).
  auto inspected =
      testing::run_process({KPROF_BINARY, "inspect", "--json", bundle() + "/report.ncu-rep"});
  ASSERT_EQ(inspected.exit_code, 0) << inspected.err;
  nlohmann::json report = nlohmann::json::parse(inspected.out)["reports"][0];
  std::map<std::int64_t, int> kernels_by_pid;
  for (const auto& kernel : report["kernels"]) ++kernels_by_pid[kernel["process_id"]];
  EXPECT_EQ(kernels_by_pid, (std::map<std::int64_t, int>{{619, 12}}));
}

// The live progress and the diagnoses read ncu's output with one parser: an application replay
// counts each kernel on its first pass (5 "Application replay pass 1" lines in the recording; 3
// of them ran a second pass before ncu gave up), in the manifest as in the summary line.
TEST_F(Capture, ApplicationReplayKernelsAreCounted) {
  auto result = capture(recording("app_replay_random"), {"--replay-mode", "application", "--preset",
                                                         "basic", "--", "./targets", "random"});
  EXPECT_EQ(result.exit_code, 7) << result.err;
  nlohmann::json m = manifest(bundle());
  EXPECT_EQ(m["progress"]["kernels_profiled"], 5);
  EXPECT_EQ(m["progress"]["passes_per_kernel"], nlohmann::json({2, 2, 2, 1, 1}));
  EXPECT_NE(result.err.find("5 kernels profiled"), std::string::npos) << result.err;
}

TEST_F(Capture, CrashedTargetsReportIsStillAnalysed) {
  auto result = capture(recording("target_crash"), {"--", "./targets", "crash"});
  EXPECT_EQ(result.exit_code, 7);
  EXPECT_TRUE(fs::exists(bundle() + "/analysis.json"));
  EXPECT_NE(result.err.find("code 11 (SIGSEGV"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("4 kernels were profiled"), std::string::npos);
}

TEST_F(Capture, NoMatchNamesTheKernelsTheApplicationRan) {
  auto result = capture(recording("no_match"), {"-k", "doesnotexist", "--", "./targets", "plain"});
  EXPECT_NE(
      result.err.find("matched none of the 1 kernels the application launched; closest: k_work"),
      std::string::npos)
      << result.err;
}

// A listening socket standing for the ncu launch-mode target's port.
class FakeTarget {
 public:
  FakeTarget() {
    fd_ = socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    bind(fd_, reinterpret_cast<sockaddr*>(&address), sizeof address);
    listen(fd_, 8);
    socklen_t length = sizeof address;
    getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &length);
    port_ = ntohs(address.sin_port);
  }
  ~FakeTarget() { close(fd_); }
  int port() const { return port_; }

 private:
  int fd_ = -1;
  int port_ = 0;
};

pid_t start_sleeper();

TEST_F(Capture, AttachDetachesOnceTheReportIsWritten) {
  FakeTarget target;
  std::string endpoint = "127.0.0.1:" + std::to_string(target.port());
  // The recorded target's pid replaced by a live process of this machine.
  pid_t live = start_sleeper();
  setenv("FAKE_NCU_TARGET_PID", std::to_string(live).c_str(), 1);
  auto result =
      capture(recording("attach_1"), {"--attach", endpoint, "-k", "k_alpha", "--launch-count", "2",
                                      "--preset", "basic", "--timeout", "60"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  unsetenv("FAKE_NCU_TARGET_PID");
  kill(live, SIGKILL);
  waitpid(live, nullptr, 0);
  EXPECT_NE(result.err.find("kernel 2 of 2: k_alpha (10 passes)"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("detaching from the target"), std::string::npos);
  EXPECT_NE(result.err.find("the target still runs"), std::string::npos);
  nlohmann::json m = manifest(bundle());
  EXPECT_EQ(m["ncu"]["exit_code"], 130);  // the attach client's answer to SIGINT
  EXPECT_EQ(m["ncu"]["detached_by_kprof"], true);
  EXPECT_EQ(m["attach"]["port"], target.port());
  EXPECT_TRUE(fs::exists(bundle() + "/analysis.json"));
  std::vector<std::string> argv = ncu_calls()[1]["argv"];
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--target-processes"), 0);
}

// A process of this machine that sleeps until killed (the attach target's stand-in), or one that
// has exited and been reaped (a pid that no longer runs).
pid_t start_sleeper() {
  pid_t pid = fork();
  if (pid == 0) {
    execl("/bin/sleep", "sleep", "60", static_cast<char*>(nullptr));
    _exit(127);
  }
  return pid;
}

pid_t gone_pid() {
  pid_t pid = fork();
  if (pid == 0) _exit(0);
  waitpid(pid, nullptr, 0);
  return pid;
}

// Issue 13: on the H200 a live target under `ncu --mode launch` was called gone after each
// detach because nothing answered a TCP connect on the attach port. Here the target runs and
// no TCP port is open at all: liveness comes from the process ncu said it connected to.
TEST_F(Capture, ALiveAttachTargetIsNotCalledGoneWithoutATcpListener) {
  pid_t target = start_sleeper();
  setenv("FAKE_NCU_TARGET_PID", std::to_string(target).c_str(), 1);
  // Port 1 is privileged and closed on any test machine: a TCP connect there fails.
  auto result =
      capture(recording("attach_1"), {"--attach", "127.0.0.1:1", "-k", "k_alpha", "--launch-count",
                                      "2", "--preset", "basic", "--timeout", "60"});
  unsetenv("FAKE_NCU_TARGET_PID");
  kill(target, SIGKILL);
  waitpid(target, nullptr, 0);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.err.find("[target_gone]"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("the target still runs"), std::string::npos) << result.err;
  EXPECT_TRUE(diagnosis_ids(manifest(bundle())).empty()) << manifest(bundle())["diagnoses"];
}

TEST_F(Capture, AnAttachTargetThatExitedIsCalledGone) {
  pid_t target = gone_pid();
  setenv("FAKE_NCU_TARGET_PID", std::to_string(target).c_str(), 1);
  auto result =
      capture(recording("attach_1"), {"--attach", "127.0.0.1", "-k", "k_alpha", "--launch-count",
                                      "2", "--preset", "basic", "--timeout", "60"});
  unsetenv("FAKE_NCU_TARGET_PID");
  ASSERT_EQ(result.exit_code, 0) << result.err;  // a warning: the report was written
  EXPECT_NE(result.err.find("[target_gone]"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("(" + std::to_string(target) + ") no longer runs"), std::string::npos)
      << result.err;
}

// Attached, kprof stops only its own attach client on a timeout: the messages must not say the
// target was stopped (issue 13).
TEST_F(Capture, AnAttachTimeoutSaysTheTargetKeepsRunning) {
  // 3 launches asked, the recording profiles 2: the client is never detached, the timeout ends it.
  auto result =
      capture(recording("attach_1"), {"--attach", "127.0.0.1", "-k", "k_alpha", "--launch-count",
                                      "3", "--preset", "basic", "--timeout", "2"});
  EXPECT_EQ(result.exit_code, 8) << result.err;
  EXPECT_NE(result.err.find("[timeout]"), std::string::npos) << result.err;
  EXPECT_EQ(result.err.find("ncu and its target were stopped"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("the target keeps running"), std::string::npos) << result.err;
}

// A front that waits for a profiler and spawns its engine only once it runs, both under the
// stand-in of `ncu --mode launch` (tests/support/fake_launched_tree.py); the stand-in ncu attaches
// to the lowest port no other client holds, so an attach that only released the front would take
// the front again.

// The JSON lines of a stand-in's log whose "event" is EVENT, in order.
std::vector<nlohmann::json> json_lines_of_event(const fs::path& path, const std::string& event) {
  std::vector<nlohmann::json> all;
  std::ifstream in(path);
  for (std::string line; std::getline(in, line);) {
    nlohmann::json entry = nlohmann::json::parse(line);
    if (entry["event"] == event) all.push_back(entry);
  }
  return all;
}

class LaunchedTree {
 public:
  LaunchedTree(const fs::path& world, std::vector<std::string> args = {}) : world_(world) {
    fs::create_directories(world);
    pid_ = fork();
    if (pid_ == 0) {
      setenv("NV_CUDA_START_SUSPENDED", "1", 1);
      setpgid(0, 0);
      std::vector<std::string> argv = {"python3", KPROF_FAKE_LAUNCHED_TREE, world.string()};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> raw;
      for (std::string& arg : argv) raw.push_back(arg.data());
      raw.push_back(nullptr);
      execvp("python3", raw.data());
      _exit(127);
    }
    for (int i = 0; i < 200 && !fs::exists(world / "waiting" / "49152"); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  ~LaunchedTree() {
    kill(-pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  // The pid registered on a port, 0 when none.
  int pid_on(int port) const {
    std::ifstream in(world_ / "waiting" / std::to_string(port));
    int pid = 0;
    in >> pid;
    return pid;
  }
  std::vector<nlohmann::json> attaches() const {
    return json_lines_of_event(world_ / "attach-log", "attach");
  }

 private:
  fs::path world_;
  pid_t pid_ = 0;
};

TEST_F(Capture, AttachProcessHoldsTheFrontFollowsTheEngineAndCapturesIt) {
  fs::path world = dir_ / "world";
  LaunchedTree tree(world);
  setenv("FAKE_NCU_WORLD", world.c_str(), 1);
  auto result =
      capture(recording("attach_1"), {"--attach", "127.0.0.1", "--attach-process", "serve::engine",
                                      "-k", "k_alpha", "--launch-count", "2", "--preset", "basic",
                                      "--timeout", "60", "--attach-timeout", "20"});
  unsetenv("FAKE_NCU_WORLD");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  int front = tree.pid_on(49152), engine = tree.pid_on(49153);
  ASSERT_GT(front, 0);
  ASSERT_GT(engine, 0) << "the engine never appeared";
  // ncu's attach clients, in order: the front held, the engine found with the release filter,
  // then the capture's client with the real filter on the engine.
  std::vector<nlohmann::json> attaches = tree.attaches();
  ASSERT_EQ(attaches.size(), 3u) << result.err;
  EXPECT_EQ(attaches[0]["pid"], front);
  EXPECT_EQ(attaches[0]["kernel_name"], "regex:^kprof_release_nothing$");
  EXPECT_EQ(attaches[1]["pid"], engine);
  EXPECT_EQ(attaches[1]["kernel_name"], "regex:^kprof_release_nothing$");
  EXPECT_EQ(attaches[2]["pid"], engine);
  EXPECT_EQ(attaches[2]["kernel_name"], "regex:k_alpha");
  // Each step on stderr as it happened and in the manifest.
  EXPECT_NE(result.err.find("attach: held pid " + std::to_string(front)), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("attach: target_found pid " + std::to_string(engine)),
            std::string::npos);
  nlohmann::json m = manifest(bundle());
  EXPECT_EQ(m["status"], "ok");
  EXPECT_EQ(m["attach"]["process"]["pid"], engine);
  EXPECT_EQ(m["attach"]["process"]["selector"], "serve::engine");
  std::vector<std::string> actions;
  for (const auto& step : m["attach"]["steps"]) {
    // "none_waiting" is recorded when a client found nobody (the engine still starting).
    if (step["action"] != "none_waiting") actions.push_back(step["action"]);
  }
  EXPECT_EQ(actions, (std::vector<std::string>{"held", "target_found", "target_released"}));
  EXPECT_EQ(m["attach"]["steps"][1]["thread_names"][0], "serve::engine");
  EXPECT_EQ(m["progress"]["kernels_profiled"], 2);
  // Every hold let go at the end.
  EXPECT_FALSE(fs::exists(world / "held-49152"));
  EXPECT_FALSE(fs::exists(world / "held-49153"));
}

TEST_F(Capture, AttachProcessThatNeverAppearsListsWhatWasSeen) {
  fs::path world = dir_ / "world";
  LaunchedTree tree(world);
  setenv("FAKE_NCU_WORLD", world.c_str(), 1);
  auto result = capture(recording("attach_1"),
                        {"--attach", "127.0.0.1", "--attach-process", "VLLM::EngineCore", "-k",
                         "k_alpha", "--launch-count", "2", "--attach-timeout", "3"});
  unsetenv("FAKE_NCU_WORLD");
  EXPECT_EQ(result.exit_code, 7) << result.err;
  EXPECT_NE(result.err.find("[attach_process_not_found]"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("pid " + std::to_string(tree.pid_on(49152))), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("serve::engine"), std::string::npos) << result.err;
  EXPECT_FALSE(fs::exists(bundle()));
  EXPECT_FALSE(fs::exists(world / "held-49152"));
  EXPECT_FALSE(fs::exists(world / "held-49153"));
}

TEST_F(Capture, AttachProcessByPid) {
  fs::path world = dir_ / "world";
  LaunchedTree tree(world, {"--no-engine"});
  setenv("FAKE_NCU_WORLD", world.c_str(), 1);
  int front = tree.pid_on(49152);
  auto result = capture(recording("attach_1"),
                        {"--attach", "127.0.0.1", "--attach-process", std::to_string(front), "-k",
                         "k_alpha", "--launch-count", "2", "--attach-timeout", "10"});
  unsetenv("FAKE_NCU_WORLD");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(manifest(bundle())["attach"]["process"]["pid"], front);
  EXPECT_EQ(manifest(bundle())["ncu"]["exit_code"], 130);
}

// ncu 2026.2.1's in-process route (capture/attach_route.h) against the stand-in ncu: a process of
// this machine that mapped a file named libcuda-injection.so, as a process that loaded ncu's
// injection library itself shows it in /proc/PID/maps. It holds the mapping until killed.
class LibraryHolder {
 public:
  explicit LibraryHolder(const fs::path& dir) {
    fs::create_directories(dir);
    fs::path library = dir / "libcuda-injection.so";
    std::ofstream(library, std::ios::binary) << std::string(4096, '\0');
    pid_ = fork();
    if (pid_ == 0) {
      int fd = open(library.c_str(), O_RDONLY);
      if (fd < 0 || mmap(nullptr, 4096, PROT_READ, MAP_PRIVATE, fd, 0) == MAP_FAILED) _exit(1);
      for (;;) pause();
    }
    for (int i = 0;
         i < 200 &&
         read_file("/proc/" + std::to_string(pid_) + "/maps").find("/libcuda-injection.so\n") ==
             std::string::npos;
         ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(25));
  }
  ~LibraryHolder() {
    kill(pid_, SIGKILL);
    waitpid(pid_, nullptr, 0);
  }
  pid_t pid() const { return pid_; }

 private:
  pid_t pid_ = 0;
};

// A banner of the recorded 2025.3.1 one's shape with 2026.2.1's number (the build number is
// made up: no 2026.2.1 banner was recorded).
void write_banner_2026_2_1(const fs::path& file) {
  std::ofstream(file) << "NVIDIA (R) Nsight Compute Command Line Profiler\n"
                         "Copyright (c) 2018-2026 NVIDIA Corporation\n"
                         "Version 2026.2.1.0 (build 1) (public-release)\n";
}

TEST_F(Capture, AttachProcessByIdTakesTheInProcessRouteWithNcu2026_2_1) {
  write_banner_2026_2_1(dir_ / "banner");
  setenv("FAKE_NCU_VERSION", (dir_ / "banner").c_str(), 1);
  LibraryHolder engine(dir_ / "ncu-target");
  std::string pid = std::to_string(engine.pid());
  auto result =
      capture(recording("attach_1"), {"--attach-process", pid, "-k", "k_alpha", "--launch-count",
                                      "2", "--preset", "basic", "--timeout", "60"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("route to process " + pid + ": in-process library — process " + pid +
                            " loaded ncu's injection library itself"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("kernel 2 of 2: k_alpha (10 passes)"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("the target still runs"), std::string::npos) << result.err;
  std::vector<nlohmann::json> calls = ncu_calls();
  ASSERT_GE(calls.size(), 2u);
  std::vector<std::string> argv = calls[1]["argv"];
  auto mode = std::find(argv.begin(), argv.end(), "--mode");
  ASSERT_NE(mode, argv.end());
  ASSERT_LE(mode + 4, argv.end());
  EXPECT_EQ(std::vector<std::string>(mode, mode + 4),
            (std::vector<std::string>{"--mode", "attach", "--process-id", pid}));
  EXPECT_EQ(std::count(argv.begin(), argv.end(), "--hostname"), 0);
  nlohmann::json m = manifest(bundle());
  EXPECT_EQ(m["attach"]["route"], "in-process-library");
  EXPECT_EQ(m["attach"]["process"]["pid"], engine.pid());
  EXPECT_NE(m["attach"]["process"]["injection_library"].get<std::string>().find(
                "ncu-target/libcuda-injection.so"),
            std::string::npos);
  EXPECT_TRUE(m["attach"]["port"].is_null());
  EXPECT_EQ(m["ncu"]["exit_code"], 130);
  EXPECT_EQ(m["ncu"]["detached_by_kprof"], true);
  EXPECT_TRUE(diagnosis_ids(m).empty()) << m["diagnoses"];
}

TEST_F(Capture, AttachProcessByIdWithAnOlderNcuSaysWhyAndRunsNothing) {
  // FAKE_NCU_VERSION: the recorded 2025.3.1 banner.
  LibraryHolder engine(dir_ / "ncu-target");
  std::string pid = std::to_string(engine.pid());
  auto result = capture(recording("attach_1"), {"--attach-process", pid, "-k", "k_alpha"});
  EXPECT_EQ(result.exit_code, 9) << result.err;
  EXPECT_NE(result.err.find("no route to process " + pid + " with ncu 2025.3.1: process " + pid +
                            " loaded ncu's injection library itself"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("ncu 2025.3.1 has no --process-id"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("start the engine under `ncu --mode launch` and attach with --attach "
                            "HOST"),
            std::string::npos)
      << result.err;
  std::vector<nlohmann::json> calls = ncu_calls();
  ASSERT_EQ(calls.size(), 1u);  // `ncu --version` alone
  EXPECT_EQ(calls[0]["argv"][1], "--version");
  EXPECT_FALSE(fs::exists(bundle()));
  EXPECT_FALSE(fs::exists(bundle() + ".incomplete"));
}

TEST_F(Capture, AttachProcessByIdOfALaunchedProcessKeepsTodaysRoute) {
  write_banner_2026_2_1(dir_ / "banner");
  setenv("FAKE_NCU_VERSION", (dir_ / "banner").c_str(), 1);
  fs::path world = dir_ / "world";
  LaunchedTree tree(world, {"--no-engine"});
  setenv("FAKE_NCU_WORLD", world.c_str(), 1);
  int front = tree.pid_on(49152);
  auto result =
      capture(recording("attach_1"), {"--attach-process", std::to_string(front), "-k", "k_alpha",
                                      "--launch-count", "2", "--attach-timeout", "10"});
  unsetenv("FAKE_NCU_WORLD");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("launch/attach by TCP — process " + std::to_string(front) +
                            " was started under `ncu --mode launch`"),
            std::string::npos)
      << result.err;
  nlohmann::json m = manifest(bundle());
  EXPECT_EQ(m["attach"]["process"]["pid"], front);
  EXPECT_EQ(m["attach"]["host"], "127.0.0.1");
  for (const nlohmann::json& call : ncu_calls()) {
    std::vector<std::string> argv = call["argv"];
    EXPECT_EQ(std::count(argv.begin(), argv.end(), "--process-id"), 0);
  }
}

TEST_F(Capture, AttachProcessByIdOfAPlainProcessIsSisterOnly) {
  write_banner_2026_2_1(dir_ / "banner");
  setenv("FAKE_NCU_VERSION", (dir_ / "banner").c_str(), 1);
  pid_t plain = start_sleeper();
  std::string pid = std::to_string(plain);
  auto result = capture(recording("attach_1"), {"--attach-process", pid});
  auto name = capture(recording("attach_1"), {"--attach-process", "serve::engine"});
  auto doctor = testing::run_process({KPROF_BINARY, "doctor", "--attach-process", pid});
  kill(plain, SIGKILL);
  waitpid(plain, nullptr, 0);
  EXPECT_EQ(result.exit_code, 9) << result.err;
  EXPECT_NE(result.err.find("no route to process " + pid + " with ncu 2026.2.1: process " + pid +
                            " was not started under `ncu --mode launch` and has not loaded ncu's "
                            "injection library"),
            std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("Engine-side setup"), std::string::npos) << result.err;
  // A name needs the tree's endpoint.
  EXPECT_EQ(name.exit_code, 2) << name.err;
  EXPECT_NE(name.err.find("--attach-process serve::engine needs --attach HOST"), std::string::npos)
      << name.err;
  // doctor says the same of it, as a warning.
  EXPECT_NE(doctor.out.find("warning  attach route           process " + pid + ": sister only"),
            std::string::npos)
      << doctor.out;
}

TEST_F(Capture, DoctorSaysTheRouteOfAProcessPerNcuVersion) {
  LibraryHolder engine(dir_ / "ncu-target");
  std::string pid = std::to_string(engine.pid());
  auto old = testing::run_process({KPROF_BINARY, "doctor", "--attach-process", pid, "--json"});
  write_banner_2026_2_1(dir_ / "banner");
  setenv("FAKE_NCU_VERSION", (dir_ / "banner").c_str(), 1);
  auto current = testing::run_process({KPROF_BINARY, "doctor", "--attach-process", pid});
  auto route_of = [](const std::string& json) {
    nlohmann::json report = nlohmann::json::parse(json);
    for (const nlohmann::json& check : report["checks"])
      if (check["check"] == "attach route") return check;
    return nlohmann::json();
  };
  nlohmann::json old_route = route_of(old.out);
  EXPECT_EQ(old_route["status"], "warning") << old.out;
  EXPECT_NE(old_route.dump().find("sister only"), std::string::npos) << old_route;
  EXPECT_NE(old_route.dump().find("ncu 2025.3.1 has no --process-id"), std::string::npos)
      << old_route;
  EXPECT_NE(current.out.find("info     attach route           process " + pid +
                             ": in-process library — process " + pid +
                             " loaded ncu's injection library itself"),
            std::string::npos)
      << current.out;
  auto gone = testing::run_process(
      {KPROF_BINARY, "doctor", "--attach-process", std::to_string(gone_pid())});
  EXPECT_NE(gone.out.find("not found on this machine"), std::string::npos) << gone.out;
}

// tools/serving/serve.py --backend fake (no torch): the OpenAI-compatible server the warm
// sequence's requests go to, with its request log.
class FakeServer {
 public:
  // wait_ready: return once GET /health answers (serve.py's engine is up; before, requests
  // fail). A warm capture waits itself; a bare --guard-url baseline does not, and under load its
  // first probes failed before the engine was up.
  FakeServer(const fs::path& dir, std::vector<std::string> args = {}, bool wait_ready = false)
      : log_(dir / "requests.jsonl") {
    fs::create_directories(dir);
    fs::path out = dir / "serve.out";
    fs::remove(out);  // a URL read must be this server's
    pid_ = fork();
    if (pid_ == 0) {
      setpgid(0, 0);
      int fd = open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
      dup2(fd, 1);
      dup2(fd, 2);
      std::vector<std::string> argv = {"python3",
                                       std::string(KPROF_SOURCE_DIR) + "/tools/serving/serve.py",
                                       "--backend",
                                       "fake",
                                       "--port",
                                       "0",
                                       "--fake-ms-per-token",
                                       "2",
                                       "--request-log",
                                       log_.string()};
      argv.insert(argv.end(), args.begin(), args.end());
      std::vector<char*> raw;
      for (std::string& arg : argv) raw.push_back(arg.data());
      raw.push_back(nullptr);
      execvp("python3", raw.data());
      _exit(127);
    }
    for (int i = 0; i < 200 && url_.empty(); ++i) {
      std::ifstream in(out);
      std::string line;
      if (std::getline(in, line) && line.rfind("listening on ", 0) == 0) url_ = line.substr(13);
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    }
    if (wait_ready && !url_.empty() && !load::wait_ready(url_, "/health", 30, nullptr).ready)
      url_.clear();
  }
  ~FakeServer() {
    kill(-pid_, SIGTERM);
    waitpid(pid_, nullptr, 0);
  }
  const std::string& url() const { return url_; }
  std::vector<nlohmann::json> requests() const { return json_lines_of_event(log_, "request"); }
  pid_t pid() const { return pid_; }  // the front: stopped (SIGSTOP), the service stalls

 private:
  fs::path log_;
  pid_t pid_ = 0;
  std::string url_;
};

// All attach events of the stand-in ncu (attach and detach, with their times).
std::vector<nlohmann::json> attach_events(const fs::path& world) {
  std::vector<nlohmann::json> all;
  std::ifstream in(world / "attach-log");
  for (std::string line; std::getline(in, line);) all.push_back(nlohmann::json::parse(line));
  return all;
}

// Issue 20: the warm sequence against the stand-in ncu (a front and its engine) and serve.py's
// fake backend: start-up held unprofiled, readiness, warm-up requests, then the capture's attach
// while requests are in flight, detach, load stopped — in that order, requests counted.
TEST_F(Capture, WarmSequenceRunsItsStepsInOrderWhileRequestsFlow) {
  fs::path world = dir_ / "world";
  LaunchedTree tree(world);
  FakeServer server(dir_, {"--fake-ready-after", "8"});
  ASSERT_FALSE(server.url().empty());
  setenv("FAKE_NCU_WORLD", world.c_str(), 1);
  setenv("FAKE_NCU_LINE_DELAY", "0.2", 1);  // the capture takes a while, as under a real ncu
  auto result = capture(recording("attach_1"), {"--attach",
                                                "127.0.0.1",
                                                "--attach-process",
                                                "serve::engine",
                                                "--load-url",
                                                server.url(),
                                                "--warmup-requests",
                                                "12",
                                                "--load-concurrency",
                                                "2",
                                                "--prompt-len",
                                                "8",
                                                "--output-len",
                                                "8",
                                                "-k",
                                                "k_alpha",
                                                "--launch-count",
                                                "2",
                                                "--preset",
                                                "basic",
                                                "--timeout",
                                                "60",
                                                "--attach-timeout",
                                                "20",
                                                "--ready-timeout",
                                                "20"});
  unsetenv("FAKE_NCU_WORLD");
  unsetenv("FAKE_NCU_LINE_DELAY");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json m = manifest(bundle());
  EXPECT_EQ(m["status"], "ok") << m["diagnoses"];
  std::vector<std::string> sequence;
  for (const auto& step : m["attach"]["warm"]["sequence"]) sequence.push_back(step["step"]);
  EXPECT_EQ(sequence, (std::vector<std::string>{"released_at_startup", "ready", "warmup",
                                                "detached", "load_started"}));
  EXPECT_EQ(m["load"]["warmup"]["completed"], 12);
  EXPECT_EQ(m["load"]["readiness"]["signal"], "http");
  EXPECT_EQ(m["load"]["readiness"]["ready"], true);
  EXPECT_GE(m["load"]["readiness"]["waited_s"].get<double>(), 1.0);  // --fake-ready-after 8
  EXPECT_EQ(m["load"]["concurrency"], 2);
  EXPECT_EQ(m["load"]["failed"], 0);
  EXPECT_GT(m["load"]["completed"].get<int>(), 0);

  // The server's own log against the stand-in ncu's: the warm-up requests all finished before
  // the capture's attach, and requests were in flight while the capture's client was attached.
  int engine = tree.pid_on(49153);
  double attached_at = 0, detached_at = 0;
  for (const auto& e : attach_events(world)) {
    if (e["pid"] == engine && e["kernel_name"] == "regex:k_alpha")
      (e["event"] == "attach" ? attached_at : detached_at) = e["t"].get<double>();
  }
  ASSERT_GT(attached_at, 0);
  ASSERT_GT(detached_at, attached_at);
  std::vector<nlohmann::json> requests = server.requests();
  int before = 0, during = 0;
  for (const auto& r : requests) {
    if (r["finish"].get<double>() < attached_at) ++before;
    if (r["arrival"].get<double>() < detached_at && r["finish"].get<double>() > attached_at)
      ++during;
  }
  EXPECT_GE(before, 12);
  EXPECT_GT(during, 0);
  // Every request the server saw is counted: the warm-up, the load, and the bill's (a load URL
  // without a guard limit: the bill alone, "guard" null).
  EXPECT_TRUE(m["service"]["guard"].is_null());
  EXPECT_EQ(m["service"]["latency"]["before"]["completed"], 5);
  EXPECT_EQ(static_cast<int>(requests.size()),
            12 + m["load"]["sent"].get<int>() + m["service"]["requests_sent"].get<int>());
}

TEST_F(Capture, EachWarmStepThatDoesNotHappenIsDiagnosed) {
  struct Case {
    std::vector<std::string> server_args, args;
    const char* diagnosis;
    bool captured;  // it stopped during a capture (else before: the sequence's own bundle)
  };
  const std::vector<Case> cases = {
      {{}, {"--ready-url", "URL/no-such-path", "--ready-timeout", "2"}, "warm_not_ready", false},
      {{"--fake-fail-every", "3"}, {"--warmup-requests", "6"}, "warmup_requests_failed", false},
      {{"--fake-fail-every", "2"}, {"--warmup-requests", "0"}, "load_requests_failed", true},
      {{},
       {"--attach-process", "VLLM::EngineCore", "--attach-timeout", "3"},
       "attach_process_not_found",
       false},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE(c.diagnosis);
    fs::remove_all(bundle());
    fs::path world = dir_ / (std::string("world-") + c.diagnosis);
    LaunchedTree tree(world);
    FakeServer server(dir_ / (std::string("server-") + c.diagnosis), c.server_args);
    ASSERT_FALSE(server.url().empty());
    std::vector<std::string> args = {"--attach",  "127.0.0.1", "--load-url",     server.url(),
                                     "-k",        "k_alpha",   "--launch-count", "2",
                                     "--timeout", "60"};
    // Every wait bounded, unless the case sets that bound itself.
    for (const char* bound : {"--attach-timeout", "--ready-timeout", "--warmup-timeout"}) {
      if (std::find(c.args.begin(), c.args.end(), bound) == c.args.end())
        args.insert(args.end(), {bound, "20"});
    }
    for (std::string arg : c.args) {
      if (arg.rfind("URL", 0) == 0) arg = server.url() + arg.substr(3);
      args.push_back(arg);
    }
    setenv("FAKE_NCU_WORLD", world.c_str(), 1);
    auto result = capture(recording("attach_1"), args);
    unsetenv("FAKE_NCU_WORLD");
    EXPECT_EQ(result.exit_code, 7) << result.err;
    EXPECT_NE(result.err.find(std::string("[") + c.diagnosis + "]"), std::string::npos)
        << result.err;
    // Every case leaves a bundle saying why, and the summary names it.
    ASSERT_TRUE(fs::exists(bundle() + "/manifest.json")) << result.err;
    nlohmann::json m = manifest(bundle());
    std::vector<std::string> ids = diagnosis_ids(m);
    EXPECT_NE(std::find(ids.begin(), ids.end(), c.diagnosis), ids.end()) << m.dump(1);
    EXPECT_EQ(m["status"], "failed");
    EXPECT_FALSE(m["attach"]["steps"].empty()) << m.dump(1);  // the holds, let go since
    if (std::string(c.diagnosis) == "attach_process_not_found") {
      // What the clients that found nothing said is quoted (ncu's, or kubectl's refusal).
      EXPECT_NE(result.err.find("(the last attach client said: "), std::string::npos) << result.err;
    }
    if (std::string(c.diagnosis) == "warm_not_ready") {
      EXPECT_EQ(m["load"]["readiness"]["ready"], false) << m.dump(1);
    }
    if (std::string(c.diagnosis) == "warmup_requests_failed") {
      EXPECT_GT(m["load"]["warmup"]["failed"].get<int>(), 0) << m.dump(1);
    }
    if (!c.captured) {
      EXPECT_TRUE(m["ncu"].is_null()) << m.dump(1);  // the capture's ncu never ran
      EXPECT_EQ(m["progress"]["kernels_profiled"], 0);
      EXPECT_EQ(m["attach"]["warm"]["stopped_before_capture"], 1);
      EXPECT_FALSE(fs::exists(bundle() + "/report.ncu-rep"));
      EXPECT_NE(result.err.find("before its first capture (nothing profiled); what it did and "
                                "why it stopped: bundle " +
                                bundle()),
                std::string::npos)
          << result.err;
    } else {
      EXPECT_FALSE(m["ncu"].is_null());
      EXPECT_FALSE(m["attach"]["warm"].contains("stopped_before_capture"));
    }
    // Every hold let go.
    EXPECT_FALSE(fs::exists(world / "held-49152"));
    EXPECT_FALSE(fs::exists(world / "held-49153"));
  }
}

// Ctrl-C while slow warm-up requests are in flight: they are cut off, the sequence ends at once
// as interrupted (not as failed warm-up), its bundle kept as .incomplete, every hold let go.
TEST_F(Capture, CtrlCDuringTheWarmUpEndsAtOnceAndKeepsTheBundle) {
  fs::path world = dir_ / "world";
  LaunchedTree tree(world);
  FakeServer server(dir_ / "server", {"--fake-ms-per-token", "2000"});  // 8 tokens: 16 s each
  ASSERT_FALSE(server.url().empty());
  setenv("FAKE_NCU_WORLD", world.c_str(), 1);
  setenv("FAKE_NCU_RECORDING", recording("attach_1").c_str(), 1);
  ChildRequest request;
  request.argv = {KPROF_BINARY,
                  "capture",
                  "-o",
                  bundle(),
                  "--attach",
                  "127.0.0.1",
                  "--load-url",
                  server.url(),
                  "-k",
                  "k_alpha",
                  "--output-len",
                  "8",
                  "--warmup-requests",
                  "2",
                  "--attach-timeout",
                  "20",
                  "--ready-timeout",
                  "20"};
  request.timeout = std::chrono::seconds(60);
  request.grace = std::chrono::seconds(30);  // kprof's own grace and more: not the test's to cut
  // SIGINT to kprof, as Ctrl-C, 1.5 s after it began the warm-up: its first request in flight
  // (one at a time: --load-concurrency 1).
  std::optional<std::chrono::steady_clock::time_point> sending, interrupted_at;
  request.on_line = [&](const std::string& line, bool) {
    if (line.find("warm: sending 2 warm-up requests") != std::string::npos)
      sending = std::chrono::steady_clock::now();
    return false;
  };
  request.on_tick = [&] {
    if (!sending || std::chrono::steady_clock::now() - *sending < std::chrono::milliseconds(1500))
      return false;
    interrupted_at = std::chrono::steady_clock::now();
    return true;
  };
  ChildResult result = run_child(request);
  unsetenv("FAKE_NCU_WORLD");
  ASSERT_TRUE(interrupted_at) << result.err;
  double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - *interrupted_at).count();
  EXPECT_LT(took, 10) << result.err;  // not the 16 s the requests would take
  EXPECT_EQ(result.exit_code, 8) << result.err;
  EXPECT_NE(result.err.find("[interrupted] interrupted during the warm-up requests (0 of 2 "
                            "completed, 1 cut off)"),
            std::string::npos)
      << result.err;
  nlohmann::json m = manifest(bundle() + ".incomplete");
  EXPECT_EQ(m["incomplete_reason"], "interrupted");
  EXPECT_TRUE(m["ncu"].is_null());
  EXPECT_EQ(m["load"]["warmup"]["cancelled"], 1) << m.dump(1);
  EXPECT_FALSE(fs::exists(world / "held-49152"));
  EXPECT_FALSE(fs::exists(world / "held-49153"));
}

// Issue 27 item 9: --warmup-timeout 3 bounds the warm-up, requests of 16 s in flight included
// (it took up to the 600 s request timeout); the diagnosis counts what was cut off.
TEST_F(Capture, TheWarmUpTimeoutBoundsTheWarmUp) {
  fs::path world = dir_ / "world";
  LaunchedTree tree(world);
  FakeServer server(dir_ / "server", {"--fake-ms-per-token", "2000"});  // 8 tokens: 16 s each
  ASSERT_FALSE(server.url().empty());
  setenv("FAKE_NCU_WORLD", world.c_str(), 1);
  const auto began = std::chrono::steady_clock::now();
  auto result = capture(recording("attach_1"),
                        {"--attach", "127.0.0.1", "--load-url", server.url(), "-k", "k_alpha",
                         "--output-len", "8", "--warmup-requests", "2", "--warmup-timeout", "3",
                         "--attach-timeout", "20", "--ready-timeout", "20"});
  const double took =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  unsetenv("FAKE_NCU_WORLD");
  EXPECT_EQ(result.exit_code, 7) << result.err;
  EXPECT_LT(took, 12) << result.err;  // 3 s of warm-up, the start-up and holds around it
  // The first request outlived the warm-up's bound (its own timeout). Whether the second was sent
  // and cut off depends on which comes first at 3 s, the request's timeout or the warm-up's own
  // check: both are right (under qemu the check usually wins, natively the timeout).
  nlohmann::json m = manifest(bundle());
  const nlohmann::json& warmup = m["load"]["warmup"];
  const bool second_cut_off = warmup["cancelled"] == 1;
  EXPECT_EQ(warmup["completed"], 0) << m.dump(1);
  EXPECT_EQ(warmup["failed"], 1) << m.dump(1);
  EXPECT_EQ(warmup["sent"], second_cut_off ? 2 : 1) << m.dump(1);
  EXPECT_NE(
      result.err.find(std::string("[warmup_requests_failed] 0 of 2 warm-up requests "
                                  "completed (1 failed (1 timeout: timeout: no reply within "
                                  "3 s)") +
                      (second_cut_off ? ", 1 cut off when the time was up" : "") + ") within 3 s"),
      std::string::npos)
      << result.err;
  EXPECT_FALSE(fs::exists(world / "held-49152"));
}

// Issue 27 item 1: a key planted everywhere a capture reads one — the profiled program's
// arguments and environment, the server's own --api-key in its command line (read from /proc by
// the attach steps), KPROF_API_KEY, a load URL's password — reaches none of what kprof prints or
// writes: stdout, stderr, and every file of every bundle.
TEST_F(Capture, APlantedKeyReachesNoOutputOfAnyCapture) {
  const std::vector<std::string> planted = {"sk-PLANTED-arg", "hf_PLANTED_env", "sk-PLANTED-srv",
                                            "PLANTEDpw"};
  auto expect_clean = [&](const testing::ProcessResult& result, const fs::path& folder,
                          const char* what) {
    for (const std::string& secret : planted) {
      EXPECT_EQ(result.out.find(secret), std::string::npos) << what << " stdout: " << secret;
      EXPECT_EQ(result.err.find(secret), std::string::npos) << what << " stderr: " << secret;
      for (const auto& entry : fs::recursive_directory_iterator(folder)) {
        if (!entry.is_regular_file()) continue;
        EXPECT_EQ(read_file(entry.path().string()).find(secret), std::string::npos)
            << what << ": " << entry.path() << " holds " << secret;
      }
    }
  };
  // A local capture: the program's argv and its --env.
  auto local = capture(recording("suite_triage"),
                       {"-k", "^k_", "--env", "HF_TOKEN=hf_PLANTED_env", "--", "./suite",
                        "--api-key", "sk-PLANTED-arg", "--url", "http://u:PLANTEDpw@h/v1"});
  ASSERT_EQ(local.exit_code, 0) << local.err;
  nlohmann::json m = manifest(bundle());
  EXPECT_EQ(m["target"]["argv"],
            nlohmann::json({"./suite", "--api-key", "***", "--url", "http://u:***@h/v1"}));
  expect_clean(local, bundle(), "local capture");
  fs::remove_all(bundle());

  // The warm sequence: the server started with its own --api-key (and the front's command line
  // shows it), the requests carrying it from KPROF_API_KEY.
  fs::path world = dir_ / "world";
  LaunchedTree tree(world, {"--api-key", "sk-PLANTED-srv"});
  FakeServer server(dir_ / "server", {"--api-key", "sk-PLANTED-srv"});
  ASSERT_FALSE(server.url().empty());
  setenv("FAKE_NCU_WORLD", world.c_str(), 1);
  setenv("KPROF_API_KEY", "sk-PLANTED-srv", 1);
  std::string url_with_password = server.url();
  url_with_password.insert(url_with_password.find("://") + 3, "kprof:PLANTEDpw@");
  auto warm =
      capture(recording("attach_1"),
              {"--attach", "127.0.0.1", "--load-url", url_with_password, "--warmup-requests", "2",
               "-k", "k_alpha", "--launch-count", "2", "--attach-timeout", "20", "--ready-timeout",
               "20", "--warmup-timeout", "20"});
  unsetenv("FAKE_NCU_WORLD");
  unsetenv("KPROF_API_KEY");
  ASSERT_EQ(warm.exit_code, 0) << warm.err;
  m = manifest(bundle());
  EXPECT_EQ(m["load"]["completed"].get<int>() > 0, true) << m.dump(1);  // the key was sent
  bool saw_command_line = false;
  for (const auto& step : m["attach"]["steps"]) {
    std::string line = step.value("command_line", "");
    if (line.find("--api-key") == std::string::npos) continue;
    saw_command_line = true;
    EXPECT_NE(line.find("--api-key ***"), std::string::npos) << line;
  }
  EXPECT_TRUE(saw_command_line) << m["attach"].dump(1);
  // (The stand-ins' own logs beside it hold what they were given: the real key, as they must.)
  expect_clean(warm, bundle(), "warm capture");
}

// Issue 27 item 2: the API key goes only to the host it was given for (the load URL's): a
// --ready-url on another host is polled without it.
TEST_F(Capture, TheKeyGoesOnlyToTheLoadUrlsHost) {
  fs::path world = dir_ / "world";
  LaunchedTree tree(world);
  FakeServer server(dir_ / "server", {"--api-key", "sk-only-here"});
  ASSERT_FALSE(server.url().empty());
  testing::CannedHttpServer elsewhere(
      [](const std::string&) { return testing::CannedHttpServer::json_response("{}"); },
      "127.0.0.2");
  ASSERT_TRUE(elsewhere.started());
  setenv("FAKE_NCU_WORLD", world.c_str(), 1);
  setenv("KPROF_API_KEY", "sk-only-here", 1);
  auto result = capture(recording("attach_1"),
                        {"--attach", "127.0.0.1", "--load-url", server.url(), "--ready-url",
                         elsewhere.url() + "/health", "--warmup-requests", "2", "-k", "k_alpha",
                         "--launch-count", "2", "--attach-timeout", "20", "--ready-timeout", "20"});
  unsetenv("FAKE_NCU_WORLD");
  unsetenv("KPROF_API_KEY");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  ASSERT_FALSE(elsewhere.requests().empty());
  for (const std::string& request : elsewhere.requests()) {
    EXPECT_EQ(request.find("Authorization"), std::string::npos) << request;
  }
  EXPECT_EQ(manifest(bundle())["load"]["warmup"]["completed"], 2);  // the load URL got the key
}

TEST_F(Capture, WarmSequenceCapturesNTimesOneBundleEach) {
  fs::path world = dir_ / "world";
  LaunchedTree tree(world);
  FakeServer server(dir_);
  setenv("FAKE_NCU_WORLD", world.c_str(), 1);
  auto result = capture(recording("attach_1"),
                        {"--attach", "127.0.0.1", "--attach-process", "serve::engine", "--load-url",
                         server.url(), "--warmup-requests", "4", "--captures", "2", "-k", "k_alpha",
                         "--launch-count", "2", "--timeout", "60"});
  unsetenv("FAKE_NCU_WORLD");
  ASSERT_EQ(result.exit_code, 0) << result.err;
  for (int i = 1; i <= 2; ++i) {
    std::string path = bundle() + "/capture-" + std::to_string(i);
    ASSERT_TRUE(fs::exists(path + "/report.ncu-rep")) << path;
    nlohmann::json m = manifest(path);
    EXPECT_EQ(m["attach"]["warm"]["capture"], i);
    EXPECT_EQ(m["attach"]["warm"]["captures"], 2);
    EXPECT_GT(m["load"]["completed"].get<int>(), 0);
  }
  // The engine attached with the real filter twice, the front never.
  int real = 0;
  for (const auto& e : tree.attaches()) {
    if (e["kernel_name"] == "regex:k_alpha") {
      EXPECT_EQ(e["pid"], tree.pid_on(49153));
      ++real;
    }
  }
  EXPECT_EQ(real, 2);
}

// Seen on the H200 (tools/capture/h200-warm-check/gemm-filter): a second warm capture against
// a tree the first one had let go found the engine first, left the front waiting, and its capture
// attached to the front (attached_other_process). Every process waiting when the target is found,
// and again before it is let go, is held: the capture's client can then only find the target.
TEST_F(Capture, SecondWarmCaptureHoldsTheFrontEvenWhenTheEngineIsFoundFirst) {
  fs::path world = dir_ / "world";
  LaunchedTree tree(world);
  FakeServer server(dir_);
  setenv("FAKE_NCU_WORLD", world.c_str(), 1);
  std::vector<std::string> args = {"--attach",   "127.0.0.1",  "--attach-process",  "serve::engine",
                                   "--load-url", server.url(), "--warmup-requests", "2",
                                   "-k",         "k_alpha",    "--launch-count",    "2",
                                   "--timeout",  "60",         "--attach-timeout",  "20"};
  auto first = capture(recording("attach_1"), args);
  ASSERT_EQ(first.exit_code, 0) << first.err;
  fs::rename(bundle(), dir_ / "first");
  size_t first_attaches = tree.attaches().size();
  // The released tree: both wait again; ncu now offers the engine first.
  setenv("FAKE_NCU_ORDER", "highest", 1);
  auto second = capture(recording("attach_1"), args);
  unsetenv("FAKE_NCU_ORDER");
  unsetenv("FAKE_NCU_WORLD");
  ASSERT_EQ(second.exit_code, 0) << second.err;
  int front = tree.pid_on(49152), engine = tree.pid_on(49153);
  std::vector<nlohmann::json> attaches = tree.attaches();
  attaches.erase(attaches.begin(), attaches.begin() + static_cast<long>(first_attaches));
  ASSERT_EQ(attaches.size(), 3u) << second.err;
  EXPECT_EQ(attaches[0]["pid"], engine);  // found first, held
  EXPECT_EQ(attaches[1]["pid"], front);   // then the front held too
  EXPECT_EQ(attaches[1]["kernel_name"], "regex:^kprof_release_nothing$");
  EXPECT_EQ(attaches[2]["pid"], engine);  // the capture's client
  EXPECT_EQ(attaches[2]["kernel_name"], "regex:k_alpha");
  nlohmann::json m = manifest(bundle());
  EXPECT_EQ(m["status"], "ok") << m["diagnoses"];
  EXPECT_FALSE(fs::exists(world / "held-49152"));
  EXPECT_FALSE(fs::exists(world / "held-49153"));
}

// Readiness from a log line: the server's own "ready … (warm-up done)" line, printed after the
// hold; a matching line already in the file before kprof began (a log appended to across runs)
// is not taken for it, and the diagnosis names it.
TEST_F(Capture, WarmReadinessFromALogLineCountsOnlyWhatTheLogGains) {
  fs::path world = dir_ / "world";
  LaunchedTree tree(world);
  FakeServer server(dir_ / "server", {"--fake-ready-after", "3"});
  ASSERT_FALSE(server.url().empty());
  setenv("FAKE_NCU_WORLD", world.c_str(), 1);
  std::vector<std::string> args = {"--attach",
                                   "127.0.0.1",
                                   "--load-url",
                                   server.url(),
                                   "-k",
                                   "k_alpha",
                                   "--launch-count",
                                   "2",
                                   "--timeout",
                                   "60",
                                   "--attach-timeout",
                                   "20",
                                   "--warmup-requests",
                                   "2",
                                   "--ready-log-file",
                                   (dir_ / "server" / "serve.out").string(),
                                   "--ready-log-line",
                                   R"(ready after .* \(warm-up done\))",
                                   "--ready-timeout",
                                   "20"};
  auto ready = capture(recording("attach_1"), args);
  ASSERT_EQ(ready.exit_code, 0) << ready.err;
  nlohmann::json readiness = manifest(bundle())["load"]["readiness"];
  EXPECT_EQ(readiness["signal"], "log_line");
  EXPECT_NE(readiness["line"].get<std::string>().find("(warm-up done)"), std::string::npos);

  // The same log again: its line is from before this run, and the warm server prints no new one.
  fs::rename(bundle(), dir_ / "first");
  args[args.size() - 1] = "2";  // --ready-timeout
  auto stale = capture(recording("attach_1"), args);
  unsetenv("FAKE_NCU_WORLD");
  EXPECT_EQ(stale.exit_code, 7) << stale.err;
  EXPECT_NE(stale.err.find("[warm_not_ready]"), std::string::npos) << stale.err;
  EXPECT_NE(stale.err.find("the log held one from before kprof began"), std::string::npos)
      << stale.err;
  EXPECT_NE(stale.err.find("--ready-url"), std::string::npos) << stale.err;
}

TEST_F(Capture, AttachWithNothingListeningIsDiagnosed) {
  auto result =
      capture(recording("attach_nothing"), {"--attach", "127.0.0.1", "--launch-count", "1"});
  EXPECT_EQ(result.exit_code, 7);
  EXPECT_NE(result.err.find("[no_attachable_process]"), std::string::npos) << result.err;
}

// A process that has ended but not been reaped yet (a zombie: its parent, ncu, is gone and
// whatever adopted it reaps when it gets to it) no longer runs.
bool alive(pid_t pid) {
  if (kill(pid, 0) != 0 && errno == ESRCH) return false;
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  size_t close = line.rfind(')');
  return close == std::string::npos || close + 2 >= line.size() || line[close + 2] != 'Z';
}

pid_t wait_for_pid(const std::string& pidfile) {
  for (int i = 0; i < 200; ++i) {
    std::ifstream in(pidfile);
    pid_t pid = 0;
    if (in >> pid && pid > 0) return pid;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return 0;
}

TEST_F(Capture, TimeoutStopsNcuAndItsTargetAndMarksTheBundleIncomplete) {
  std::string pidfile = (dir_ / "target.pid").string();
  setenv("FAKE_NCU_HANG", "1", 1);
  setenv("FAKE_NCU_HANG_PIDFILE", pidfile.c_str(), 1);
  auto result =
      capture(recording("suite_triage"), {"--timeout", "2", "-k", "^k_", "--", "./suite"});
  unsetenv("FAKE_NCU_HANG");
  EXPECT_EQ(result.exit_code, 8) << result.err;
  EXPECT_FALSE(fs::exists(bundle()));
  ASSERT_TRUE(fs::exists(bundle() + ".incomplete/manifest.json"));
  nlohmann::json m = manifest(bundle() + ".incomplete");
  EXPECT_EQ(m["status"], "incomplete");
  EXPECT_EQ(m["incomplete_reason"], "timeout");
  EXPECT_TRUE(fs::exists(bundle() + ".incomplete/ncu.log"));  // what ncu printed is kept
  pid_t target = wait_for_pid(pidfile);
  ASSERT_GT(target, 0);
  for (int i = 0; i < 100 && alive(target); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(alive(target)) << "the profiled program outlived the timeout";
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().find(".partial-"), std::string::npos);
  }
}

TEST_F(Capture, CtrlCStopsNcuAndItsTargetAndMarksTheBundleIncomplete) {
  std::string pidfile = (dir_ / "target.pid").string();
  setenv("FAKE_NCU_HANG", "1", 1);
  setenv("FAKE_NCU_HANG_PIDFILE", pidfile.c_str(), 1);
  setenv("FAKE_NCU_RECORDING", recording("suite_triage").c_str(), 1);
  ChildRequest request;
  request.argv = {KPROF_BINARY, "capture", "-o", bundle(), "-k", "^k_", "--", "./suite"};
  request.timeout = std::chrono::seconds(60);
  // kprof may take its own grace (SIGKILL 5 s after SIGINT) and 2 s more for the pipes before
  // it exits: the test waits well past that before it kills kprof, so a loaded machine is not
  // read as kprof ignoring Ctrl-C.
  request.grace = std::chrono::seconds(30);
  // SIGINT to kprof (as a terminal's Ctrl-C would) once the profiled program is running.
  request.on_tick = [&] { return fs::exists(pidfile); };
  ChildResult result = run_child(request);
  unsetenv("FAKE_NCU_HANG");
  EXPECT_EQ(result.exit_code, 8) << result.err;
  nlohmann::json m = manifest(bundle() + ".incomplete");
  EXPECT_EQ(m["incomplete_reason"], "interrupted");
  pid_t target = wait_for_pid(pidfile);
  for (int i = 0; i < 100 && alive(target); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(alive(target));
}

// Issue 27 item 16: a closed terminal (SIGHUP) or SIGQUIT ends a capture as Ctrl-C does: ncu and
// its target stopped, the bundle kept as .incomplete. Before, kprof died with 129 and left both
// running and an empty .partial folder.
TEST_F(Capture, AHangUpEndsTheCaptureAsCtrlCDoes) {
  for (int signal : {SIGHUP, SIGQUIT}) {
    SCOPED_TRACE(signal);
    fs::remove_all(bundle() + ".incomplete");
    std::string pidfile = (dir_ / ("target-" + std::to_string(signal) + ".pid")).string();
    setenv("FAKE_NCU_HANG", "1", 1);
    setenv("FAKE_NCU_HANG_PIDFILE", pidfile.c_str(), 1);
    setenv("FAKE_NCU_RECORDING", recording("suite_triage").c_str(), 1);
    auto result = testing::run_process_signalled(
        {KPROF_BINARY, "capture", "-o", bundle(), "-k", "^k_", "--", "./suite"},
        [&] { return fs::exists(pidfile); }, signal);
    unsetenv("FAKE_NCU_HANG");
    EXPECT_EQ(result.exit_code, 8) << result.err;
    nlohmann::json m = manifest(bundle() + ".incomplete");
    EXPECT_EQ(m["incomplete_reason"], "interrupted");
    pid_t target = wait_for_pid(pidfile);
    for (int i = 0; i < 100 && alive(target); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
    EXPECT_FALSE(alive(target));
    for (const auto& entry : fs::directory_iterator(dir_)) {
      EXPECT_EQ(entry.path().filename().string().find(".partial-"), std::string::npos);
    }
  }
}

// Issue 27 item 17: `-o new/.` ran ncu and then failed to rename the bundle (exit 11, left at
// new/..incomplete); a path that names no folder of its own is refused before anything runs.
TEST_F(Capture, AnOutputThatNamesNoFolderIsRefusedFirst) {
  for (const std::string& output : {(dir_ / "new" / ".").string(), (dir_ / "new" / "..").string(),
                                    (dir_ / "new" / "./").string()}) {
    auto result =
        testing::run_process({KPROF_BINARY, "capture", "-o", output, "-k", "^k_", "--", "./suite"});
    EXPECT_EQ(result.exit_code, 2) << output << ": " << result.err;
    EXPECT_NE(result.err.find("a bundle is a folder of its own"), std::string::npos) << result.err;
  }
  EXPECT_TRUE(ncu_calls().empty());
  EXPECT_FALSE(fs::exists(dir_ / "new"));
}

// Issue 27 item 20: two captures in the same second (a script capturing twice in a row) got the
// same default name and the second exited 3 "already exists".
TEST_F(Capture, DefaultBundleNamesNeverCollide) {
  fs::path work = dir_ / "cwd";
  fs::create_directories(work);
  setenv("FAKE_NCU_RECORDING", recording("suite_triage").c_str(), 1);
  std::vector<std::string> made;
  const fs::path before = fs::current_path();
  fs::current_path(work);  // the default name is in the working directory
  for (int i = 0; i < 3; ++i) {
    auto result = testing::run_process({KPROF_BINARY, "capture", "-k", "^k_", "--", "./suite"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
  }
  fs::current_path(before);
  for (const auto& entry : fs::directory_iterator(work)) made.push_back(entry.path().filename());
  std::sort(made.begin(), made.end());
  ASSERT_EQ(made.size(), 3u);
  // The same second for all three, or two seconds: the later ones numbered -2, -3 within each.
  for (const std::string& name : made) {
    EXPECT_EQ(name.rfind("kprof-capture-", 0), 0u) << name;
    EXPECT_TRUE(fs::exists(work / name / "manifest.json")) << name;
  }
}

TEST_F(Capture, RefusalsHappenBeforeAnythingRuns) {
  auto env_wrapper = capture(recording("suite_triage"), {"--", "env", "FOO=1", "./app"});
  EXPECT_EQ(env_wrapper.exit_code, 2);
  EXPECT_NE(env_wrapper.err.find("--env NAME=VALUE"), std::string::npos);
  auto unscoped = capture(recording("suite_triage"), {"--preset", "full", "--", "./server"});
  EXPECT_EQ(unscoped.exit_code, 2);
  EXPECT_NE(unscoped.err.find("unscoped --preset full"), std::string::npos);
  auto bad_env = capture(recording("suite_triage"), {"--env", "NOEQUALS", "--", "./app"});
  EXPECT_EQ(bad_env.exit_code, 2);
  auto bad_regex = capture(recording("suite_triage"), {"-k", "(", "--", "./app"});
  EXPECT_EQ(bad_regex.exit_code, 2);
  EXPECT_TRUE(ncu_calls().empty());
  EXPECT_FALSE(fs::exists(bundle()));
  EXPECT_TRUE(env_wrapper.out.empty());
}

TEST_F(Capture, AnExistingBundleIsNeverOverwritten) {
  fs::create_directories(bundle());
  auto result = capture(recording("suite_triage"), {"--", "./suite"});
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_NE(result.err.find("already exists"), std::string::npos);
}

// The issue's case: a dangling link at -o let the whole capture run and then fail at the rename,
// leaving a reduced manifest. It is refused before ncu is asked anything.
TEST_F(Capture, ADanglingLinkAtTheOutputIsRefusedBeforeNcuRuns) {
  fs::create_symlink(dir_ / "elsewhere" / "bundle", bundle());
  auto result = capture(recording("suite_triage"), {"-k", "^k_", "--", "./suite"});
  EXPECT_EQ(result.exit_code, 3) << result.err;
  EXPECT_NE(result.err.find(bundle() + ": already exists (a symbolic link to "), std::string::npos)
      << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_TRUE(ncu_calls().empty());
  EXPECT_TRUE(fs::is_symlink(bundle()));
  EXPECT_FALSE(fs::exists(dir_ / "elsewhere"));
  for (const auto& entry : fs::directory_iterator(dir_)) {
    std::string name = entry.path().filename().string();
    EXPECT_EQ(name.find(".partial-"), std::string::npos) << name;
    EXPECT_EQ(name.find(".incomplete"), std::string::npos) << name;
  }
}

// A missing ncu must not hide a mistake in the command line: usage (2), then the bundle path
// (3), then ncu (9).
// Found in review: a malformed --load-url or a zero length was "internal error" after the target
// had been held and waited for; a 12-digit --attach-process pid ended kprof through std::stoi.
TEST_F(Capture, WarmAndAttachOptionsAreRefusedBeforeAnythingRuns) {
  setenv("KPROF_NCU", "/nonexistent/ncu", 1);
  const std::vector<std::pair<std::vector<std::string>, std::string>> wrong = {
      {{"--attach", "127.0.0.1", "--load-url", "127.0.0.1:8000"}, "not an http:// or https://"},
      {{"--attach", "127.0.0.1", "--load-url", "http://127.0.0.1:8000/v1", "--prompt-len", "0"},
       "--prompt-len and --output-len must be at least 1"},
      {{"--attach", "127.0.0.1", "--load-url", "http://127.0.0.1:8000", "--ready-timeout", "-1"},
       "seconds between 0 and 1000000"},
      {{"--attach", "127.0.0.1", "--attach-process", "99999999999"}, "not a process id"},
  };
  for (const auto& [args, message] : wrong) {
    auto result = capture(recording("attach_1"), args);
    EXPECT_EQ(result.exit_code, 2) << args.back() << ": " << result.err;
    EXPECT_NE(result.err.find(message), std::string::npos) << result.err;
    EXPECT_EQ(result.err.find("internal error"), std::string::npos) << result.err;
  }
}

TEST_F(Capture, UsageErrorsComeBeforeLookingForNcu) {
  setenv("KPROF_NCU", "/nonexistent/ncu", 1);
  const std::vector<std::vector<std::string>> wrong = {
      {"--env", "NOEQUALS", "--", "./app"}, {"-k", "(", "--", "./app"},
      {"--preset", "huge", "--", "./app"},  {"--safety", "some", "--", "./app"},
      {"--", "env", "FOO=1", "./app"},      {"--preset", "full", "--", "./server"},
  };
  for (const auto& args : wrong) {
    auto result = capture(recording("suite_triage"), args);
    EXPECT_EQ(result.exit_code, 2) << args.front() << ": " << result.err;
    EXPECT_EQ(result.err.find("ncu not found"), std::string::npos) << result.err;
  }
  fs::create_directories(bundle());
  EXPECT_EQ(capture(recording("suite_triage"), {"--", "./suite"}).exit_code, 3);
  fs::remove(bundle());
  EXPECT_EQ(capture(recording("suite_triage"), {"--", "./suite"}).exit_code, 9);
  for (const auto& entry : fs::directory_iterator(dir_)) {
    EXPECT_EQ(entry.path().filename().string().find("bundle"), std::string::npos)
        << entry.path();  // nothing created
  }
}

TEST_F(Capture, MissingNcuSaysWhatToInstall) {
  setenv("KPROF_NCU", "/nonexistent/ncu", 1);
  auto result = capture(recording("suite_triage"), {"--", "./suite"});
  EXPECT_EQ(result.exit_code, 9);
  EXPECT_NE(result.err.find("ncu not found"), std::string::npos);
  EXPECT_NE(result.err.find("kprof doctor"), std::string::npos);
}

TEST_F(Capture, DoctorOnTheH200sRecordedFacts) {
  // A root folder holding what the H200 exposed (data/h200/ncu-outputs).
  fs::path root = dir_ / "root";
  fs::create_directories(root / "proc/driver/nvidia");
  fs::create_directories(root / "sys/module/nvidia");
  fs::create_directories(root / "dev");
  fs::create_directories(root / "usr/local/cuda/include");
  fs::copy_file(data_path("h200/ncu-outputs/driver_params.txt"),
                root / "proc/driver/nvidia/params");
  fs::copy_file(data_path("h200/ncu-outputs/driver_version.txt"),
                root / "sys/module/nvidia/version");
  std::ofstream(root / "usr/local/cuda/include/cuda_runtime_api.h")
      << "#define CUDART_VERSION  13000\n";
  std::ofstream(root / "dev/nvidiactl") << "";
  unsetenv("CUDA_INJECTION64_PATH");
  auto ready = testing::run_process({KPROF_BINARY, "doctor", "--root", root.string(), "--json"});
  ASSERT_EQ(ready.exit_code, 0) << ready.out << ready.err;
  nlohmann::json report = nlohmann::json::parse(ready.out);
  EXPECT_EQ(report["ready"], true);
  std::string text = report.dump();
  EXPECT_NE(text.find("580.159.04 (supports CUDA up to 13.x)"), std::string::npos) << text;
  EXPECT_NE(text.find("toolkit 13.0 on a CUDA 13.x driver"), std::string::npos);
  EXPECT_NE(text.find("RmProfilingAdminOnly: 0"), std::string::npos);
  EXPECT_NE(text.find("Version 2025.3.1.0"), std::string::npos);
  EXPECT_NE(text.find("not read with --root"), std::string::npos) << text;

  // The GPU's memory through nvidia-smi (a stand-in printing what the H200's printed with 100
  // GiB held): more in use than free is a warning with the measured cost, not a failure.
  fs::path smi = dir_ / "nvidia-smi";
  std::ofstream(smi) << "#!/bin/sh\nexec cat " << data_path("h200/nvidia-smi/held_100g.csv")
                     << "\n";
  fs::permissions(smi, fs::perms::owner_all);
  setenv("KPROF_NVIDIA_SMI", smi.c_str(), 1);
  auto held = testing::run_process({KPROF_BINARY, "doctor", "--root", root.string()});
  unsetenv("KPROF_NVIDIA_SMI");
  EXPECT_EQ(held.exit_code, 0) << held.out << held.err;
  EXPECT_NE(held.out.find("warning  GPU 0 memory headroom  NVIDIA H200: 100.6 of 140.4 GiB in use "
                          "— more than is free beside it"),
            std::string::npos)
      << held.out;
  EXPECT_NE(held.out.find("18 s per profiled kernel with 80 GiB resident"), std::string::npos);

  fs::remove(root / "dev/nvidiactl");
  setenv("CUDA_INJECTION64_PATH", "/opt/other/libinject.so", 1);
  auto not_ready = testing::run_process({KPROF_BINARY, "doctor", "--root", root.string()});
  unsetenv("CUDA_INJECTION64_PATH");
  EXPECT_EQ(not_ready.exit_code, 9);
  EXPECT_NE(not_ready.out.find("FAILED   GPU device"), std::string::npos) << not_ready.out;
  EXPECT_NE(not_ready.out.find("warning  CUDA_INJECTION64_PATH"), std::string::npos);

  // A version file that holds no driver version is reported as found, not trusted.
  fs::remove(root / "sys/module/nvidia/version");
  std::ofstream(root / "sys/module/nvidia/version") << "99999.1\n";
  auto absurd = testing::run_process({KPROF_BINARY, "doctor", "--root", root.string()});
  EXPECT_EQ(absurd.exit_code, 9);
  EXPECT_NE(absurd.out.find("FAILED   driver                 /sys/module/nvidia/version holds "
                            "\"99999.1\", not a driver version"),
            std::string::npos)
      << absurd.out;
}

// "" when the manifest is a valid kprof.bundle/1 (docs/kprof.bundle.schema.json), else why not.
std::string bundle_schema_violation(const nlohmann::json& manifest) {
  static const std::string schema =
      read_file(std::string(KPROF_TESTS_DIR) + "/../docs/kprof.bundle.schema.json");
  try {
    check_json_table(manifest, schema.c_str(), "kprof.bundle");
    return "";
  } catch (const InputError& error) {
    return error.what();
  }
}

// The bundles of the H100 guard check (data/h100/guard_check, real warm captures of serve.py):
// each is a valid kprof.bundle/1, its plan's error is measured / predicted - 1 of its own figures,
// ncu's held time in the bill is the plan's measured time, and the one the guard stopped says so
// in both places.
TEST(RealGuardCheck, TheH100BundlesAreValidAndAgreeWithThemselves) {
  const fs::path dir = fs::path(KPROF_SOURCE_DIR) / "data/h100/guard_check";
  int guarded = 0;
  for (const char* name : {"triage", "full", "guarded.incomplete"}) {
    SCOPED_TRACE(name);
    nlohmann::json m = nlohmann::json::parse(read_file((dir / name / "manifest.json").string()));
    EXPECT_EQ(bundle_schema_violation(m), "");
    const nlohmann::json& plan = m["plan"];
    double predicted = plan["predicted_ncu_wall_s"], measured = plan["measured_ncu_wall_s"];
    EXPECT_NEAR(plan["error"].get<double>(), measured / predicted - 1, 0.0006);
    EXPECT_DOUBLE_EQ(m["service"]["ncu_held_s"].get<double>(), measured);
    bool fired = m["service"]["guard"]["fired"];
    EXPECT_EQ(fired, m["status"] == "incomplete");
    if (fired) {
      ++guarded;
      EXPECT_EQ(m["incomplete_reason"], "guard");
      EXPECT_EQ(m["ncu"]["detached_by_kprof"], true);
    }
  }
  EXPECT_EQ(guarded, 1);
}

// The attach capture the guard tests share: k_alpha's 2 launches at basic from the stand-in target
// on PORT, the guard (or the bill alone, without LIMIT) probing URL every 0.2 s with 4-token
// prompts and 2 tokens out after a baseline of 3; LIMIT: --guard-p99-ms/--guard-factor.
std::vector<std::string> guarded_attach(int port, const std::string& url,
                                        const std::vector<std::string>& limit) {
  std::vector<std::string> args = {"--attach",
                                   "127.0.0.1:" + std::to_string(port),
                                   "-k",
                                   "k_alpha",
                                   "--launch-count",
                                   "2",
                                   "--preset",
                                   "basic",
                                   "--timeout",
                                   "60",
                                   "--guard-url",
                                   url,
                                   "--guard-interval",
                                   "0.2",
                                   "--guard-baseline",
                                   "3",
                                   "--prompt-len",
                                   "4",
                                   "--output-len",
                                   "2"};
  args.insert(args.end(), limit.begin(), limit.end());
  return args;
}

// Issue 41: the latency guard. An attach capture of two kernels whose target (the stand-in ncu's
// FAKE_NCU_STALL_PID: serve.py's front, stopped with SIGSTOP) stalls after the first kernel, as an
// engine does while ncu replays: the guard's probes wait, their p99 passes --guard-p99-ms, and
// kprof stops the attach client — within seconds, not the 30 s the stall would last —, keeps the
// partial bundle (incomplete, reason "guard", the one kernel profiled, the report), and the
// server, let go, answers again.
TEST_F(Capture, TheGuardDetachesOnALatencySpikeAndKeepsThePartialBundle) {
  FakeServer server(dir_ / "server", {"--fake-ms-per-token", "1"}, true);
  ASSERT_FALSE(server.url().empty());
  FakeTarget target;
  pid_t live = start_sleeper();
  setenv("FAKE_NCU_TARGET_PID", std::to_string(live).c_str(), 1);
  setenv("FAKE_NCU_STALL_PID", std::to_string(server.pid()).c_str(), 1);
  setenv("FAKE_NCU_STALL_S", "30", 1);
  unsetenv("KPROF_API_KEY");
  auto began = std::chrono::steady_clock::now();
  auto result = capture(recording("attach_1"),
                        guarded_attach(target.port(), server.url(), {"--guard-p99-ms", "1500"}));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  unsetenv("FAKE_NCU_STALL_PID");
  unsetenv("FAKE_NCU_STALL_S");
  unsetenv("FAKE_NCU_TARGET_PID");
  kill(live, SIGKILL);
  waitpid(live, nullptr, 0);
  EXPECT_EQ(result.exit_code, 8) << result.err;  // incomplete: stopped before its 2 kernels
  EXPECT_LT(took, 25) << "the guard waited out the stall";
  EXPECT_NE(result.err.find("guard: baseline 3 of 3 requests completed"), std::string::npos)
      << result.err;
  EXPECT_NE(result.err.find("passed 1500 ms (--guard-p99-ms 1500)"), std::string::npos)
      << result.err;
  ASSERT_TRUE(fs::exists(bundle() + ".incomplete")) << result.err;
  nlohmann::json m = manifest(bundle() + ".incomplete");
  EXPECT_EQ(m["status"], "incomplete");
  EXPECT_EQ(m["incomplete_reason"], "guard");
  EXPECT_EQ(m["progress"]["kernels_profiled"], 1);
  EXPECT_EQ(m["ncu"]["detached_by_kprof"], true);
  EXPECT_TRUE(fs::exists(bundle() + ".incomplete/report.ncu-rep"));
  std::vector<std::string> ids = diagnosis_ids(m);
  EXPECT_NE(std::find(ids.begin(), ids.end(), "guard_fired"), ids.end()) << m["diagnoses"];
  const nlohmann::json& service = m["service"];
  EXPECT_EQ(service["guard"]["fired"], true);
  EXPECT_EQ(service["url"], server.url());
  EXPECT_EQ(service["latency"]["before"]["completed"], 3);
  EXPECT_GE(service["longest_stall_ms"].get<double>(), 1500);
  EXPECT_EQ(service["latency"]["after"]["completed"], 3);  // the server answers again
  // The guard counts every request it sent; the server saw none it did not count.
  std::int64_t counted = service["latency"]["before"]["requests"].get<std::int64_t>() +
                         service["latency"]["during"]["requests"].get<std::int64_t>() +
                         service["latency"]["after"]["requests"].get<std::int64_t>();
  EXPECT_EQ(service["requests_sent"], counted);
  EXPECT_LE(static_cast<std::int64_t>(server.requests().size()), counted);
  EXPECT_GE(static_cast<std::int64_t>(server.requests().size()), 6);
  EXPECT_GT(service["ncu_held_s"].get<double>(), 1.5);
  EXPECT_EQ(bundle_schema_violation(m), "");
}

// The same capture without the stall: the probes stay fast, the guard stays quiet, both kernels
// are profiled and the bill says what the capture cost.
TEST_F(Capture, TheGuardStaysQuietWhenTheServiceKeepsUp) {
  FakeServer server(dir_ / "server", {"--fake-ms-per-token", "1"}, true);
  ASSERT_FALSE(server.url().empty());
  FakeTarget target;
  pid_t live = start_sleeper();
  setenv("FAKE_NCU_TARGET_PID", std::to_string(live).c_str(), 1);
  setenv("FAKE_NCU_LINE_DELAY", "0.3", 1);  // long enough for a few probes
  unsetenv("KPROF_API_KEY");
  auto result = capture(recording("attach_1"),
                        guarded_attach(target.port(), server.url(), {"--guard-factor", "20"}));
  unsetenv("FAKE_NCU_LINE_DELAY");
  unsetenv("FAKE_NCU_TARGET_PID");
  kill(live, SIGKILL);
  waitpid(live, nullptr, 0);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json m = manifest(bundle());
  EXPECT_EQ(m["status"], "ok");
  EXPECT_EQ(m["progress"]["kernels_profiled"], 2);
  const nlohmann::json& service = m["service"];
  EXPECT_EQ(service["guard"]["fired"], false);
  EXPECT_TRUE(service["guard"]["why"].is_null());
  EXPECT_NE(service["guard"]["limit_from"].get<std::string>().find("--guard-factor 20"),
            std::string::npos);
  EXPECT_GE(service["latency"]["during"]["requests"].get<std::int64_t>(), 1);
  EXPECT_EQ(service["latency"]["during"]["errors"], 0);
  EXPECT_TRUE(service["restarts"].is_null());  // not Kubernetes: not known here
  EXPECT_TRUE(service["pod"].is_null());
  EXPECT_EQ(bundle_schema_violation(m), "");
}

// A guard needs a URL the operator gave.
TEST_F(Capture, TheGuardNeedsAUrl) {
  auto no_url = capture(recording("attach_1"),
                        {"--attach", "127.0.0.1", "-k", "k_alpha", "--guard-p99-ms", "100"});
  EXPECT_EQ(no_url.exit_code, 2);
  EXPECT_NE(no_url.err.find("--guard-url"), std::string::npos) << no_url.err;
  EXPECT_TRUE(ncu_calls().empty());  // refused before ncu was asked anything
}

// A limit under the service's own latency guards nothing: it would fire on the service's normal
// p99 (the first H100 guard check set 1500 ms against a baseline p99 of 2019 ms). kprof measures
// the baseline, says so, and never starts ncu: here each request takes at least 2 tokens x 40 ms.
TEST_F(Capture, AGuardLimitUnderTheBaselineIsRefusedBeforeNcuStarts) {
  FakeServer server(dir_ / "server", {"--fake-ms-per-token", "40"}, true);
  ASSERT_FALSE(server.url().empty());
  unsetenv("KPROF_API_KEY");
  auto result =
      capture(recording("attach_1"), {"--attach", "127.0.0.1", "-k", "k_alpha", "--guard-url",
                                      server.url(), "--guard-p99-ms", "30", "--guard-baseline", "2",
                                      "--prompt-len", "4", "--output-len", "2"});
  EXPECT_EQ(result.exit_code, 9) << result.err;  // not ready: docs/exit-codes.md
  EXPECT_NE(result.err.find("is already over the guard's limit of 30 ms (--guard-p99-ms 30)"),
            std::string::npos)
      << result.err;
  for (const nlohmann::json& call : ncu_calls()) {  // ncu asked its version, never to profile
    std::vector<std::string> argv = call["argv"];
    EXPECT_EQ(std::find(argv.begin(), argv.end(), "--export"), argv.end()) << call;
  }
  EXPECT_FALSE(fs::exists(bundle()));
}

// The same in the warm sequence (each request at least 2 tokens x 20 ms, the limit 5 ms): the
// sequence stops with its diagnosis before ncu profiles, and records what it did.
TEST_F(Capture, TheWarmSequenceStopsWhenTheGuardLimitIsUnderTheBaseline) {
  fs::path world = dir_ / "world";
  LaunchedTree tree(world);
  FakeServer server(dir_, {"--fake-ms-per-token", "20"});
  ASSERT_FALSE(server.url().empty());
  setenv("FAKE_NCU_WORLD", world.c_str(), 1);
  unsetenv("KPROF_API_KEY");
  auto result = capture(recording("attach_1"), {"--attach",
                                                "127.0.0.1",
                                                "--attach-process",
                                                "serve::engine",
                                                "--load-url",
                                                server.url(),
                                                "--warmup-requests",
                                                "2",
                                                "--load-concurrency",
                                                "1",
                                                "--prompt-len",
                                                "4",
                                                "--output-len",
                                                "2",
                                                "-k",
                                                "k_alpha",
                                                "--launch-count",
                                                "2",
                                                "--attach-timeout",
                                                "20",
                                                "--ready-timeout",
                                                "20",
                                                "--guard-p99-ms",
                                                "5",
                                                "--guard-baseline",
                                                "3"});
  unsetenv("FAKE_NCU_WORLD");
  EXPECT_NE(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("[guard_below_baseline]"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("ncu was not started"), std::string::npos) << result.err;
  int bundles = 0;  // the stopped sequence's own bundle
  for (const std::string& path : {bundle(), bundle() + ".incomplete"}) {
    if (!fs::exists(fs::path(path) / "manifest.json")) continue;
    ++bundles;
    nlohmann::json m = manifest(path);
    EXPECT_EQ(m["progress"]["kernels_profiled"], 0);
    std::vector<std::string> ids = diagnosis_ids(m);
    EXPECT_NE(std::find(ids.begin(), ids.end(), "guard_below_baseline"), ids.end())
        << m["diagnoses"];
  }
  EXPECT_EQ(bundles, 1) << result.err;
}

// A serving URL without a limit: the bill alone. The same stall that makes the guard fire above
// stops nothing here: both kernels are profiled once the server is let go, and the bill says what
// the capture cost — latency before, during (the stall among it) and after — with "guard" null.
TEST_F(Capture, AUrlWithoutALimitBillsTheCaptureAndNeverStopsIt) {
  FakeServer server(dir_ / "server", {"--fake-ms-per-token", "1"}, true);
  ASSERT_FALSE(server.url().empty());
  FakeTarget target;
  pid_t live = start_sleeper();
  setenv("FAKE_NCU_TARGET_PID", std::to_string(live).c_str(), 1);
  setenv("FAKE_NCU_STALL_PID", std::to_string(server.pid()).c_str(), 1);
  setenv("FAKE_NCU_STALL_S", "2", 1);
  unsetenv("KPROF_API_KEY");
  auto result = capture(recording("attach_1"), guarded_attach(target.port(), server.url(), {}));
  unsetenv("FAKE_NCU_STALL_PID");
  unsetenv("FAKE_NCU_STALL_S");
  unsetenv("FAKE_NCU_TARGET_PID");
  kill(live, SIGKILL);
  waitpid(live, nullptr, 0);
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("bill: baseline 3 of 3 requests completed"), std::string::npos)
      << result.err;
  EXPECT_EQ(result.err.find("stopping ncu"), std::string::npos) << result.err;
  nlohmann::json m = manifest(bundle());
  EXPECT_EQ(m["status"], "ok");
  EXPECT_EQ(m["progress"]["kernels_profiled"], 2);
  const nlohmann::json& service = m["service"];
  EXPECT_TRUE(service["guard"].is_null());
  EXPECT_EQ(service["url"], server.url());
  EXPECT_EQ(service["latency"]["before"]["completed"], 3);
  EXPECT_GE(service["latency"]["during"]["requests"].get<std::int64_t>(), 1);
  EXPECT_EQ(service["latency"]["after"]["completed"], 3);
  EXPECT_GE(service["longest_stall_ms"].get<double>(), 1000);  // the stall was seen, not acted on
  std::int64_t counted = service["latency"]["before"]["requests"].get<std::int64_t>() +
                         service["latency"]["during"]["requests"].get<std::int64_t>() +
                         service["latency"]["after"]["requests"].get<std::int64_t>();
  EXPECT_EQ(service["requests_sent"], counted);
  EXPECT_LE(static_cast<std::int64_t>(server.requests().size()), counted);
  EXPECT_TRUE(service["restarts"].is_null());
  EXPECT_TRUE(service["pod"].is_null());
  EXPECT_EQ(bundle_schema_violation(m), "");
}

// Issue 41: capture --trace plans the capture first and records the plan beside what happened.
TEST_F(Capture, APlannedCaptureRecordsItsPlanAndTheMeasuredNcuTime) {
  auto result = capture(recording("suite_triage"),
                        {"-k", "^k_", "-c", "2", "--trace",
                         std::string(KPROF_TESTS_DIR) + "/capture/data/plan_suite_trace.json",
                         "--ncu-version", "2025.3.1", "--", "./suite"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  nlohmann::json plan = manifest(bundle())["plan"];
  EXPECT_EQ(plan["capture"]["launch_count"], 2);
  EXPECT_EQ(plan["passes"], 14);
  EXPECT_GT(plan["measured_ncu_wall_s"].get<double>(), 0);
  // 3 s + 2 × 14 × (dram 300 us + 0.09 s): 5.53 s; both launches in the first step.
  EXPECT_NEAR(plan["predicted_ncu_wall_s"].get<double>(),
              3 + 14 * (300e-6 + 0.09) + 14 * (200e-6 + 0.09) + 0.00153, 0.01);
  EXPECT_NEAR(
      plan["error"].get<double>(),
      plan["measured_ncu_wall_s"].get<double>() / plan["predicted_ncu_wall_s"].get<double>() - 1,
      0.002);
  EXPECT_EQ(bundle_schema_violation(manifest(bundle())), "");
  // Over a limit, nothing runs.
  auto over = testing::run_process(
      {KPROF_BINARY, "capture", "-o", bundle() + "-over", "-k", "^k_", "-c", "2", "--trace",
       std::string(KPROF_TESTS_DIR) + "/capture/data/plan_suite_trace.json", "--slo-p99-ms", "500",
       "--", "./suite"});
  EXPECT_EQ(over.exit_code, 14) << over.err;
  EXPECT_NE(over.err.find("OVER"), std::string::npos) << over.err;
  EXPECT_FALSE(fs::exists(bundle() + "-over"));
}

// --budget makes kprof run the capture the plan chose: two launches of the fixture's first step
// stall it 2 × 14 × 0.0903 s = 2.5 s, over --slo-p99-ms 1500; one (1.26 s) fits, and ncu is asked
// for one.
TEST_F(Capture, ABudgetRunsTheCaptureThePlanChose) {
  auto result = capture(recording("suite_triage"),
                        {"-k", "^k_", "-c", "2", "--trace",
                         std::string(KPROF_TESTS_DIR) + "/capture/data/plan_suite_trace.json",
                         "--slo-p99-ms", "1500", "--budget", "60", "--", "./suite"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("--budget chose --preset triage -k '^k_' --launch-count 1 (fewer "
                            "launches)"),
            std::string::npos)
      << result.err;
  std::vector<std::string> argv = ncu_calls()[1]["argv"];
  auto count = std::find(argv.begin(), argv.end(), "--launch-count");
  ASSERT_NE(count, argv.end());
  EXPECT_EQ(*(count + 1), "1");
  nlohmann::json plan = manifest(bundle())["plan"];
  EXPECT_EQ(plan["chosen"], true);
  EXPECT_EQ(plan["capture"]["launch_count"], 1);
  EXPECT_EQ(plan["over_limits"], nlohmann::json({"slo_p99"}));
}

// The guard in the warm sequence: its baseline once the load flows, then the engine's server
// stalls under the stand-in ncu after the first kernel; the guard stops the capture, the bundle
// keeps the load block beside the bill.
TEST_F(Capture, TheWarmSequencesGuardStopsACaptureThatStallsTheServer) {
  fs::path world = dir_ / "world";
  LaunchedTree tree(world);
  FakeServer server(dir_, {"--fake-ms-per-token", "1"});
  ASSERT_FALSE(server.url().empty());
  setenv("FAKE_NCU_WORLD", world.c_str(), 1);
  setenv("FAKE_NCU_STALL_PID", std::to_string(server.pid()).c_str(), 1);
  setenv("FAKE_NCU_STALL_S", "30", 1);
  unsetenv("KPROF_API_KEY");
  auto result = capture(recording("attach_1"), {"--attach",
                                                "127.0.0.1",
                                                "--attach-process",
                                                "serve::engine",
                                                "--load-url",
                                                server.url(),
                                                "--warmup-requests",
                                                "4",
                                                "--load-concurrency",
                                                "2",
                                                "--prompt-len",
                                                "4",
                                                "--output-len",
                                                "2",
                                                "-k",
                                                "k_alpha",
                                                "--launch-count",
                                                "2",
                                                "--preset",
                                                "basic",
                                                "--timeout",
                                                "60",
                                                "--attach-timeout",
                                                "20",
                                                "--ready-timeout",
                                                "20",
                                                "--guard-factor",
                                                "10",
                                                "--guard-p99-ms",
                                                "1500",
                                                "--guard-interval",
                                                "0.2",
                                                "--guard-baseline",
                                                "3"});
  unsetenv("FAKE_NCU_WORLD");
  unsetenv("FAKE_NCU_STALL_PID");
  unsetenv("FAKE_NCU_STALL_S");
  EXPECT_EQ(result.exit_code, 8) << result.err;
  ASSERT_TRUE(fs::exists(bundle() + ".incomplete")) << result.err;
  nlohmann::json m = manifest(bundle() + ".incomplete");
  EXPECT_EQ(m["incomplete_reason"], "guard");
  EXPECT_EQ(m["progress"]["kernels_profiled"], 1);
  EXPECT_EQ(m["service"]["guard"]["fired"], true);
  EXPECT_EQ(m["service"]["url"], server.url());  // the load's URL: no --guard-url given
  EXPECT_EQ(m["service"]["latency"]["before"]["completed"], 3);
  EXPECT_TRUE(m["load"].is_object());
  EXPECT_EQ(bundle_schema_violation(m), "");
}

}  // namespace
}  // namespace kprof
