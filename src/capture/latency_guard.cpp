#include "capture/latency_guard.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>

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

LatencyGuard::LatencyGuard(GuardSpec spec, std::function<void(const std::string&)> note)
    : spec_(std::move(spec)), note_(std::move(note)) {
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
  GuardPhase baseline = summarize(before_);
  if (spec_.factor && baseline.p99_ms) {
    double from_baseline = *baseline.p99_ms * *spec_.factor;
    if (!limit_ms_ || from_baseline < *limit_ms_) {
      limit_ms_ = from_baseline;
      limit_from_ = fmt::format("the baseline's p99 {:.0f} ms × --guard-factor {}",
                                *baseline.p99_ms, *spec_.factor);
    }
  }
  note_(
      fmt::format("guard: baseline {} of {} requests completed, p50 {} ms, p99 {} ms; the "
                  "capture stops when p99 passes {}",
                  baseline.completed, baseline.requests,
                  baseline.p50_ms ? fmt::format("{:.0f}", *baseline.p50_ms) : "-",
                  baseline.p99_ms ? fmt::format("{:.0f}", *baseline.p99_ms) : "-",
                  limit_ms_ ? fmt::format("{:.0f} ms ({})", *limit_ms_, limit_from_)
                            : std::string("no limit (no baseline completed)")));
  if (limit_ms_ && baseline.p99_ms && *baseline.p99_ms > *limit_ms_)
    return fmt::format(
        "the service's own p99 before the capture, {:.0f} ms, is already over the guard's limit "
        "of {:.0f} ms ({}): the guard would fire on the service's normal latency, not on ncu's; "
        "ncu was not started",
        *baseline.p99_ms, *limit_ms_, limit_from_);
  return std::nullopt;
}

void LatencyGuard::start_watching() {
  stop_.store(false);
  thread_ = std::thread([this] { watch(); });
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
    if (spec_.pod_check) {
      if (std::optional<std::string> why = spec_.pod_check()) {
        std::lock_guard<std::mutex> lock(mutex_);
        if (!why_) why_ = *why;
      }
    }
    while (!stop_.load() && ms_since(began) < spec_.interval_s * 1000)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

std::optional<std::string> LatencyGuard::check() {
  std::lock_guard<std::mutex> lock(mutex_);
  if (why_) return why_;
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
}

void LatencyGuard::measure_after() {
  stop_.store(false);
  for (int i = 0; i < spec_.after_requests; ++i) {
    GuardProbe probe = probe_or_failure(spec_.probe.request_timeout_s * 1000);
    std::lock_guard<std::mutex> lock(mutex_);
    after_.push_back(probe);
  }
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
  std::optional<std::int64_t> restarts = spec_.restarts ? spec_.restarts() : std::nullopt;
  return {
      {"url", spec_.probe.base_url},
      {"latency",
       {{"before", phase_json(summarize(before_))},
        {"during", phase_json(summarize(during_))},
        {"after", phase_json(summarize(after_))}}},
      {"longest_stall_ms", round_ms(longest)},
      {"ncu_held_s", ncu_held_s ? nlohmann::json(round_ms(*ncu_held_s)) : nlohmann::json(nullptr)},
      {"restarts", restarts ? nlohmann::json(*restarts) : nlohmann::json(nullptr)},
      {"guard",
       {{"limit_ms", optional_ms(limit_ms_)},
        {"limit_from", limit_from_},
        {"max_error_rate", spec_.max_error_rate},
        {"interval_s", spec_.interval_s},
        {"fired", why_.has_value()},
        {"why", why_ ? nlohmann::json(*why_) : nlohmann::json(nullptr)},
        {"requests_sent",
         static_cast<std::int64_t>(before_.size() + during_.size() + after_.size())}}}};
}

}  // namespace kprof::capture
