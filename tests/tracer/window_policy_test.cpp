// Windows: delay, duration, control-file commands, the cap and the exit; and how the control
// file is read (one command per write, the first poll honouring what is already there).
#include "tracer/window_policy.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <sys/stat.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>

#include "tracer/control_file.h"

namespace kprof::tracer {
namespace {

using Action = WindowDecision::Action;
constexpr ControlCommand kNone = ControlCommand::kNone;

TEST(WindowPolicy, FirstWindowOpensAfterTheDelayAndOnlyOnce) {
  WindowPolicy policy(StartMode::kNow, 2.0, 0);
  EXPECT_EQ(policy.step(0.0, kNone, false).action, Action::kNothing);
  EXPECT_EQ(policy.step(1.9, kNone, false).action, Action::kNothing);
  EXPECT_EQ(policy.step(2.0, kNone, false).action, Action::kStart);
  EXPECT_TRUE(policy.active());
  auto stop = policy.step(3.0, ControlCommand::kStop, false);
  EXPECT_EQ(stop.action, Action::kStop);
  EXPECT_EQ(stop.reason, StopReason::kControl);
  EXPECT_EQ(policy.step(10.0, kNone, false).action, Action::kNothing);  // no second auto start
}

TEST(WindowPolicy, DurationEndsEachWindow) {
  WindowPolicy policy(StartMode::kNow, 0, 3.0);
  EXPECT_EQ(policy.step(0.1, kNone, false).action, Action::kStart);
  EXPECT_EQ(policy.step(3.0, kNone, false).action, Action::kNothing);
  auto stop = policy.step(3.1, kNone, false);
  EXPECT_EQ(stop.action, Action::kStop);
  EXPECT_EQ(stop.reason, StopReason::kDuration);
  // A control "start" opens another window of the same duration.
  EXPECT_EQ(policy.step(10.0, ControlCommand::kStart, false).action, Action::kStart);
  EXPECT_EQ(policy.step(12.9, kNone, false).action, Action::kNothing);
  EXPECT_EQ(policy.step(13.0, kNone, false).reason, StopReason::kDuration);
}

TEST(WindowPolicy, TheDurationCountsFromWhenTheWindowReallyOpened) {
  WindowPolicy policy(StartMode::kNow, 0, 1.0);
  EXPECT_EQ(policy.step(0.1, kNone, false).action, Action::kStart);
  policy.opened_at(0.4);  // buffers took 0.3 s to prepare
  EXPECT_EQ(policy.step(1.2, kNone, false).action, Action::kNothing);
  EXPECT_EQ(policy.step(1.5, kNone, false).action, Action::kStop);
}

TEST(WindowPolicy, OnControlStaysInactiveUntilStart) {
  WindowPolicy policy(StartMode::kOnControl, 0, 0);
  for (double t : {0.0, 1.0, 100.0})
    EXPECT_EQ(policy.step(t, kNone, false).action, Action::kNothing);
  EXPECT_FALSE(policy.active());
  EXPECT_EQ(policy.step(101, ControlCommand::kStop, false).action, Action::kNothing);
  EXPECT_EQ(policy.step(102, ControlCommand::kStart, false).action, Action::kStart);
  EXPECT_EQ(policy.step(103, ControlCommand::kStart, false).action,
            Action::kNothing);  // already open
  EXPECT_EQ(policy.step(104, ControlCommand::kUnknown, false).action, Action::kNothing);
  EXPECT_EQ(policy.step(105, ControlCommand::kStop, false).action, Action::kStop);
}

TEST(WindowPolicy, TheCapClosesTheWindow) {
  WindowPolicy policy(StartMode::kNow, 0, 0);
  policy.step(0, kNone, false);
  auto stop = policy.step(1, kNone, true);
  EXPECT_EQ(stop.action, Action::kStop);
  EXPECT_EQ(stop.reason, StopReason::kCap);
  EXPECT_EQ(policy.step(2, kNone, false).action, Action::kNothing);
}

TEST(WindowPolicy, StopBeforeTheDelayCancelsTheFirstWindow) {
  WindowPolicy policy(StartMode::kNow, 5.0, 0);
  EXPECT_EQ(policy.step(1, ControlCommand::kStop, false).action, Action::kNothing);
  EXPECT_EQ(policy.step(6, kNone, false).action, Action::kNothing);
}

TEST(WindowPolicy, ExitClosesAnOpenWindowOnly) {
  WindowPolicy idle(StartMode::kOnControl, 0, 0);
  EXPECT_EQ(idle.at_exit().action, Action::kNothing);
  WindowPolicy open(StartMode::kNow, 0, 0);
  open.step(0, kNone, false);
  auto stop = open.at_exit();
  EXPECT_EQ(stop.action, Action::kStop);
  EXPECT_EQ(stop.reason, StopReason::kExit);
}

TEST(ControlCommands, ParsedExactlyAroundWhiteSpace) {
  EXPECT_EQ(parse_control_command("start"), ControlCommand::kStart);
  EXPECT_EQ(parse_control_command(" stop\n"), ControlCommand::kStop);
  EXPECT_EQ(parse_control_command("\n"), ControlCommand::kNone);
  EXPECT_EQ(parse_control_command("STOP"), ControlCommand::kUnknown);
  EXPECT_EQ(parse_control_command("start now"), ControlCommand::kUnknown);
}

class ControlFile : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kprof-control-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    path_ = dir_ + "/control";
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }
  // Writes as `echo X > file` does, with a distinct modification time each write (file systems
  // with coarse timestamps would otherwise hide a rewrite of the same text).
  void write(const std::string& text) {
    std::ofstream(path_, std::ios::trunc) << text;
    timespec times[2] = {{0, UTIME_OMIT}, {1'000'000 + ++writes_, 0}};
    ASSERT_EQ(utimensat(AT_FDCWD, path_.c_str(), times, 0), 0);
  }
  std::string dir_, path_;
  int writes_ = 0;
};

TEST_F(ControlFile, EachWriteIsOneCommand) {
  ControlFileWatcher watcher(path_);
  EXPECT_EQ(watcher.poll(), ControlCommand::kNone);  // absent
  write("start\n");
  EXPECT_EQ(watcher.poll(), ControlCommand::kStart);
  EXPECT_EQ(watcher.poll(), ControlCommand::kNone);  // unchanged
  write("stop\n");
  EXPECT_EQ(watcher.poll(), ControlCommand::kStop);
  write("start\n");
  EXPECT_EQ(watcher.poll(), ControlCommand::kStart);
  write("start\n");  // the same text again: a new window wanted after a duration ended one
  EXPECT_EQ(watcher.poll(), ControlCommand::kStart);
  std::string content;
  write("begin");
  EXPECT_EQ(watcher.poll(&content), ControlCommand::kUnknown);
  EXPECT_EQ(content, "begin");
  std::filesystem::remove(path_);
  EXPECT_EQ(watcher.poll(), ControlCommand::kNone);
}

TEST_F(ControlFile, TheFirstPollHonoursWhatIsAlreadyThere) {
  write("start");
  ControlFileWatcher watcher(path_);
  EXPECT_EQ(watcher.poll(), ControlCommand::kStart);
}

TEST_F(ControlFile, AFifoOrAFolderDoesNotStallOrCount) {
  ASSERT_EQ(mkfifo(path_.c_str(), 0600), 0);
  ControlFileWatcher watcher(path_);
  EXPECT_EQ(watcher.poll(), ControlCommand::kNone);
  std::filesystem::remove(path_);
  std::filesystem::create_directory(path_);
  EXPECT_EQ(watcher.poll(), ControlCommand::kNone);
}

}  // namespace
}  // namespace kprof::tracer
