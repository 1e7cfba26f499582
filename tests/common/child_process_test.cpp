// Running a child from an argv in its own process group: output, exit status, line callbacks,
// and a timeout that stops the whole group (grandchildren included).
#include "common/child_process.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <thread>

#include "support/test_data.h"

namespace kprof {
namespace {

ChildRequest request(std::vector<std::string> argv) {
  ChildRequest r;
  r.argv = std::move(argv);
  return r;
}

bool alive(pid_t pid) { return kill(pid, 0) == 0 || errno != ESRCH; }

TEST(ChildProcess, CapturesOutputAndExitStatus) {
  std::vector<std::string> lines;
  ChildRequest r = request({"sh", "-c", "echo one; echo two >&2; printf three; exit 3"});
  r.on_line = [&](const std::string& line, bool from_stderr) {
    lines.push_back((from_stderr ? "err:" : "out:") + line);
    return false;
  };
  ChildResult result = run_child(r);
  ASSERT_TRUE(result.started);
  EXPECT_EQ(result.exit_code, 3);
  EXPECT_EQ(result.out, "one\nthree");
  EXPECT_EQ(result.err, "two\n");
  EXPECT_EQ(lines.size(), 3u);
  EXPECT_NE(std::find(lines.begin(), lines.end(), "out:three"), lines.end());
}

TEST(ChildProcess, ArgumentsAreNeverInterpretedByAShell) {
  ChildResult result = run_child(request({"printf", "%s|", "a b", "$(echo hi)", "x;y", "'q'"}));
  EXPECT_EQ(result.out, "a b|$(echo hi)|x;y|'q'|");
}

TEST(ChildProcess, EnvironmentIsAddedForTheChildOnly) {
  ChildRequest r = request({"sh", "-c", "printf %s \"$KPROF_CHILD_TEST\""});
  r.env = {{"KPROF_CHILD_TEST", "v=1 2"}};
  EXPECT_EQ(run_child(r).out, "v=1 2");
  EXPECT_EQ(getenv("KPROF_CHILD_TEST"), nullptr);
}

TEST(ChildProcess, MissingProgramIsReportedNotThrown) {
  if (testing::emulated())
    GTEST_SKIP() << "qemu-user runs posix_spawn's vfork as a fork: the failed exec reaches the "
                    "caller as exit 127, not as spawn's error";
  ChildResult result = run_child(request({"/nonexistent/kprof-no-such-program"}));
  EXPECT_FALSE(result.started);
  EXPECT_FALSE(result.start_error.empty());
}

TEST(ChildProcess, TimeoutStopsTheWholeProcessGroup) {
  std::string pidfile = ::testing::TempDir() + "/grandchild-" + std::to_string(getpid());
  ChildRequest r = request({"sh", "-c", "sleep 100 & echo $! > " + pidfile + "; wait"});
  r.timeout = std::chrono::milliseconds(500);
  r.grace = std::chrono::milliseconds(1000);
  ChildResult result = run_child(r);
  EXPECT_TRUE(result.timed_out);
  EXPECT_NE(result.exit_code, 0);
  std::ifstream in(pidfile);
  pid_t grandchild = 0;
  in >> grandchild;
  ASSERT_GT(grandchild, 0);
  for (int i = 0; i < 50 && alive(grandchild); ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_FALSE(alive(grandchild)) << "the grandchild survived the timeout";
  std::filesystem::remove(pidfile);
}

TEST(ChildProcess, LineCallbackCanAskForAStop) {
  ChildRequest r = request({"sh", "-c", "echo ready; exec sleep 100"});
  r.on_line = [](const std::string& line, bool) { return line == "ready"; };
  ChildResult result = run_child(r);
  EXPECT_TRUE(result.stop_requested);
  EXPECT_FALSE(result.timed_out);
  EXPECT_EQ(result.signal, SIGINT);
  EXPECT_LT(result.elapsed.count(), 10000);
}

}  // namespace
}  // namespace kprof
