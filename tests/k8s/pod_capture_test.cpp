// The shell kprof runs inside a pod, run for real: a kubectl stand-in that executes what follows
// `--` on this machine, so the attach wrapper, the stop file and the /proc reader are the very
// scripts a pod gets (the API-server stand-in of k8s_test.py only plays their effects).
#include "k8s/pod_capture.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "capture/attach_targets.h"
#include "k8s/port_forward.h"

namespace kprof::k8s {
namespace {
namespace fs = std::filesystem;

class PodScripts : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::path(::testing::TempDir()) / ("kprof-pod-scripts-" + std::to_string(getpid()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    write_executable("kubectl",
                     "#!/bin/sh\n"
                     "while [ $# -gt 0 ] && [ \"$1\" != \"--\" ]; do shift; done\n"
                     "shift\n"
                     "exec \"$@\"\n");
    // ncu's attach client as the wrapper sees it. `ncu` is a shell script that runs the real one
    // as its child, as Nsight Compute's is (a SIGINT to the script alone leaves it attached); the
    // real one is connected, then attached until SIGINT, and keeps SIGINT's disposition as it
    // found it, as Python does (a background job of sh starts with SIGINT ignored).
    write_executable(
        "ncu-binary",
        "#!/usr/bin/env python3\n"
        "import sys, time\n"
        "print('==PROF== Connected to process 4242 (/usr/bin/python3.12)', flush=True)\n"
        "if len(sys.argv) > 1:\n"
        "    open(sys.argv[1] + '.ncu-rep', 'wb').write(b'NVR\\0report')\n"
        "try:\n"
        "    time.sleep(120)\n"
        "except KeyboardInterrupt:\n"
        "    print('==PROF== Disconnected', flush=True)\n"
        "    sys.exit(130)\n"
        "sys.exit(0)\n");
    write_executable("ncu", "#!/bin/sh\n\"$(dirname \"$0\")/ncu-binary\" \"$@\"\n");
  }
  void TearDown() override { fs::remove_all(dir_); }

  void write_executable(const std::string& name, const std::string& text) {
    std::ofstream(dir_ / name) << text;
    chmod((dir_ / name).c_str(), 0755);
  }
  Kubectl kubectl() const { return Kubectl((dir_ / "kubectl").string(), "", ""); }
  PodPlacement where() const {
    PodPlacement placement;
    placement.method = "sister";
    placement.namespace_name = "serving";
    placement.pod = "llama-pod";
    placement.container = "server";
    return placement;
  }

  fs::path dir_;
};

TEST_F(PodScripts, AHoldEndsWhenKprofWritesTheStopFile) {
  Kubectl k = kubectl();
  std::string report = (dir_ / "hold-1").string();
  std::atomic<bool> connected{false}, release{false};
  ChildRequest request;
  request.argv = {(dir_ / "ncu").string()};
  request.on_line = [&](const std::string& line, bool) {
    if (line.rfind("==PROF== Connected to process 4242", 0) == 0) connected = true;
    return false;
  };
  request.on_tick = [&] { return release.load(); };
  ChildResult result;
  std::thread client([&] { result = run_attach_client(k, where(), report, request, nullptr); });
  for (int i = 0; i < 100 && !connected; ++i)
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ASSERT_TRUE(connected);
  // Still attached a while later: only the stop file ends it.
  std::this_thread::sleep_for(std::chrono::milliseconds(1500));
  EXPECT_FALSE(fs::exists(report + ".stop"));
  auto asked = std::chrono::steady_clock::now();
  release = true;
  client.join();
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - asked).count();
  EXPECT_TRUE(fs::exists(report + ".stop"));
  // ncu got SIGINT from inside the "pod" and exited 130, long before the grace runs out.
  EXPECT_EQ(result.exit_code, 130) << result.combined;
  EXPECT_TRUE(result.stop_requested);
  EXPECT_NE(result.combined.find("==PROF== Disconnected"), std::string::npos) << result.combined;
  EXPECT_LT(took, 10.0);
}

TEST_F(PodScripts, ACaptureDetachesOnceTheReportIsWritten) {
  Kubectl k = kubectl();
  std::string report = (dir_ / "capture-1").string();
  ChildRequest request;
  request.argv = {(dir_ / "ncu").string(), report};
  std::vector<std::string> exec;
  ChildResult result = run_attach_client(k, where(), report, request, &exec);
  EXPECT_EQ(result.exit_code, 130) << result.combined;
  EXPECT_TRUE(result.stop_requested);
  EXPECT_TRUE(fs::exists(report + ".ncu-rep"));
  EXPECT_FALSE(fs::exists(report + ".stop"));
  // The exec as kubectl gets it: the report path and ncu's argv as parameters of the script.
  ASSERT_GE(exec.size(), 12u);
  EXPECT_EQ(
      std::vector<std::string>(exec.begin(), exec.begin() + 8),
      (std::vector<std::string>{"exec", "-n", "serving", "llama-pod", "-c", "server", "--", "sh"}));
  EXPECT_EQ(exec[10], "kprof-attach");
  EXPECT_EQ(exec[11], report);
}

// --timeout ends a capture in the pod the way a detach does (the stop file, SIGINT there), and
// says it timed out: no ncu is left attached to the server.
TEST_F(PodScripts, ATimeoutDetachesInThePodAndSaysSo) {
  Kubectl k = kubectl();
  std::string report = (dir_ / "capture-2").string();
  ChildRequest request;
  request.argv = {(dir_ / "ncu").string()};
  request.timeout = std::chrono::milliseconds(1500);
  auto began = std::chrono::steady_clock::now();
  ChildResult result = run_attach_client(k, where(), report, request, nullptr);
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
  EXPECT_TRUE(result.timed_out);
  EXPECT_FALSE(result.stop_requested);
  EXPECT_TRUE(fs::exists(report + ".stop"));
  EXPECT_NE(result.combined.find("==PROF== Disconnected"), std::string::npos) << result.combined;
  EXPECT_LT(took, 10.0);
}

TEST_F(PodScripts, AProcessOfThePodReadsAsThisMachinesProcReadsIt) {
  // A child with a command line of several words, one of them a script of two lines, as
  // `python3 -c` gets (not this test: under an emulator its /proc entry is the emulator's, which
  // this process reads translated and a shell reads raw). Its own process group: the sleep it
  // starts ends with it.
  const std::string expected = "sh -c sleep 30 exit 0";
  pid_t child = fork();
  if (child == 0) {
    setpgid(0, 0);
    execlp("sh", "sh", "-c", "sleep 30\nexit 0", static_cast<char*>(nullptr));
    _exit(127);
  }
  ASSERT_GT(child, 0);
  std::optional<capture::LaunchedProcess> here;
  for (int i = 0; i < 100 && (!here || here->command_line != expected); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
    here = capture::describe_process(child);
  }
  Kubectl k = kubectl();
  PodProcess there = describe_pod_process(k, where(), child);
  kill(-child, SIGKILL);
  waitpid(child, nullptr, 0);
  ASSERT_TRUE(here);
  ASSERT_TRUE(there.process);
  EXPECT_FALSE(there.zombie);
  EXPECT_FALSE(there.gone);
  EXPECT_EQ(there.process->pid, child);
  EXPECT_EQ(here->command_line, expected);  // the newline a space, here as there
  EXPECT_EQ(there.process->command_line, here->command_line);
  EXPECT_EQ(there.process->thread_names, here->thread_names);
  // Gone now, which is not the same as not knowing (a kubectl that cannot exec).
  PodProcess gone = describe_pod_process(k, where(), child);
  EXPECT_TRUE(gone.gone);
  EXPECT_FALSE(gone.process);
  PodProcess unknown = describe_pod_process(Kubectl("/nonexistent/kubectl", "", ""), where(), 1);
  EXPECT_FALSE(unknown.gone);
  EXPECT_FALSE(unknown.process);
}

TEST(PortForwardLine, TheLocalPortComesFromKubectlsForwardingLine) {
  // kubectl 1.33's lines, as `kubectl port-forward --address 127.0.0.1 pod/P 0:8000` prints them.
  EXPECT_EQ(forwarded_local_port("Forwarding from 127.0.0.1:43933 -> 8000"), 43933);
  EXPECT_EQ(forwarded_local_port("Handling connection for 43933"), std::nullopt);
  EXPECT_EQ(forwarded_local_port("Forwarding from [::1]:43933 -> 8000"), std::nullopt);
  EXPECT_EQ(forwarded_local_port("Forwarding from 127.0.0.1:0 -> 8000"), std::nullopt);
  EXPECT_EQ(forwarded_local_port("Forwarding from 127.0.0.1:99999 -> 8000"), std::nullopt);
}

}  // namespace
}  // namespace kprof::k8s
