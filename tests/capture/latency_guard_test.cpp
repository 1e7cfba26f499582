// The latency guard's judgement and summaries (capture/latency_guard.h), on probe lists made
// here: the percentiles by nearest rank worked by hand, a probe still in flight counted with its
// wait, errors against their rate. The guard against a server that really stalls is in
// capture_cli_test (TheGuardDetachesOnALatencySpikeAndKeepsThePartialBundle).
#include "capture/latency_guard.h"

#include <gtest/gtest.h>

namespace kprof::capture {
namespace {

GuardProbe done(double ms) { return {ms, false, false}; }
GuardProbe failed() { return {5, true, false}; }
GuardProbe waiting(double ms) { return {ms, false, true}; }

TEST(LatencyGuard, PhasesArePercentilesOfCompletedProbesByNearestRank) {
  // Ten completed probes of 10..100 ms: p50 is the 5th (50 ms), p99 the 10th (100 ms).
  std::vector<GuardProbe> probes;
  for (int i = 1; i <= 10; ++i) probes.push_back(done(10.0 * i));
  probes.push_back(failed());
  probes.push_back(waiting(4000));  // cut off: neither completed nor an error
  GuardPhase phase = summarize(probes);
  EXPECT_EQ(phase.requests, 12);
  EXPECT_EQ(phase.completed, 10);
  EXPECT_EQ(phase.errors, 1);
  EXPECT_DOUBLE_EQ(*phase.p50_ms, 50);
  EXPECT_DOUBLE_EQ(*phase.p99_ms, 100);
  EXPECT_DOUBLE_EQ(*phase.max_ms, 100);
  EXPECT_FALSE(summarize({failed()}).p99_ms);
}

TEST(LatencyGuard, FiresOnAProbeStillWaitingPastTheLimit) {
  std::vector<GuardProbe> fast = {done(40), done(45), done(50)};
  EXPECT_FALSE(guard_verdict(fast, 1000, 0.5, "--guard-p99-ms 1000"));
  std::vector<GuardProbe> stalled = fast;
  stalled.push_back(waiting(1200));  // no answer yet, but already 1.2 s
  std::optional<std::string> why = guard_verdict(stalled, 1000, 0.5, "--guard-p99-ms 1000");
  ASSERT_TRUE(why);
  EXPECT_EQ(*why,
            "request latency p99 1200 ms over the latest 4 probes passed 1000 ms "
            "(--guard-p99-ms 1000)");
  EXPECT_FALSE(guard_verdict(stalled, std::nullopt, 0.5, ""));  // no limit: latency never fires
  EXPECT_FALSE(guard_verdict({}, 1000, 0.5, ""));
}

TEST(LatencyGuard, FiresWhenErrorsPassTheirRate) {
  std::vector<GuardProbe> some = {done(10), failed(), done(10), done(10)};  // 25 %
  EXPECT_FALSE(guard_verdict(some, std::nullopt, 0.5, ""));
  std::vector<GuardProbe> most = {failed(), failed(), done(10)};  // 67 %
  std::optional<std::string> why = guard_verdict(most, std::nullopt, 0.5, "");
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "2 of the latest 3 probe requests failed (67 %, over the 50 % allowed)");
  EXPECT_TRUE(guard_verdict({failed()}, std::nullopt, 0.0, ""));  // none allowed
}

}  // namespace
}  // namespace kprof::capture
