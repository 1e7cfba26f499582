// The latency guard's judgement and summaries (capture/latency_guard.h), on probe lists made
// here: the percentiles by nearest rank worked by hand, a probe still in flight counted with its
// wait, errors against their rate. The guard against a server that really stalls is in
// capture_cli_test (TheGuardDetachesOnALatencySpikeAndKeepsThePartialBundle); the pod watch
// against a pod whose readiness drops in the Kubernetes stand-in is in tests/k8s/k8s_test.py.
#include "capture/latency_guard.h"

#include <gtest/gtest.h>

#include <atomic>
#include <memory>
#include <thread>

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

PodStatus pod(std::optional<bool> ready, std::optional<std::int64_t> restarts) {
  PodStatus status;
  status.read = true;
  status.ready = ready;
  status.restart_count = restarts;
  return status;
}

PodStatus unreadable(const std::string& why) {
  PodStatus status;
  status.problem = why;
  return status;
}

// The first read is the baseline; Ready True -> False is a drop (once, until it is ready again);
// a failed read is counted and changes nothing.
TEST(PodWatch, AReadinessDropIsSaidOnceAndItsRecoveryRecorded) {
  PodWatch watch("serving/llama-70b-kprof-ab12c-x", "server");
  EXPECT_FALSE(watch.take(pod(true, 0), "T0"));
  EXPECT_FALSE(watch.take(pod(true, 0), "T1"));
  EXPECT_FALSE(watch.take(unreadable("connection refused"), "T2"));
  std::optional<std::string> why = watch.take(pod(false, 0), "T3");
  ASSERT_TRUE(why);
  EXPECT_EQ(*why,
            "pod serving/llama-70b-kprof-ab12c-x readiness dropped at T3 (its Ready condition "
            "turned False)");
  EXPECT_FALSE(watch.take(pod(false, 0), "T4"));  // still down: the same drop
  EXPECT_FALSE(watch.take(pod(true, 0), "T5"));
  nlohmann::json bill = watch.bill();
  EXPECT_EQ(bill["reads"], 6);
  EXPECT_EQ(bill["read_failures"], 1);
  EXPECT_EQ(bill["last_problem"], "connection refused");
  EXPECT_EQ(bill["ready_at_start"], true);
  EXPECT_EQ(bill["readiness_drops"],
            nlohmann::json::parse(R"([{"at":"T3","ready_again_at":"T5"}])"));
  EXPECT_EQ(watch.restarts(), 0);
  // A second drop is a second event.
  EXPECT_TRUE(watch.take(pod(false, 0), "T6"));
  EXPECT_EQ(watch.readiness_drops(), 2u);
}

TEST(PodWatch, ARestartIsARestartCountAboveTheLastOne) {
  PodWatch watch("serving/p", "server");
  EXPECT_FALSE(watch.take(pod(true, 2), "T0"));  // restarted before the capture: the baseline
  std::optional<std::string> why = watch.take(pod(true, 3), "T1");
  ASSERT_TRUE(why);
  EXPECT_EQ(*why, "container server of pod serving/p restarted (restartCount 2 -> 3) at T1");
  // Restarted and unready in one read: the restart is the reason given.
  why = watch.take(pod(false, 4), "T2");
  ASSERT_TRUE(why);
  EXPECT_NE(why->find("restartCount 3 -> 4"), std::string::npos) << *why;
  EXPECT_EQ(watch.restarts(), 2);
  nlohmann::json bill = watch.bill();
  EXPECT_EQ(bill["restart_count_at_start"], 2);
  EXPECT_EQ(bill["restart_count_at_end"], 4);
  EXPECT_EQ(bill["restarts_seen"].size(), 2u);
  EXPECT_EQ(bill["readiness_drops"].size(), 1u);  // the drop is recorded all the same
}

// A pod whose status says neither (no Ready condition, no status for the container), or that
// was never read: nothing is known, nothing fires.
TEST(PodWatch, WhatThePodDoesNotSayIsUnknownNotQuiet) {
  PodWatch never("serving/p", "server");
  EXPECT_FALSE(never.take(unreadable("forbidden"), "T0"));
  EXPECT_FALSE(never.restarts());
  EXPECT_TRUE(never.bill()["ready_at_start"].is_null());
  PodWatch silent("serving/p", "server");
  EXPECT_FALSE(silent.take(pod(std::nullopt, std::nullopt), "T0"));
  EXPECT_FALSE(silent.take(pod(std::nullopt, std::nullopt), "T1"));
  EXPECT_FALSE(silent.restarts());
  // The first read that says is the baseline of what it says.
  EXPECT_FALSE(silent.take(pod(true, 1), "T2"));
  EXPECT_TRUE(silent.take(pod(true, 2), "T3"));
  EXPECT_EQ(silent.restarts(), 1);
}

// Without a limit the guard never stops a capture, whatever the pod does, and its bill says no
// guard was set; with one, the pod's drop is the reason check() gives.
TEST(LatencyGuard, APodDropStopsOnlyAnArmedGuard) {
  for (bool armed : {false, true}) {
    auto reads = std::make_shared<std::atomic<int>>(0);
    GuardSpec spec;
    // Nothing listens there: the probes fail, and failures are allowed (a rate of 1), so only
    // the pod can stop the capture; one probe a minute.
    spec.probe.base_url = "http://127.0.0.1:1";
    spec.probe.model = "m";
    spec.max_error_rate = 1;
    spec.interval_s = 60;
    if (armed) spec.p99_ms = 1000;
    spec.pod_name = "serving/p";
    spec.pod_container = "server";
    spec.pod_interval_s = 0.1;
    spec.read_pod = [reads] { return pod(++*reads < 3, 0); };  // Ready for two reads, then not
    std::vector<std::string> notes;
    LatencyGuard guard(spec, [&notes](const std::string& text) { notes.push_back(text); });
    guard.start_watching();
    std::optional<std::string> why;
    for (int i = 0; i < 100 && !why && *reads < 6; ++i) {
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
      why = guard.check();
    }
    guard.stop_watching();
    nlohmann::json bill = guard.bill(std::nullopt);
    EXPECT_EQ(bill["pod"]["readiness_drops"].size(), 1u) << bill.dump();
    EXPECT_EQ(bill["pod"]["reads"], reads->load());
    EXPECT_EQ(bill["restarts"], 0);
    if (armed) {
      ASSERT_TRUE(why);
      EXPECT_NE(why->find("pod serving/p readiness dropped at "), std::string::npos) << *why;
      EXPECT_EQ(bill["guard"]["fired"], true);
      EXPECT_EQ(bill["guard"]["why"], *why);
    } else {
      EXPECT_FALSE(why);
      EXPECT_TRUE(bill["guard"].is_null());
    }
  }
}

}  // namespace
}  // namespace kprof::capture
