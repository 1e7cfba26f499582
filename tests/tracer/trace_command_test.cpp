// kprof trace and kprof doctor's CUPTI checks, run as the user runs them: the real kprof, the
// real libkprof_tracer.so, and for a "CUDA program" fake_app over fake_cupti (a libcupti.so.13
// stand-in). Expected counts come from the scripts fake_app is given (launches, steps), not from
// kprof's code.
#include <gtest/gtest.h>
#include <signal.h>

#include <algorithm>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <thread>

#include "capture/tracer_run.h"
#include "common/child_process.h"
#include "support/run_process.h"
#include "tracer/trace_file.h"

namespace kprof::tracer {
namespace {

namespace fs = std::filesystem;
using Env = std::vector<std::pair<std::string, std::string>>;

class TraceCommand : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kprof-trace-cli-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    out_ = dir_ + "/traces";
  }
  void TearDown() override { fs::remove_all(dir_); }

  kprof::ChildResult kprof(std::vector<std::string> args, Env env = {}) {
    kprof::ChildRequest request;
    request.argv = {KPROF_BINARY};
    request.argv.insert(request.argv.end(), args.begin(), args.end());
    request.env = std::move(env);
    request.timeout = std::chrono::seconds(60);
    return kprof::run_child(request);
  }
  // kprof trace into out_ with the built library, running fake_app with this script.
  kprof::ChildResult trace(std::vector<std::string> options, std::vector<std::string> script,
                           Env env = {}) {
    std::vector<std::string> args = {"trace", "-o", out_, "--tracer-lib", KPROF_TRACER_LIBRARY};
    args.insert(args.end(), options.begin(), options.end());
    args.insert(args.end(), {"--", KPROF_FAKE_APP, KPROF_TRACER_LIBRARY, "--"});
    args.insert(args.end(), script.begin(), script.end());
    return kprof(args, std::move(env));
  }
  std::vector<std::string> files(const std::string& dir) const {
    std::vector<std::string> names;
    for (const auto& e : fs::directory_iterator(dir)) names.push_back(e.path().string());
    std::sort(names.begin(), names.end());
    return names;
  }

  std::string dir_, out_;
};

size_t occurrences(const std::string& text, const std::string& part) {
  size_t count = 0;
  for (size_t at = text.find(part); at != std::string::npos; at = text.find(part, at + 1)) ++count;
  return count;
}

bool alive(pid_t pid) {
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

TEST_F(TraceCommand, TracesAProgramListsItsFileAndRanksIt) {
  // 4 steps of 3 kernels (k_alpha, k_beta, k_gamma): 4 launches of each.
  auto result = trace({}, {"init", "wait:on", "steps:4"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::string> written = files(out_);
  ASSERT_EQ(written.size(), 1u) << result.err;
  EXPECT_NE(result.out.find("1 trace file in " + out_ + ":\n  " + written[0] + "  pid "),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.out.find("stopped by process exit"), std::string::npos) << result.out;
  // The ranking of that file: each kernel name with its 4 launches.
  for (const char* name : {"k_alpha", "k_beta", "k_gamma"}) {
    EXPECT_NE(result.out.find(name), std::string::npos) << result.out;
  }
  std::istringstream lines(result.out);
  int ranked = 0;
  for (std::string line; std::getline(lines, line);) {
    if (line.find("k_gamma") != std::string::npos) {
      std::istringstream fields(line);
      std::vector<std::string> words;
      for (std::string w; fields >> w;) words.push_back(w);
      EXPECT_NE(std::find(words.begin(), words.end(), "4"), words.end()) << line;
      ++ranked;
    }
  }
  EXPECT_EQ(ranked, 1) << result.out;
  // The program's and the tracer's lines went to stderr, kprof's result alone to stdout.
  EXPECT_NE(result.err.find("kprof-tracer: pid "), std::string::npos);
  EXPECT_EQ(result.out.find("kprof-tracer:"), std::string::npos);
  EXPECT_NE(result.err.find("kprof: traced in "), std::string::npos) << result.err;
}

TEST_F(TraceCommand, NoRankListsOnly) {
  auto result = trace({"--no-rank"}, {"init", "wait:on", "steps:1"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_EQ(result.out.find("k_alpha"), std::string::npos) << result.out;
  EXPECT_EQ(occurrences(result.out, ".json.gz"), 1u) << result.out;
}

TEST_F(TraceCommand, ArgvAndEnvironmentReachTheProgramExactlyAndNoShellRuns) {
  std::string marker = dir_ + "/shell-ran";
  // Prints what it got, as JSON, on stdout (which kprof hands on to its stderr).
  std::string script =
      "import json,os,sys\n"
      "keys=('KPROF_TRACE_','CUDA_INJECTION64_PATH','NVTX_INJECTION64_PATH','FOO')\n"
      "print(json.dumps({'argv':sys.argv[1:],"
      "'env':{k:v for k,v in os.environ.items() if k.startswith(keys)}}))\n";
  std::vector<std::string> odd = {"a b", "$(touch " + marker + ")", ";", "'\"", "--", "-o"};
  std::vector<std::string> args = {
      "trace",   "-o",           out_,      "--tracer-lib", KPROF_TRACER_LIBRARY,
      "--env",   "FOO=bar baz",  "--delay", "2.5",          "--duration",
      "7",       "--max-events", "1234",    "--no-rank",    "--",
      "python3", "-c",           script};
  args.insert(args.end(), odd.begin(), odd.end());
  // Settings in kprof's own environment must not leak into the tracer's.
  auto result =
      kprof(args, {{"KPROF_TRACE_CONTROL", "/tmp/elsewhere"}, {"KPROF_TRACE_START", "on-control"}});
  EXPECT_EQ(result.exit_code, 7) << result.err;  // python3 uses no CUDA: nothing traced
  EXPECT_TRUE(result.out.empty() || result.out.find("0 trace files") == 0) << result.out;
  nlohmann::json seen;
  std::istringstream lines(result.err);
  for (std::string line; std::getline(lines, line);) {
    if (!line.empty() && line[0] == '{') seen = nlohmann::json::parse(line);
  }
  ASSERT_TRUE(seen.is_object()) << result.err;
  EXPECT_EQ(seen["argv"].get<std::vector<std::string>>(), odd);
  EXPECT_FALSE(fs::exists(marker));
  const auto& env = seen["env"];
  EXPECT_EQ(env["CUDA_INJECTION64_PATH"], KPROF_TRACER_LIBRARY);
  EXPECT_EQ(env["NVTX_INJECTION64_PATH"], KPROF_TRACER_LIBRARY);
  EXPECT_EQ(env["KPROF_TRACE_DIR"], fs::path(out_).lexically_normal().string());
  EXPECT_EQ(env["KPROF_TRACE_START"], "now");
  EXPECT_EQ(env["KPROF_TRACE_DELAY_S"], "2.5");
  EXPECT_EQ(env["KPROF_TRACE_DURATION_S"], "7");
  EXPECT_EQ(env["KPROF_TRACE_MAX_EVENTS"], "1234");
  EXPECT_EQ(env["KPROF_TRACE_CONTROL"], "");  // set empty: the tracer reads it as unset
  EXPECT_EQ(env["FOO"], "bar baz");
  EXPECT_NE(result.err.find("no trace file was written"), std::string::npos) << result.err;
}

TEST_F(TraceCommand, OnControlOpensAWindowOnlyWhenTheControlFileSaysStart) {
  // The program itself writes the control file (as an operator's `echo start > FILE` would).
  auto result =
      trace({"--start", "on-control"}, {"init", "launch:5", "control:start", "wait:on", "launch:3",
                                        "control:stop", "wait:off", "launch:2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.err.find("echo start > " + out_ + "/control"), std::string::npos) << result.err;
  EXPECT_NE(result.out.find("stopped by control file"), std::string::npos) << result.out;
  // Only the 3 launches inside the window are ranked.
  std::istringstream lines(result.out);
  for (std::string line; std::getline(lines, line);) {
    if (line.find("k_alpha") != std::string::npos) {
      EXPECT_NE(line.find(" 3 "), std::string::npos) << line;  // launch:N launches k_alpha
    }
  }
}

TEST_F(TraceCommand, DropsTheTracerReportsAreShown) {
  // 100 launches: 200 records (kernel + launch call); the window closes at 50 events.
  auto result =
      trace({"--max-events", "50", "--no-rank"}, {"init", "wait:on", "launch:100", "wait:off"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("50 events, stopped by event cap; DROPPED: 150 records over the cap "
                            "of 50 events"),
            std::string::npos)
      << result.out;
  EXPECT_NE(result.err.find("kprof: warning: the tracer dropped records in pid "),
            std::string::npos)
      << result.err;
}

TEST_F(TraceCommand, EveryProcessOfTheProgramGetsItsOwnFile) {
  // A launcher starting two CUDA programs one after the other (spawned, not forked).
  auto result =
      kprof({"trace", "-o", out_ + "/", "--tracer-lib", KPROF_TRACER_LIBRARY, "--", "python3", "-c",
             "import subprocess,sys\n"
             "for _ in range(2): subprocess.run(sys.argv[1:], check=True)\n",
             KPROF_FAKE_APP, KPROF_TRACER_LIBRARY, "--", "init", "wait:on", "steps:2"});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  std::vector<std::string> written = files(out_);
  ASSERT_EQ(written.size(), 2u) << result.err;
  EXPECT_NE(result.out.find("2 trace files in "), std::string::npos) << result.out;
  for (const std::string& file : written) {
    EXPECT_NE(result.out.find(file + "  pid "), std::string::npos) << result.out;
  }
  EXPECT_EQ(occurrences(result.out, "k_beta"), 2u) << result.out;  // one ranking per file
}

TEST_F(TraceCommand, TimeoutStopsTheWholeProcessGroup) {
  std::string pidfile = dir_ + "/grandchild.pid";
  // The program is a shell, not Python: on a loaded machine (CI's two cores running two tests)
  // Python's start-up alone took longer than the 1-second timeout, which then stopped it before
  // it had started the child this test is about.
  auto result = kprof({"trace", "-o", out_, "--tracer-lib", KPROF_TRACER_LIBRARY, "--timeout", "1",
                       "--", "sh", "-c", "sleep 60 & echo $! > \"$1\"; sleep 60", "sh", pidfile});
  EXPECT_EQ(result.exit_code, 8) << result.err;
  EXPECT_NE(result.err.find("ran past --timeout 1 s"), std::string::npos) << result.err;
  pid_t grandchild = wait_for_pid(pidfile);
  ASSERT_GT(grandchild, 0);
  for (int i = 0; i < 100 && alive(grandchild); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(alive(grandchild)) << "the program's child outlived the timeout";
}

TEST_F(TraceCommand, CtrlCStopsTheWholeProcessGroupAndListsWhatWasWritten) {
  std::string pidfile = dir_ + "/grandchild.pid";
  kprof::ChildRequest request;
  request.argv = {KPROF_BINARY,
                  "trace",
                  "-o",
                  out_,
                  "--tracer-lib",
                  KPROF_TRACER_LIBRARY,
                  "--",
                  "python3",
                  "-c",
                  "import subprocess,sys,time\n"
                  "p=subprocess.Popen(['sleep','60'])\n"
                  "open(sys.argv[1],'w').write(str(p.pid))\n"
                  "time.sleep(60)\n",
                  pidfile};
  request.timeout = std::chrono::seconds(60);
  // kprof may take its own grace (SIGKILL 5 s after SIGINT) and 2 s more for the pipes before
  // it exits: the test waits well past that before it kills kprof, so a loaded machine is not
  // read as kprof ignoring Ctrl-C.
  request.grace = std::chrono::seconds(30);
  // SIGINT to kprof (as a terminal's Ctrl-C would) once the program runs.
  request.on_tick = [&] { return fs::exists(pidfile); };
  kprof::ChildResult result = kprof::run_child(request);
  EXPECT_EQ(result.exit_code, 8) << result.err;
  EXPECT_NE(result.err.find("interrupted"), std::string::npos) << result.err;
  EXPECT_NE(result.out.find("0 trace files in "), std::string::npos) << result.out;
  pid_t grandchild = wait_for_pid(pidfile);
  ASSERT_GT(grandchild, 0);
  for (int i = 0; i < 100 && alive(grandchild); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(alive(grandchild));
}

// Issue 27 item 16: a closed terminal (SIGHUP) stops the traced program's whole process group,
// as Ctrl-C does; before, kprof died and the program ran on.
TEST_F(TraceCommand, AHangUpStopsTheTracedProgram) {
  std::string pidfile = dir_ + "/hangup.pid";
  auto result = kprof::testing::run_process_signalled(
      {KPROF_BINARY, "trace", "-o", out_, "--tracer-lib", KPROF_TRACER_LIBRARY, "--", "python3",
       "-c",
       "import subprocess,sys,time\n"
       "p=subprocess.Popen(['sleep','60'])\n"
       "open(sys.argv[1],'w').write(str(p.pid))\n"
       "time.sleep(60)\n",
       pidfile},
      [&] { return fs::exists(pidfile); }, SIGHUP);
  EXPECT_EQ(result.exit_code, 8) << result.err;
  pid_t grandchild = wait_for_pid(pidfile);
  ASSERT_GT(grandchild, 0);
  for (int i = 0; i < 100 && alive(grandchild); ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  EXPECT_FALSE(alive(grandchild)) << "the traced program outlived kprof's hang-up";
}

TEST_F(TraceCommand, AMissingLibraryIsNotReadyAndNothingRuns) {
  std::string marker = dir_ + "/ran";
  auto result = kprof(
      {"trace", "-o", out_, "--tracer-lib", dir_ + "/libkprof_tracer.so", "--", "touch", marker});
  EXPECT_EQ(result.exit_code, 9);
  EXPECT_TRUE(result.out.empty());
  EXPECT_NE(result.err.find("libkprof_tracer.so not found (looked at " + dir_ +
                            "/libkprof_tracer.so (--tracer-lib))"),
            std::string::npos)
      << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
  EXPECT_FALSE(fs::exists(marker));
  EXPECT_FALSE(fs::exists(out_));
}

TEST_F(TraceCommand, ACuptiOlderThan13IsNotReady) {
  // kprof finds the stand-in first on LD_LIBRARY_PATH and asks it its version.
  std::string marker = dir_ + "/ran";
  auto result =
      kprof({"trace", "-o", out_, "--tracer-lib", KPROF_TRACER_LIBRARY, "--", "touch", marker},
            {{"LD_LIBRARY_PATH", KPROF_FAKE_CUPTI_DIR}, {"FAKE_CUPTI_VERSION", "120000"}});
  EXPECT_EQ(result.exit_code, 9) << result.err;
  EXPECT_NE(result.err.find(std::string(KPROF_FAKE_CUPTI_DIR) +
                            "/libcupti.so.13 is CUPTI 12.0, older than the 13.0"),
            std::string::npos)
      << result.err;
  EXPECT_FALSE(fs::exists(marker));
}

TEST_F(TraceCommand, UsageErrorsComeBeforeAnythingIsLookedFor) {
  auto delay = kprof({"trace", "-o", out_, "--tracer-lib", "/nonexistent", "--start", "on-control",
                      "--delay", "3", "--", "true"});
  EXPECT_EQ(delay.exit_code, 2) << delay.err;
  EXPECT_NE(delay.err.find("--delay applies to --start now"), std::string::npos) << delay.err;
  auto env = kprof({"trace", "--env", "NOEQUALS", "--", "true"});
  EXPECT_EQ(env.exit_code, 2);
  auto cap = kprof({"trace", "--max-events", "0", "--", "true"});
  EXPECT_EQ(cap.exit_code, 2);
  auto nothing = kprof({"trace"});
  EXPECT_EQ(nothing.exit_code, 2);
  EXPECT_FALSE(fs::exists(out_));
}

// The tracer's own line formatter against kprof's parser of it.
TEST(TraceWindowLine, ParsesWhatTheTracerPrints) {
  TraceHeader header;
  header.pid = 4242;
  header.window = 3;
  WindowSummary summary;
  summary.stop_reason = "control file";
  summary.counts.events = 52311;
  summary.max_events = 100;
  summary.cupti_dropped = 7;
  summary.counts.over_cap = 9;
  std::string path = "/tmp/odd: dir/kprof-trace.h.4242.3.json.gz";
  auto parsed = capture::parse_window_line("kprof-tracer: " + summary_line(path, header, summary));
  ASSERT_TRUE(parsed.has_value());
  EXPECT_EQ(parsed->pid, 4242);
  EXPECT_EQ(parsed->window, 3u);
  EXPECT_EQ(parsed->stop_reason, "control file");
  EXPECT_EQ(parsed->path, path);
  EXPECT_EQ(parsed->events, 52311u);
  EXPECT_EQ(parsed->dropped,
            "7 records dropped by CUPTI, 9 records over the cap of 100 events "
            "(KPROF_TRACE_MAX_EVENTS)");
  WindowSummary clean;
  clean.stop_reason = "process exit";
  clean.counts.events = 5;
  auto quiet = capture::parse_window_line("kprof-tracer: " + summary_line(path, header, clean));
  ASSERT_TRUE(quiet.has_value());
  EXPECT_TRUE(quiet->dropped.empty());
  EXPECT_FALSE(
      capture::parse_window_line("kprof-tracer: CUDA_INJECTION64_PATH names x").has_value());
}

TEST_F(TraceCommand, DoctorReportsTheCuptiVersionItLoaded) {
  auto result = kprof({"doctor", "--json"}, {{"LD_LIBRARY_PATH", KPROF_FAKE_CUPTI_DIR}});
  nlohmann::json doc = nlohmann::json::parse(result.out);
  nlohmann::json cupti;
  for (const auto& check : doc["checks"]) {
    if (check["check"] == "CUPTI") cupti = check;
  }
  ASSERT_TRUE(cupti.is_object()) << result.out;
  EXPECT_EQ(cupti["status"], "ok");
  EXPECT_EQ(cupti["detail"].get<std::string>().find(std::string(KPROF_FAKE_CUPTI_DIR) +
                                                    "/libcupti.so.13: CUPTI 13.0"),
            0u)
      << cupti;

  auto old = kprof({"doctor", "--json"},
                   {{"LD_LIBRARY_PATH", KPROF_FAKE_CUPTI_DIR}, {"FAKE_CUPTI_VERSION", "120100"}});
  nlohmann::json old_doc = nlohmann::json::parse(old.out);  // kept: the loop reads into it
  for (const auto& check : old_doc["checks"]) {
    if (check["check"] != "CUPTI") continue;
    EXPECT_EQ(check["status"], "warning");
    EXPECT_NE(check["detail"].get<std::string>().find("CUPTI 12.1 (API version 120100), older"),
              std::string::npos)
        << check;
  }
}

TEST_F(TraceCommand, DoctorSaysWhoHoldsTheInjectionSlot) {
  struct Case {
    const char* path;
    const char* owner;
  };
  for (Case c :
       {Case{"/opt/nvidia/nsight-systems/2025.3.1/target-linux-x64/libToolsInjection64.so",
             "Nsight Systems (nsys)"},
        Case{"/opt/nvidia/nsight-compute/2025.3.1/target/linux-desktop-glibc_2_11_3-x64/"
             "libTreeLauncherTargetInjection.so",
             "Nsight Compute (ncu)"},
        Case{KPROF_TRACER_LIBRARY, "kprof's tracer"},
        Case{"/opt/profiler/libinject.so", "another profiler or tracer, not recognised"}}) {
    auto result = kprof({"doctor", "--json"}, {{"CUDA_INJECTION64_PATH", c.path}});
    bool seen = false;
    nlohmann::json doc = nlohmann::json::parse(result.out);  // kept: the loop reads into it
    for (const auto& check : doc["checks"]) {
      if (check["check"] != "CUDA_INJECTION64_PATH") continue;
      seen = true;
      EXPECT_EQ(check["status"], "warning");
      EXPECT_NE(check["detail"].get<std::string>().find(std::string(c.path) + " (" + c.owner),
                std::string::npos)
          << check;
    }
    EXPECT_TRUE(seen) << result.out;
  }
}

}  // namespace
}  // namespace kprof::tracer
