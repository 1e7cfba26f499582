// The warm sequence's log-line readiness: only what a log gains after the sequence began counts.
#include "capture/warm_capture.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <filesystem>
#include <fstream>
#include <functional>
#include <mutex>
#include <thread>

namespace kprof::capture {
namespace {

// A log that another thread appends to while the wait reads it.
class GrowingLog {
 public:
  explicit GrowingLog(std::string text) : text_(std::move(text)) {}
  std::string read() {
    std::lock_guard<std::mutex> lock(mutex_);
    return text_;
  }
  void replace(std::string text) {
    std::lock_guard<std::mutex> lock(mutex_);
    text_ = std::move(text);
  }
  void append(const std::string& text) {
    std::lock_guard<std::mutex> lock(mutex_);
    text_ += text;
  }

 private:
  std::mutex mutex_;
  std::string text_;
};

const char* kReady = R"(Application startup complete)";

// The wait of the sequence on a log: what it holds now is skipped (looked at for an earlier
// line), then the first line it gains is the signal.
LogLineWait wait_on(GrowingLog& log, double timeout_s) {
  WholeTextLogFollower follower([&] { return std::optional<std::string>(log.read()); }, nullptr);
  LogLineWatch watch(follower, kReady);
  watch.skip_existing();
  return watch.wait(timeout_s, 0.05);
}

// The same wait started in a thread that runs `change` once the existing log was read.
LogLineWait wait_on_changed(GrowingLog& log, double timeout_s, std::function<void()> change);

LogLineWait wait_on_changed(GrowingLog& log, double timeout_s, std::function<void()> change) {
  WholeTextLogFollower follower([&] { return std::optional<std::string>(log.read()); }, nullptr);
  LogLineWatch watch(follower, kReady);
  watch.skip_existing();
  std::thread writer([change = std::move(change)] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    change();
  });
  LogLineWait wait = watch.wait(timeout_s, 0.05);
  writer.join();
  return wait;
}

TEST(LogLineReadiness, ALineTheLogGainsIsTheSignal) {
  GrowingLog log("INFO loading weights\n");
  LogLineWait wait =
      wait_on_changed(log, 10, [&] { log.append("INFO:     Application startup complete.\n"); });
  ASSERT_TRUE(wait.line);
  EXPECT_EQ(*wait.line, "INFO:     Application startup complete.");
  EXPECT_FALSE(wait.earlier);
  EXPECT_GE(wait.waited_s, 0.2);
}

TEST(LogLineReadiness, ALineFromBeforeTheSequenceIsNotTheSignalButIsNamed) {
  // A log appended to across runs: the previous server's line is already there.
  GrowingLog log("INFO:     Application startup complete.\nINFO shutting down\nINFO loading\n");
  LogLineWait wait = wait_on(log, 0.5);
  EXPECT_FALSE(wait.line);
  ASSERT_TRUE(wait.earlier);
  EXPECT_EQ(*wait.earlier, "INFO:     Application startup complete.");
  EXPECT_GE(wait.waited_s, 0.5);
}

TEST(LogLineReadiness, ALineHalfWrittenAtTheStartCountsOnceWhole) {
  GrowingLog log("INFO loading\nINFO:     Application startup");
  LogLineWait wait = wait_on_changed(log, 10, [&] { log.append(" complete.\n"); });
  ASSERT_TRUE(wait.line);
  EXPECT_EQ(*wait.line, "INFO:     Application startup complete.");
}

TEST(LogLineReadiness, ALogThatStartsOverIsReadFromItsStart) {
  // The file replaced by a new run's (shorter) log, which then says it is ready.
  GrowingLog log(std::string(4096, 'x') + "\nINFO:     Application startup complete.\n");
  LogLineWait wait =
      wait_on_changed(log, 10, [&] { log.replace("INFO:     Application startup complete.\n"); });
  ASSERT_TRUE(wait.line);
  EXPECT_TRUE(wait.earlier);
}

TEST(LogLineReadiness, AHalfLineOfALogThatStartedOverIsDropped) {
  GrowingLog log(std::string(100, 'x') + "\nINFO:     Application startup");
  LogLineWait wait = wait_on_changed(log, 0.8, [&] { log.replace(" complete.\n"); });
  EXPECT_FALSE(wait.line);  // " complete." alone is no match; the old half line is gone
}

TEST(LogLineReadiness, ALogThatCouldNotBeFetchedHasNotStartedOver) {
  // kubectl logs failing once must not make the next fetch look like a new log (its old ready
  // line would be taken for a new one).
  GrowingLog log("INFO:     Application startup complete.\n");
  std::atomic<int> calls{0};
  WholeTextLogFollower follower(
      [&]() -> std::optional<std::string> {
        if (calls.fetch_add(1) == 1) return std::nullopt;
        return log.read();
      },
      [] { return std::string("error: connection refused"); });
  LogLineWatch watch(follower, kReady);
  watch.skip_existing();
  LogLineWait wait = watch.wait(0.5, 0.05);
  EXPECT_FALSE(wait.line);
  EXPECT_TRUE(wait.earlier);
  EXPECT_EQ(follower.problem(), "error: connection refused");
}

// Issue 27 item 8: a --ready-log-file was read whole at every poll (a 600 MB log took 1.6 GB for a
// 6 s wait); it is followed from where the last read ended, so each byte is read once.
TEST(LogLineReadiness, ALogFileIsFollowedNotReadWholeAtEachPoll) {
  std::string path = ::testing::TempDir() + "/kprof-follow-" + std::to_string(::getpid()) + ".log";
  {
    std::ofstream out(path, std::ios::binary);
    std::string line(1023, 'x');
    line += '\n';
    for (int i = 0; i < 16 * 1024; ++i) out << line;  // 16 MiB of earlier log
  }
  FileLogFollower follower(path);
  LogLineWatch watch(follower, kReady);
  watch.skip_existing();
  const std::string ready = "INFO:     Application startup complete.\n";
  std::thread writer([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(500));
    std::ofstream(path, std::ios::app) << ready;
  });
  LogLineWait wait = watch.wait(10, 0.02);  // ~25 polls before the line comes
  writer.join();
  ASSERT_TRUE(wait.line);
  EXPECT_EQ(follower.bytes_read(), 16u * 1024 * 1024 + ready.size());  // every byte once
  std::filesystem::remove(path);
}

}  // namespace
}  // namespace kprof::capture
