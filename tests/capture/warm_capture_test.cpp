// The warm sequence's log-line readiness: only what a log gains after the sequence began counts.
#include "capture/warm_capture.h"

#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
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

// The server's log changing while the sequence waits on it.
std::thread after_300_ms(std::function<void()> change) {
  return std::thread([change = std::move(change)] {
    std::this_thread::sleep_for(std::chrono::milliseconds(300));
    change();
  });
}

TEST(LogLineReadiness, ALineTheLogGainsIsTheSignal) {
  GrowingLog log("INFO loading weights\n");
  std::string before = log.read();
  std::thread writer =
      after_300_ms([&] { log.append("INFO:     Application startup complete.\n"); });
  LogLineWait wait = wait_for_log_line([&] { return log.read(); }, kReady, 10, before);
  writer.join();
  ASSERT_TRUE(wait.line);
  EXPECT_EQ(*wait.line, "INFO:     Application startup complete.");
  EXPECT_FALSE(wait.earlier);
  EXPECT_GE(wait.waited_s, 0.2);
}

TEST(LogLineReadiness, ALineFromBeforeTheSequenceIsNotTheSignalButIsNamed) {
  // A log appended to across runs: the previous server's line is already there.
  GrowingLog log("INFO:     Application startup complete.\nINFO shutting down\nINFO loading\n");
  LogLineWait wait = wait_for_log_line([&] { return log.read(); }, kReady, 0.5, log.read());
  EXPECT_FALSE(wait.line);
  ASSERT_TRUE(wait.earlier);
  EXPECT_EQ(*wait.earlier, "INFO:     Application startup complete.");
  EXPECT_GE(wait.waited_s, 0.5);
}

TEST(LogLineReadiness, ALineHalfWrittenAtTheStartCountsOnceWhole) {
  GrowingLog log("INFO loading\nINFO:     Application startup");
  std::string before = log.read();
  std::thread writer = after_300_ms([&] { log.append(" complete.\n"); });
  LogLineWait wait = wait_for_log_line([&] { return log.read(); }, kReady, 10, before);
  writer.join();
  ASSERT_TRUE(wait.line);
  EXPECT_EQ(*wait.line, "INFO:     Application startup complete.");
}

TEST(LogLineReadiness, ALogThatStartsOverIsReadFromItsStart) {
  // The file replaced by a new run's (shorter) log, which then says it is ready.
  GrowingLog log(std::string(4096, 'x') + "\nINFO:     Application startup complete.\n");
  std::string before = log.read();
  std::thread writer =
      after_300_ms([&] { log.replace("INFO:     Application startup complete.\n"); });
  LogLineWait wait = wait_for_log_line([&] { return log.read(); }, kReady, 10, before);
  writer.join();
  ASSERT_TRUE(wait.line);
  EXPECT_TRUE(wait.earlier);
}

}  // namespace
}  // namespace kprof::capture
