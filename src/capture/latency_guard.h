// The latency guard of a capture on a live engine (issue 41): the serving latency measured
// before the capture (the baseline), probed at a low rate while ncu runs, and measured again
// after; when the p99 of the latest probes passes --guard-p99-ms (or the baseline's p99 ×
// --guard-factor), or their errors pass a rate, or (Kubernetes) the pod's readiness drops or it
// restarts, check() says why and the capture session stops ncu (SIGINT to its process group: an
// attach client detaches, the target keeps running) and keeps what was captured.
//
// It sends requests only to the URL the operator gave (the warm capture's --load-url, or
// --guard-url), of the shape the operator set (--load-api, --model, --prompt-len, --output-len),
// one at a time, and counts every request it sent in the bill. A probe still in flight counts
// with the time it has waited so far: a stalled engine answers nothing, and the guard must not
// wait for the answer to see it.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "load/request_driver.h"

namespace kprof::capture {

struct GuardSpec {
  load::LoadSpec probe;          // base_url, model ("" : the first listed), api, lengths, api key
  double interval_s = 1;         // one probe this often while ncu runs
  int baseline_requests = 5;     // before the capture, one after the other
  int after_requests = 3;        // after it
  std::optional<double> p99_ms;  // --guard-p99-ms
  std::optional<double> factor;  // --guard-factor: the baseline's p99 × this
  double max_error_rate = 0.5;   // of the latest probes (--guard-error-rate)
  int window = 8;                // the latest probes the p99 and the error rate are taken over
  // Kubernetes: asked at each probe; a reason when the pod's readiness dropped or it restarted.
  std::function<std::optional<std::string>()> pod_check;
  // Kubernetes: the pod's restarts since the guard began (nullopt: not known here).
  std::function<std::optional<std::int64_t>()> restarts;
};

// One probe: its latency (a request still in flight: the time it has waited), whether it failed.
struct GuardProbe {
  double latency_ms = 0;
  bool failed = false;
  bool in_flight = false;
};

// Latency of a phase: nearest-rank percentiles of the completed probes.
struct GuardPhase {
  std::int64_t requests = 0, completed = 0, errors = 0;
  std::optional<double> p50_ms, p99_ms, max_ms;
};
GuardPhase summarize(const std::vector<GuardProbe>& probes);
nlohmann::json phase_json(const GuardPhase& phase);

// The guard's judgement of the latest probes against its limits (pure, for the tests too): why
// to stop, or nullopt.
std::optional<std::string> guard_verdict(const std::vector<GuardProbe>& latest,
                                         std::optional<double> limit_ms, double max_error_rate,
                                         const std::string& limit_from);

class LatencyGuard {
 public:
  LatencyGuard(GuardSpec spec, std::function<void(const std::string&)> note);
  ~LatencyGuard();
  LatencyGuard(const LatencyGuard&) = delete;
  LatencyGuard& operator=(const LatencyGuard&) = delete;

  // Before the capture: spec.baseline_requests probes, one after the other. load::LoadError
  // when the server cannot be asked (no model listed, an URL that is not http). Returns why the
  // guard cannot guard, when the baseline's own p99 is already over the limit: it would fire on
  // the service's normal latency, not on ncu's stall (the caller then does not start ncu).
  [[nodiscard]] std::optional<std::string> measure_baseline();
  // While ncu runs: probes on a thread of their own, every spec.interval_s.
  void start_watching();
  // Why the capture must stop (the first reason, kept), or nullopt. Any thread.
  std::optional<std::string> check();
  // Stops the probing (a probe in flight cut off, counted with its wait so far).
  void stop_watching();
  // After the capture: spec.after_requests probes.
  void measure_after();
  // What the capture cost the service: latency before, during and after, the longest stall seen,
  // restarts, whether the guard fired and why, its own requests. ncu_held_s: how long ncu ran.
  nlohmann::json bill(std::optional<double> ncu_held_s) const;
  // The limit in ms the probes are held to (nullopt before the baseline when only a factor).
  std::optional<double> limit_ms() const;
  bool fired() const;

 private:
  GuardProbe probe_once(double give_up_after_ms);  // load::LoadError when it cannot be sent
  GuardProbe probe_or_failure(double give_up_after_ms);
  void watch();

  GuardSpec spec_;
  std::function<void(const std::string&)> note_;
  mutable std::mutex mutex_;
  std::vector<GuardProbe> before_, during_, after_;
  std::optional<std::string> why_;
  std::string limit_from_;
  std::optional<double> limit_ms_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  double longest_in_flight_ms_ = 0;
};

}  // namespace kprof::capture
