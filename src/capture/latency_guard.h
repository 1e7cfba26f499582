// The latency guard of a capture on a live engine (issue 41): the serving latency measured
// before the capture (the baseline), probed at a low rate while ncu runs, and measured again
// after; when the p99 of the latest probes passes --guard-p99-ms (or the baseline's p99 ×
// --guard-factor), or their errors pass a rate, or (Kubernetes) the pod's readiness drops or it
// restarts, check() says why and the capture session stops ncu (SIGINT to its process group: an
// attach client detaches, the target keeps running) and keeps what was captured.
//
// Without a limit (no --guard-p99-ms, no --guard-factor) it is the bill alone: the same probes
// and pod reads, recorded, never a reason to stop ("guard": null in the bill).
//
// It sends requests only to the URL the operator gave (the warm capture's --load-url, or
// --guard-url), of the shape the operator set (--load-api, --model, --prompt-len, --output-len),
// one at a time, and counts every request it sent in the bill. A probe still in flight counts
// with the time it has waited so far: a stalled engine answers nothing, and the guard must not
// wait for the answer to see it. The pod (Kubernetes) is read by the caller's read_pod (kubectl
// get pod), on a thread of its own so that a stalled probe does not delay it; every read is
// counted in the bill too.
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

// The profiled pod as one read saw it (kubectl get pod): its Ready condition and the profiled
// container's restartCount, each nullopt when the pod's status does not say.
struct PodStatus {
  bool read = false;    // false: the read failed (problem says why)
  std::string problem;  // kubectl's message when it failed
  std::optional<bool> ready;
  std::optional<std::int64_t> restart_count;
};

// What successive reads of the pod show (pure, for the tests too): the first read is the
// baseline; a Ready condition going from True to False is a readiness drop, a restartCount above
// the last one a restart. take() returns why to stop when this read shows one (the first of
// either); bill() is the manifest's "pod" block.
class PodWatch {
 public:
  PodWatch(std::string pod, std::string container)
      : pod_(std::move(pod)), container_(std::move(container)) {}
  std::optional<std::string> take(const PodStatus& status, const std::string& at);
  nlohmann::json bill() const;
  // Restarts since the baseline (nullopt: no restartCount read at the start and now).
  std::optional<std::int64_t> restarts() const;
  std::size_t readiness_drops() const { return drops_.size(); }
  std::int64_t reads() const { return reads_; }

 private:
  std::string pod_, container_;
  std::int64_t reads_ = 0, failures_ = 0;
  std::string last_problem_;
  bool have_baseline_ = false;
  std::optional<bool> ready_at_start_, last_ready_;
  std::optional<std::int64_t> count_at_start_, last_count_;
  struct Drop {
    std::string at, ready_again_at;
  };
  std::vector<Drop> drops_;
  nlohmann::json restarts_seen_ = nlohmann::json::array();
};

struct GuardSpec {
  load::LoadSpec probe;          // base_url, model ("" : the first listed), api, lengths, api key
  double interval_s = 1;         // one probe this often while ncu runs
  int baseline_requests = 5;     // before the capture, one after the other
  int after_requests = 3;        // after it
  std::optional<double> p99_ms;  // --guard-p99-ms
  std::optional<double> factor;  // --guard-factor: the baseline's p99 × this
  double max_error_rate = 0.5;   // of the latest probes (--guard-error-rate)
  int window = 8;                // the latest probes the p99 and the error rate are taken over
  // Kubernetes: the profiled pod read now (unset: not Kubernetes). Read once with the baseline,
  // every pod_interval_s while ncu runs, once after.
  std::function<PodStatus()> read_pod;
  std::string pod_name, pod_container;  // "NAMESPACE/POD" and the profiled container, for messages
  double pod_interval_s = 2;
  // Whether a limit is set: only then does the guard stop a capture.
  bool armed() const { return p99_ms.has_value() || factor.has_value(); }
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
  // restarts and readiness drops (Kubernetes), whether the guard fired and why (null: no limit
  // set), its own requests and pod reads. ncu_held_s: how long ncu ran.
  nlohmann::json bill(std::optional<double> ncu_held_s) const;
  // The limit in ms the probes are held to (nullopt before the baseline when only a factor).
  std::optional<double> limit_ms() const;
  bool fired() const;

 private:
  GuardProbe probe_once(double give_up_after_ms);  // load::LoadError when it cannot be sent
  GuardProbe probe_or_failure(double give_up_after_ms);
  void watch();
  void watch_pod();
  void read_pod_now(bool may_fire);  // one read into pod_watch_

  GuardSpec spec_;
  std::function<void(const std::string&)> note_;
  mutable std::mutex mutex_;
  std::vector<GuardProbe> before_, during_, after_;
  std::optional<std::string> why_, pod_why_;
  std::optional<PodWatch> pod_watch_;
  std::thread pod_thread_;
  std::string limit_from_;
  std::optional<double> limit_ms_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
  double longest_in_flight_ms_ = 0;
};

}  // namespace kprof::capture
