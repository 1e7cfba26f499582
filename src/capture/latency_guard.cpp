#include "capture/latency_guard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <exception>

#include "common/text.h"

namespace kprof::capture {
namespace {

using ProbeClock = std::chrono::steady_clock;

double ms_since(ProbeClock::time_point start) {
  return std::chrono::duration<double, std::milli>(ProbeClock::now() - start).count();
}

double round_ms(double value) { return std::round(value * 1000) / 1000; }

// Nearest rank, as the request driver's figures: the smallest value at least p % do not exceed.
double nearest_rank(std::vector<double> values, double p) {
  std::sort(values.begin(), values.end());
  std::size_t rank = static_cast<std::size_t>(std::ceil(p / 100 * values.size()));
  return values[std::max<std::size_t>(rank, 1) - 1];
}

nlohmann::json optional_ms(const std::optional<double>& value) {
  return value ? nlohmann::json(round_ms(*value)) : nlohmann::json(nullptr);
}

template <typename T>
nlohmann::json optional_json(const std::optional<T>& value) {
  return value ? nlohmann::json(*value) : nlohmann::json(nullptr);
}

// Sleeps until `seconds` have passed since `began` or `stop` is set, in steps of 20 ms.
void sleep_until(ProbeClock::time_point began, double seconds, const std::atomic<bool>& stop) {
  while (!stop.load() && ms_since(began) < seconds * 1000)
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
}

}  // namespace

GuardPhase summarize(const std::vector<GuardProbe>& probes) {
  GuardPhase phase;
  std::vector<double> latencies;
  for (const GuardProbe& probe : probes) {
    ++phase.requests;
    if (probe.failed) {
      ++phase.errors;
    } else if (!probe.in_flight) {
      ++phase.completed;
      latencies.push_back(probe.latency_ms);
    }
  }
  if (!latencies.empty()) {
    phase.p50_ms = nearest_rank(latencies, 50);
    phase.p99_ms = nearest_rank(latencies, 99);
    phase.max_ms = *std::max_element(latencies.begin(), latencies.end());
  }
  return phase;
}

nlohmann::json phase_json(const GuardPhase& phase) {
  return {{"requests", phase.requests},
          {"completed", phase.completed},
          {"errors", phase.errors},
          {"p50_ms", optional_ms(phase.p50_ms)},
          {"p99_ms", optional_ms(phase.p99_ms)},
          {"max_ms", optional_ms(phase.max_ms)}};
}

std::optional<std::string> guard_verdict(const std::vector<GuardProbe>& latest,
                                         std::optional<double> limit_ms, double max_error_rate,
                                         const std::string& limit_from) {
  if (latest.empty()) return std::nullopt;
  // A probe in flight counts with its wait so far: it will take at least that long.
  std::vector<double> latencies;
  std::int64_t errors = 0;
  for (const GuardProbe& probe : latest) {
    if (probe.failed) {
      ++errors;
    } else {
      latencies.push_back(probe.latency_ms);
    }
  }
  if (limit_ms && !latencies.empty()) {
    double p99 = nearest_rank(latencies, 99);
    if (p99 > *limit_ms) {
      return fmt::format(
          "request latency p99 {:.0f} ms over the latest {} probe{} passed {:.0f} "
          "ms ({})",
          p99, latest.size(), latest.size() == 1 ? "" : "s", *limit_ms, limit_from);
    }
  }
  double rate = static_cast<double>(errors) / static_cast<double>(latest.size());
  if (errors > 0 && rate > max_error_rate) {
    return fmt::format(
        "{} of the latest {} probe requests failed ({:.0f} %, over the {:.0f} % "
        "allowed)",
        errors, latest.size(), rate * 100, max_error_rate * 100);
  }
  return std::nullopt;
}

std::optional<std::string> PodWatch::take(const PodStatus& status, const std::string& at) {
  ++reads_;
  if (!status.read) {
    ++failures_;
    last_problem_ = status.problem;
    return std::nullopt;
  }
  if (!have_baseline_) {
    have_baseline_ = true;
    ready_at_start_ = last_ready_ = status.ready;
    count_at_start_ = last_count_ = status.restart_count;
    return std::nullopt;
  }
  std::optional<std::string> why;
  if (status.restart_count) {
    if (last_count_ && *status.restart_count > *last_count_) {
      restarts_seen_.push_back({{"at", at},
                                {"restart_count_from", *last_count_},
                                {"restart_count_to", *status.restart_count}});
      why = fmt::format("container {} of pod {} restarted (restartCount {} -> {}) at {}",
                        container_, pod_, *last_count_, *status.restart_count, at);
    }
    if (!count_at_start_) count_at_start_ = status.restart_count;  // the first read did not say
    last_count_ = status.restart_count;
  }
  if (status.ready) {
    if (!*status.ready && last_ready_ == true) {
      drops_.push_back({at, ""});
      if (!why)
        why = fmt::format("pod {} readiness dropped at {} (its Ready condition turned False)", pod_,
                          at);
    } else if (*status.ready && last_ready_ == false && !drops_.empty() &&
               drops_.back().ready_again_at.empty()) {
      drops_.back().ready_again_at = at;
    }
    last_ready_ = status.ready;
  }
  return why;
}

std::optional<std::int64_t> PodWatch::restarts() const {
  if (!count_at_start_ || !last_count_) return std::nullopt;
  return std::max<std::int64_t>(*last_count_ - *count_at_start_, 0);
}

nlohmann::json PodWatch::bill() const {
  nlohmann::json drops = nlohmann::json::array();
  for (const Drop& drop : drops_) {
    drops.push_back(
        {{"at", drop.at},
         {"ready_again_at", drop.ready_again_at.empty() ? nlohmann::json(nullptr)
                                                        : nlohmann::json(drop.ready_again_at)}});
  }
  return {{"name", pod_},
          {"container", container_},
          {"reads", reads_},
          {"read_failures", failures_},
          {"last_problem",
           last_problem_.empty() ? nlohmann::json(nullptr) : nlohmann::json(last_problem_)},
          {"ready_at_start", optional_json(ready_at_start_)},
          {"restart_count_at_start", optional_json(count_at_start_)},
          {"restart_count_at_end", optional_json(last_count_)},
          {"readiness_drops", drops},
          {"restarts_seen", restarts_seen_}};
}

LatencyGuard::LatencyGuard(GuardSpec spec, std::function<void(const std::string&)> note)
    : spec_(std::move(spec)), note_(std::move(note)) {
  if (spec_.read_pod) pod_watch_.emplace(spec_.pod_name, spec_.pod_container);
  spec_.probe.concurrency = 1;
  spec_.probe.max_requests = 1;
  spec_.probe.duration_s.reset();
  if (spec_.p99_ms) {
    limit_ms_ = spec_.p99_ms;
    limit_from_ = fmt::format("--guard-p99-ms {}", *spec_.p99_ms);
  }
}

LatencyGuard::~LatencyGuard() { stop_watching(); }

// A probe that could not even be sent (the server's model list unreachable): a failed request.
GuardProbe LatencyGuard::probe_or_failure(double give_up_after_ms) {
  try {
    return probe_once(give_up_after_ms);
  } catch (const load::LoadError&) {
    GuardProbe failed;
    failed.failed = true;
    return failed;
  }
}

GuardProbe LatencyGuard::probe_once(double give_up_after_ms) {
  GuardProbe probe;
  load::RequestDriver driver(spec_.probe);
  ProbeClock::time_point start = ProbeClock::now();
  driver.start();
  if (spec_.probe.model.empty()) spec_.probe.model = driver.spec().model;  // read once
  while (!driver.finished()) {
    double waited = ms_since(start);
    if (stop_.load() || waited > give_up_after_ms) {
      driver.abandon();
      probe.in_flight = true;
      probe.latency_ms = waited;
      return probe;
    }
    {
      std::lock_guard<std::mutex> lock(mutex_);
      longest_in_flight_ms_ = std::max(longest_in_flight_ms_, waited);
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  load::LoadFigures figures = driver.stop();
  probe.failed = figures.completed == 0;
  probe.latency_ms = figures.latency ? figures.latency->max_ms : ms_since(start);
  return probe;
}

std::optional<std::string> LatencyGuard::measure_baseline() {
  for (int i = 0; i < spec_.baseline_requests; ++i) {
    GuardProbe probe = probe_once(spec_.probe.request_timeout_s * 1000);
    std::lock_guard<std::mutex> lock(mutex_);
    before_.push_back(probe);
  }
  std::string pod_now;
  if (pod_watch_) {
    read_pod_now(false);
    std::lock_guard<std::mutex> lock(mutex_);
    nlohmann::json pod = pod_watch_->bill();
    pod_now = fmt::format("; pod {} {}, container {} restartCount {}", spec_.pod_name,
                          pod["ready_at_start"].is_null()     ? std::string("readiness unknown")
                          : pod["ready_at_start"].get<bool>() ? std::string("Ready")
                                                              : std::string("not Ready"),
                          spec_.pod_container,
                          pod["restart_count_at_start"].is_null()
                              ? std::string("unknown")
                              : std::to_string(pod["restart_count_at_start"].get<std::int64_t>()));
    if (pod["reads"] == pod["read_failures"])
      pod_now = fmt::format("; pod {} could not be read ({})", spec_.pod_name,
                            pod["last_problem"].is_string() ? pod["last_problem"].get<std::string>()
                                                            : std::string("no reason given"));
  }
  GuardPhase baseline = summarize(before_);
  if (!spec_.armed()) {
    note_(fmt::format(
        "bill: baseline {} of {} requests completed, p50 {} ms, p99 {} ms{}; no guard limit "
        "(--guard-p99-ms, --guard-factor): the capture is measured, never stopped",
        baseline.completed, baseline.requests,
        baseline.p50_ms ? fmt::format("{:.0f}", *baseline.p50_ms) : "-",
        baseline.p99_ms ? fmt::format("{:.0f}", *baseline.p99_ms) : "-", pod_now));
    return std::nullopt;  // no limit: nothing the baseline can be over
  }
  if (spec_.factor && baseline.p99_ms) {
    double from_baseline = *baseline.p99_ms * *spec_.factor;
    if (!limit_ms_ || from_baseline < *limit_ms_) {
      limit_ms_ = from_baseline;
      limit_from_ = fmt::format("the baseline's p99 {:.0f} ms × --guard-factor {}",
                                *baseline.p99_ms, *spec_.factor);
    }
  }
  note_(fmt::format(
      "guard: baseline {} of {} requests completed, p50 {} ms, p99 {} ms{}; the "
      "capture stops when p99 passes {}{}",
      baseline.completed, baseline.requests,
      baseline.p50_ms ? fmt::format("{:.0f}", *baseline.p50_ms) : "-",
      baseline.p99_ms ? fmt::format("{:.0f}", *baseline.p99_ms) : "-", pod_now,
      limit_ms_ ? fmt::format("{:.0f} ms ({})", *limit_ms_, limit_from_)
                : std::string("no limit (no baseline completed)"),
      pod_watch_ ? fmt::format(", or the pod's readiness drops, or container {} restarts",
                               spec_.pod_container)
                 : std::string()));
  if (limit_ms_ && baseline.p99_ms && *baseline.p99_ms > *limit_ms_)
    return fmt::format(
        "the service's own p99 before the capture, {:.0f} ms, is already over the guard's limit "
        "of {:.0f} ms ({}): the guard would fire on the service's normal latency, not on ncu's; "
        "ncu was not started",
        *baseline.p99_ms, *limit_ms_, limit_from_);
  return std::nullopt;
}

void LatencyGuard::read_pod_now(bool may_fire) {
  PodStatus status;
  try {
    status = spec_.read_pod();
  } catch (const std::exception& error) {
    status = PodStatus();
    status.problem = error.what();
  }
  std::string at = utc_time();
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<std::string> why = pod_watch_->take(status, at);
  if (why && may_fire && spec_.armed() && !pod_why_) pod_why_ = why;
}

void LatencyGuard::start_watching() {
  stop_.store(false);
  thread_ = std::thread([this] { watch(); });
  if (pod_watch_) pod_thread_ = std::thread([this] { watch_pod(); });
}

void LatencyGuard::watch_pod() {
  double interval_s = std::max(spec_.pod_interval_s, 0.1);
  while (!stop_.load()) {
    sleep_until(ProbeClock::now(), interval_s, stop_);
    if (stop_.load()) break;
    read_pod_now(true);
  }
}

void LatencyGuard::watch() {
  while (!stop_.load()) {
    ProbeClock::time_point began = ProbeClock::now();
    // The probe's current wait is read by check() as it grows (longest_in_flight_ms_ is the
    // longest seen; the probe in flight is the one after the last recorded).
    {
      std::lock_guard<std::mutex> lock(mutex_);
      longest_in_flight_ms_ = 0;
    }
    GuardProbe probe = probe_or_failure(spec_.probe.request_timeout_s * 1000);
    {
      std::lock_guard<std::mutex> lock(mutex_);
      during_.push_back(probe);
      longest_in_flight_ms_ = 0;
    }
    sleep_until(began, spec_.interval_s, stop_);
  }
}

std::optional<std::string> LatencyGuard::check() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (!spec_.armed()) return std::nullopt;  // the bill alone
  if (why_) return why_;
  if (pod_why_) {
    why_ = pod_why_;
    return why_;
  }
  std::size_t window = static_cast<std::size_t>(std::max(spec_.window, 1));
  std::vector<GuardProbe> latest(
      during_.end() - static_cast<std::ptrdiff_t>(std::min(window, during_.size())), during_.end());
  if (longest_in_flight_ms_ > 0) {
    GuardProbe waiting;
    waiting.in_flight = true;
    waiting.latency_ms = longest_in_flight_ms_;
    latest.push_back(waiting);
  }
  why_ = guard_verdict(latest, limit_ms_, spec_.max_error_rate, limit_from_);
  return why_;
}

void LatencyGuard::stop_watching() {
  stop_.store(true);
  if (thread_.joinable()) thread_.join();
  if (pod_thread_.joinable()) pod_thread_.join();
}

void LatencyGuard::measure_after() {
  stop_.store(false);
  for (int i = 0; i < spec_.after_requests; ++i) {
    GuardProbe probe = probe_or_failure(spec_.probe.request_timeout_s * 1000);
    std::lock_guard<std::mutex> lock(mutex_);
    after_.push_back(probe);
  }
  if (!pod_watch_) return;
  read_pod_now(false);  // a restart ncu caused may show only now; it is billed, not acted on
  std::lock_guard<std::mutex> lock(mutex_);
  std::optional<std::int64_t> restarts = pod_watch_->restarts();
  note_(fmt::format("bill: pod {}: {} readiness drop{}, {} restart{} of container {} ({} read{})",
                    spec_.pod_name, pod_watch_->readiness_drops(),
                    pod_watch_->readiness_drops() == 1 ? "" : "s",
                    restarts ? std::to_string(*restarts) : std::string("unknown"),
                    restarts == std::optional<std::int64_t>(1) ? "" : "s", spec_.pod_container,
                    pod_watch_->reads(), pod_watch_->reads() == 1 ? "" : "s"));
}

std::optional<double> LatencyGuard::limit_ms() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return limit_ms_;
}

bool LatencyGuard::fired() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return why_.has_value();
}

nlohmann::json LatencyGuard::bill(std::optional<double> ncu_held_s) const {
  std::lock_guard<std::mutex> lock(mutex_);
  double longest = 0;
  for (const GuardProbe& probe : during_) longest = std::max(longest, probe.latency_ms);
  std::optional<std::int64_t> restarts = pod_watch_ ? pod_watch_->restarts() : std::nullopt;
  nlohmann::json guard = nullptr;  // no limit set: the bill alone
  if (spec_.armed()) {
    guard = {{"limit_ms", optional_ms(limit_ms_)},
             {"limit_from", limit_from_},
             {"max_error_rate", spec_.max_error_rate},
             {"interval_s", spec_.interval_s},
             {"fired", why_.has_value()},
             {"why", why_ ? nlohmann::json(*why_) : nlohmann::json(nullptr)}};
  }
  return {
      {"url", spec_.probe.base_url},
      {"latency",
       {{"before", phase_json(summarize(before_))},
        {"during", phase_json(summarize(during_))},
        {"after", phase_json(summarize(after_))}}},
      {"longest_stall_ms", round_ms(longest)},
      {"ncu_held_s", ncu_held_s ? nlohmann::json(round_ms(*ncu_held_s)) : nlohmann::json(nullptr)},
      {"restarts", optional_json(restarts)},
      {"pod", pod_watch_ ? pod_watch_->bill() : nlohmann::json(nullptr)},
      {"requests_sent", static_cast<std::int64_t>(before_.size() + during_.size() + after_.size())},
      {"guard", guard}};
}

}  // namespace kprof::capture
