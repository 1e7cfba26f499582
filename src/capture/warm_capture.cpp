#include "capture/warm_capture.h"

#include <fcntl.h>
#include <fmt/format.h>
#include <re2/re2.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <cstring>
#include <memory>
#include <stdexcept>
#include <thread>

#include "capture/bundle_manifest.h"
#include "capture/evidence_bundle.h"
#include "common/child_process.h"
#include "common/error.h"
#include "common/text.h"
#include "render/envelope.h"
#include "render/load_render.h"

namespace kprof::capture {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point start) {
  return std::round(std::chrono::duration<double>(Clock::now() - start).count() * 1000) / 1000;
}

// "http://host:port/health" → ("http://host:port", "/health").
std::pair<std::string, std::string> split_url(const std::string& url) {
  size_t scheme = url.find("://");
  size_t path = url.find('/', scheme == std::string::npos ? 0 : scheme + 3);
  if (path == std::string::npos) return {url, "/"};
  return {url.substr(0, path), url.substr(path)};
}

std::string failure_text(const load::LoadFigures& figures) {
  std::string causes;
  for (const auto& [cause, count] : figures.failures_by_cause)
    causes += fmt::format("{}{} {}", causes.empty() ? "" : ", ", count, cause);
  std::string examples;
  for (const std::string& example : figures.failure_examples)
    examples += (examples.empty() ? "" : "; ") + example;
  return causes.empty() ? ""
                        : fmt::format(" ({}{})", causes, examples.empty() ? "" : ": " + examples);
}

}  // namespace

void FileLogFollower::read_new(const OnText& on_text) {
  int fd = ::open(path_.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    problem_ = fmt::format("cannot open {}: {}", path_, std::strerror(errno));
    return;
  }
  struct stat info {};
  if (::fstat(fd, &info) == 0) {
    const auto device = static_cast<std::uint64_t>(info.st_dev);
    const auto inode = static_cast<std::uint64_t>(info.st_ino);
    // Another file at the name (rotated, rewritten) or the same one truncated: from its start.
    if ((inode_ != 0 && (device != device_ || inode != inode_)) ||
        static_cast<std::uint64_t>(info.st_size) < offset_) {
      started_over_ = true;
      offset_ = 0;
    }
    device_ = device;
    inode_ = inode;
  }
  problem_.clear();
  std::string buffer(1u << 20, '\0');
  for (;;) {
    ssize_t n = ::pread(fd, buffer.data(), buffer.size(), static_cast<off_t>(offset_));
    if (n < 0 && errno == EINTR) continue;
    if (n < 0) problem_ = fmt::format("cannot read {}: {}", path_, std::strerror(errno));
    if (n <= 0) break;
    offset_ += static_cast<std::uint64_t>(n);
    bytes_read_ += static_cast<std::uint64_t>(n);
    on_text(std::string_view(buffer.data(), static_cast<size_t>(n)), started_over_);
    started_over_ = false;
  }
  ::close(fd);
}

void WholeTextLogFollower::read_new(const OnText& on_text) {
  std::optional<std::string> read = read_();
  if (!read) return;
  const std::string& text = *read;
  if (text.size() < seen_) {
    started_over_ = true;
    seen_ = 0;
  }
  if (text.size() > seen_) {
    on_text(std::string_view(text).substr(seen_), started_over_);
    started_over_ = false;
  }
  seen_ = text.size();
}

namespace {
constexpr size_t kMaxLogLine = 1u << 20;
}  // namespace

LogLineWatch::LogLineWatch(LogFollower& log, const std::string& regex)
    : log_(log), pattern_(std::make_unique<RE2>(regex, RE2::Quiet)) {}

LogLineWatch::~LogLineWatch() = default;

void LogLineWatch::take(std::string_view text, bool started_over, bool existing) {
  if (started_over) partial_.clear();  // the half line was the old log's
  while (!text.empty() && !(result_.line && !existing)) {
    size_t newline = text.find('\n');
    std::string_view piece = text.substr(0, newline);
    if (partial_.size() < kMaxLogLine) {
      partial_.append(piece.substr(0, kMaxLogLine - partial_.size()));
    }
    if (newline == std::string_view::npos) return;  // the line is not whole yet
    if (RE2::PartialMatch(partial_, *pattern_)) {
      if (existing) {
        if (!result_.earlier) result_.earlier = partial_;
      } else if (!result_.line) {
        result_.line = partial_;
      }
    }
    partial_.clear();
    text.remove_prefix(newline + 1);
  }
}

void LogLineWatch::skip_existing() {
  // The existing lines are only looked at for `earlier`; a half-written last one stays partial_.
  log_.read_new([&](std::string_view text, bool started_over) { take(text, started_over, true); });
}

LogLineWait LogLineWatch::wait(double timeout_s, double poll_s) {
  Clock::time_point start = Clock::now();
  while (!interrupt_received()) {
    log_.read_new([&](std::string_view text, bool started_over) {
      if (!result_.line) take(text, started_over, false);
    });
    if (result_.line) break;
    if (seconds_since(start) >= timeout_s) break;
    Clock::time_point next =
        Clock::now() + std::chrono::milliseconds(static_cast<long>(poll_s * 1000));
    while (Clock::now() < next && seconds_since(start) < timeout_s && !interrupt_received())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  result_.waited_s = seconds_since(start);
  return result_;
}

CaptureResult write_stopped_bundle(const CaptureSpec& spec, const SessionOptions& session,
                                   NcuRunner& runner, const StoppedSequence& stopped,
                                   const std::string& bundle_path) {
  EvidenceBundle bundle(bundle_path);
  ManifestBuilder manifest(render::tool_json(session.argv));
  manifest.labels(session.campaign, session.cell_id, session.revision)
      .times(stopped.started_at, utc_time(), stopped.elapsed_s)
      .ncu_never_ran()
      .scope(spec)
      .progress(NcuProgress{})
      .warnings({})
      .diagnoses(stopped.diagnoses)
      .load(stopped.load);
  if (spec.attach) manifest.attach(*spec.attach, stopped.attach_details);
  runner.describe(manifest);
  if (interrupt_received()) manifest.incomplete("interrupted");
  manifest.failed();  // nothing was captured, whatever the diagnoses say
  CaptureResult outcome;
  outcome.incomplete = manifest.is_incomplete();
  outcome.failed = true;
  outcome.status = manifest.status();
  outcome.manifest = manifest.build();
  outcome.diagnoses = stopped.diagnoses;
  outcome.bundle_path =
      outcome.incomplete ? bundle.abandon(outcome.manifest) : bundle.commit(outcome.manifest);
  return outcome;
}

void keep_stopped_bundle(WarmCaptureResult& result, const CaptureSpec& spec,
                         const SessionOptions& session, NcuRunner& runner, StoppedSequence stopped,
                         int captures, const nlohmann::json& sequence,
                         const std::string& bundle_path) {
  stopped.diagnoses = result.diagnoses;
  stopped.attach_details["warm"] = {
      {"captures", captures}, {"stopped_before_capture", 1}, {"sequence", sequence}};
  try {
    result.stopped = write_stopped_bundle(spec, session, runner, stopped, bundle_path);
    result.incomplete = result.stopped->incomplete;  // as its bundle says
  } catch (const InputError& error) {
    // The diagnosis is what matters here; a bundle that cannot be written is said beside it.
    result.diagnoses.push_back(
        {"bundle_not_written", false,
         fmt::format("the bundle of the stopped sequence was not written: {}", error.what()),
         "the diagnoses above are all there is of this run"});
  }
}

namespace {

// One run of the warm sequence. Each step is a member that returns false once the sequence has
// stopped (its diagnosis recorded; the stopped sequence's bundle written when nothing was
// captured yet); run() takes them in order.
class WarmSequence {
 public:
  WarmSequence(const WarmCaptureSpec& spec, const SessionOptions& session,
               CaptureObserver& observer, const std::vector<std::string>& bundle_paths)
      : spec_(spec),
        session_(session),
        observer_(observer),
        bundle_paths_(bundle_paths),
        began_(Clock::now()),
        started_at_(utc_time()) {}

  WarmCaptureResult run() {
    watch_log_from_now();
    if (!hold_at_startup() || !wait_until_ready() || !warm_up()) return result_;
    for (int i = 1; i <= spec_.captures && !interrupt_received(); ++i) {
      if (!capture(i)) return result_;
      if (result_.failed || result_.incomplete) break;
    }
    // Interrupted between warm-up and the first capture: said, and its bundle kept, as anywhere
    // before.
    if (result_.captures.empty() && !result_.failed && interrupt_received()) {
      stop({"interrupted", true, "interrupted before the first capture began",
            "nothing was captured; the target keeps running (let go of it)"});
      return result_;
    }
    tree_->release_all();
    return result_;
  }

 private:
  void step(nlohmann::json entry) {
    entry["at_s"] = seconds_since(began_);
    sequence_.push_back(std::move(entry));
  }
  void note(const std::string& text) { observer_.note(text); }

  // Ends the sequence with a diagnosis; before the first capture, its own bundle records what it
  // did.
  bool stop(Diagnosis diagnosis) {
    result_.failed = true;
    result_.incomplete = interrupt_received();
    result_.diagnoses.push_back(std::move(diagnosis));
    if (!result_.captures.empty()) return false;
    StoppedSequence stopped;
    stopped.started_at = started_at_;
    stopped.elapsed_s = seconds_since(began_);
    if (tree_) stopped.attach_details = attach_details(*tree_, spec_.process);
    if (!readiness_.is_null()) stopped.load["readiness"] = readiness_;
    if (!warmup_.is_null()) stopped.load["warmup"] = warmup_;
    if (spec_.route) {
      nlohmann::json route = spec_.route();
      if (route.value("local_port", 0) > 0) stopped.load["route"] = std::move(route);
    }
    std::unique_ptr<NcuRunner> runner =
        spec_.runner_for ? spec_.runner_for(1) : std::make_unique<LocalNcuRunner>();
    keep_stopped_bundle(result_, spec_.capture, session_, *runner, std::move(stopped),
                        spec_.captures, sequence_, bundle_paths_.front());
    return false;
  }

  // The log as it is before anything is held: only what the server prints from now on tells
  // that it is ready.
  void watch_log_from_now() {
    log_ = spec_.log ? spec_.log : std::make_shared<FileLogFollower>(spec_.ready_log_file);
    if (spec_.ready_log_regex.empty()) return;
    log_watch_.emplace(*log_, spec_.ready_log_regex);
    log_watch_->skip_existing();
  }

  // 1. Start-up runs unprofiled: the target held with the filter that matches nothing.
  bool hold_at_startup() {
    tree_ = std::make_unique<ProcessTreeAttacher>(
        spec_.capture.ncu, *spec_.capture.attach, spec_.process,
        [this](const std::string& text) { note(text); },
        spec_.host.run_client ? spec_.host : local_tree_host(*spec_.capture.attach));
    note("warm: holding the target unprofiled while it starts (kernel filter matching nothing)");
    pid_ = tree_->find_target(spec_.attach_timeout_s);
    if (!pid_) {
      if (spec_.process)
        return stop(process_not_found(*spec_.process, *tree_, spec_.attach_timeout_s));
      std::string said = tree_->last_unconnected_said();
      return stop(
          {"warm_not_attached", true,
           fmt::format("no process waited for a profiler within {} s{}", spec_.attach_timeout_s,
                       said.empty() ? "" : " (the last attach client said: " + said + ")"),
           "start the server under `ncu --mode launch` (it waits at its first CUDA "
           "call), check --attach HOST, or allow more time with --attach-timeout"});
    }
    step({{"step", "released_at_startup"}, {"pid", *pid_}});
    // Through readiness and warm-up, whatever else starts to wait is held too (workers spawned
    // by the engine as it starts would otherwise wait, and its start-up with them).
    tree_->follow();
    return true;
  }

  // 2. Readiness: a new line of the log, or the health URL answering 200.
  bool wait_until_ready() {
    if (!(spec_.ready_log_regex.empty() ? wait_for_health() : wait_for_log_line())) return false;
    step({{"step", "ready"}, {"readiness", readiness_}});
    note(fmt::format("warm: ready after {} s", readiness_["waited_s"].get<double>()));
    return true;
  }

  bool wait_for_log_line() {
    const WarmCaptureSpec& spec = spec_;
    note(fmt::format("warm: waiting for a line matching /{}/ in {} (at most {} s)",
                     spec.ready_log_regex, spec.ready_log_file, spec.ready_timeout_s));
    LogLineWait line = log_watch_->wait(spec.ready_timeout_s, spec.log_poll_s);
    readiness_ = {{"signal", "log_line"},
                  {"file", spec.ready_log_file},
                  {"regex", spec.ready_log_regex},
                  {"ready", line.line.has_value()},
                  {"waited_s", line.waited_s}};
    if (!line.line) {
      if (interrupt_received()) {
        return stop({"interrupted", true,
                     fmt::format("interrupted while waiting for a line matching /{}/ in {}",
                                 spec.ready_log_regex, spec.ready_log_file),
                     "nothing was captured; the target keeps running (let go of it)"});
      }
      return stop(
          {"warm_not_ready", true,
           fmt::format(
               "the server did not become ready: no new line of {} matched /{}/ "
               "within {} s{}{}",
               spec.ready_log_file, spec.ready_log_regex, spec.ready_timeout_s,
               !log_->problem().empty() ? " (reading it failed: " + log_->problem() + ")" : "",
               line.earlier ? fmt::format(" (the log held one from before kprof began: "
                                          "\"{}\")",
                                          *line.earlier)
                            : ""),
           line.earlier ? "a server that is warm already prints no new line: wait on its health "
                          "endpoint (" +
                              spec.names.ready_url + ") instead"
                        : "check the log file and the pattern (the engine's own warm-up message), "
                          "or allow more time with --ready-timeout"});
    }
    readiness_["line"] = *line.line;
    return true;
  }

  bool wait_for_health() {
    const WarmCaptureSpec& spec = spec_;
    auto [base, path] = split_url(spec.ready_url);
    note(fmt::format("warm: waiting for {} to answer 200 (at most {} s)", spec.ready_url,
                     spec.ready_timeout_s));
    // wait_ready polls a flag; kprof's SIGINT/SIGTERM only set interrupt_received(), so a
    // watcher hands it over (Ctrl-C during this wait went unheard for --ready-timeout).
    std::atomic<bool> stopped{false}, waited{false};
    std::thread watcher([&] {
      while (!waited.load()) {
        if (interrupt_received()) {
          stopped.store(true);
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    // The key goes only to the host it was given for: a --ready-url elsewhere gets none.
    load::Readiness ready = load::wait_ready(
        base, path, spec.ready_timeout_s, &stopped,
        load::same_origin(spec.ready_url, spec.load.base_url) ? spec.load.api_key : "");
    waited.store(true);
    watcher.join();
    if (!ready.ready && interrupt_received()) {
      readiness_ = {{"signal", "http"},
                    {"url", spec.ready_url},
                    {"ready", false},
                    {"waited_s", std::round(ready.waited_s * 1000) / 1000},
                    {"why_not", "interrupted"}};
      return stop({"interrupted", true,
                   fmt::format("interrupted while waiting for {} to answer 200", spec.ready_url),
                   "nothing was captured; the target keeps running (let go of it)"});
    }
    readiness_ = {{"signal", "http"},
                  {"url", spec.ready_url},
                  {"ready", ready.ready},
                  {"waited_s", std::round(ready.waited_s * 1000) / 1000}};
    if (ready.ready) return true;
    readiness_["why_not"] = ready.why_not;
    // Through a port-forward the local error says little: what kubectl last said does.
    std::string route_said;
    if (spec.route) {
      nlohmann::json route = spec.route();
      std::string problem = route.value("last_problem", "");
      if (!problem.empty())
        route_said = fmt::format("; {} said: {}", route.value("via", "the route"), problem);
    }
    return stop({"warm_not_ready", true,
                 fmt::format("the server did not become ready: {} did not answer 200 "
                             "within {} s (last: {}{})",
                             spec.ready_url, spec.ready_timeout_s, ready.why_not, route_said),
                 "check the server's log (start-up held by another unattached process? "
                 "name it with --attach-process), the health endpoint (" +
                     spec.names.ready_url + "), or allow more time with --ready-timeout"});
  }

  // 3. Warm-up requests, all of which must complete within --warmup-timeout.
  bool warm_up() {
    const WarmCaptureSpec& spec = spec_;
    warmup_ = {{"requested", spec.warmup_requests}};
    model_ = spec.load.model;
    if (spec.warmup_requests <= 0) return true;
    load::LoadSpec warm = spec.load;
    warm.max_requests = spec.warmup_requests;
    warm.duration_s.reset();
    // --warmup-timeout bounds the whole warm-up: no request (the model's read included) may
    // outlive it, and what is in flight when it passes is cut off, not waited for.
    warm.request_timeout_s = std::min(warm.request_timeout_s, spec.warmup_timeout_s);
    note(fmt::format("warm: sending {} warm-up requests", spec.warmup_requests));
    load::LoadFigures figures;
    try {
      load::RequestDriver driver(warm);
      driver.start();
      model_ = driver.spec().model;
      Clock::time_point start = Clock::now();
      while (!driver.finished() && seconds_since(start) < spec.warmup_timeout_s &&
             !interrupt_received())
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      figures = interrupt_received() || !driver.finished() ? driver.abandon() : driver.stop();
    } catch (const load::LoadError& error) {
      return stop({"warmup_requests_failed", true,
                   fmt::format("the warm-up requests could not be sent: {}", error.what()),
                   "check " + spec.names.load_url +
                       " (where the server takes OpenAI requests), --model, and KPROF_API_KEY "
                       "for a server started with --api-key"});
    }
    warmup_["sent"] = figures.sent;
    warmup_["completed"] = figures.completed;
    warmup_["failed"] = figures.failed;
    warmup_["cancelled"] = figures.cancelled;
    warmup_["duration_s"] = figures.duration_s;
    step({{"step", "warmup"},
          {"sent", figures.sent},
          {"completed", figures.completed},
          {"failed", figures.failed}});
    if (interrupt_received()) {
      return stop({"interrupted", true,
                   fmt::format("interrupted during the warm-up requests ({} of {} completed, "
                               "{} cut off)",
                               figures.completed, spec.warmup_requests, figures.cancelled),
                   "nothing was captured; the target keeps running (let go of it)"});
    }
    if (figures.completed >= spec.warmup_requests) return true;
    return stop(
        {"warmup_requests_failed", true,
         fmt::format("{} of {} warm-up requests completed ({} failed{}{}) within {} s",
                     figures.completed, spec.warmup_requests, figures.failed, failure_text(figures),
                     figures.cancelled > 0
                         ? fmt::format(", {} cut off when the time was up", figures.cancelled)
                         : "",
                     spec.warmup_timeout_s),
         "check the server's log; a server slowed by the hold may need --warmup-timeout"});
  }

  // 4. Capture i while requests flow: held again (after the first), let go, the load started,
  // the real attach, the load stopped.
  bool capture(int i) {
    const WarmCaptureSpec& spec = spec_;
    ProcessTreeAttacher& tree = *tree_;
    // Between captures the target ran free: held again, and whatever started waiting since (a
    // worker spawned, a process a detach left waiting) held too, before it is let go.
    if (i > 1 && !tree.hold_target(spec.attach_timeout_s)) {
      return stop({"warm_target_not_held", true,
                   fmt::format("capture {}: the target (pid {}) did not wait for a profiler "
                               "again within {} s after the previous capture's detach",
                               i, *pid_, spec.attach_timeout_s),
                   "check that the server still runs (its log); the captures made so far "
                   "are kept"});
    }
    if (i > 1) step({{"step", "held_again"}, {"capture", i}});
    tree.stop_following();
    tree.hold_others();
    tree.release_target();
    step({{"step", "detached"}, {"capture", i}});
    load::LoadSpec serving = spec.load;
    serving.model = model_;
    serving.max_requests.reset();
    serving.duration_s.reset();
    std::unique_ptr<load::RequestDriver> driver;
    try {
      driver = std::make_unique<load::RequestDriver>(serving);
      driver->start();
    } catch (const load::LoadError& error) {
      return stop({"load_requests_failed", true,
                   fmt::format("the load for capture {} could not start: {}", i, error.what()),
                   "check " + spec.names.load_url + " and the server"});
    }
    // The real attach only once requests are in flight.
    Clock::time_point start = Clock::now();
    while (driver->in_flight() == 0 && driver->completed() == 0 && seconds_since(start) < 10)
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    step({{"step", "load_started"}, {"capture", i}, {"concurrency", serving.concurrency}});
    note(fmt::format("warm: capture {} of {} with {} request(s) in flight", i, spec.captures,
                     driver->in_flight()));
    SessionOptions options = session_;
    options.expected_pid = pid_;
    nlohmann::json sequence_so_far = sequence_;
    options.attach_details = [&tree, &spec, i, sequence_so_far] {
      nlohmann::json details = attach_details(tree, spec.process);
      details["warm"] = {
          {"capture", i}, {"captures", spec.captures}, {"sequence", sequence_so_far}};
      return details;
    };
    // The guard (or, without a limit, the bill alone): its baseline now that the load flows, its
    // probes while ncu runs, its after-probes before the load stops (the service as it was
    // during the capture, without ncu).
    std::unique_ptr<LatencyGuard> guard;
    if (spec.guard) {
      GuardSpec guard_spec = *spec.guard;
      if (guard_spec.probe.base_url.empty()) guard_spec.probe = serving;
      guard_spec.probe.model = model_;
      guard = std::make_unique<LatencyGuard>(guard_spec,
                                             [this](const std::string& text) { note(text); });
      std::optional<std::string> unguardable;
      try {
        unguardable = guard->measure_baseline();
      } catch (const load::LoadError& error) {
        if (guard_spec.armed()) {
          return stop(
              {"guard_not_ready", true,
               fmt::format("capture {}: the latency guard could not measure its baseline: {}", i,
                           error.what()),
               "check --guard-url (or --load-url) and KPROF_API_KEY"});
        }
        // The bill alone is no reason to give up a capture: this one goes without it.
        note(fmt::format("capture {}: no bill: its baseline could not be measured: {}", i,
                         error.what()));
        guard.reset();
      }
      if (unguardable)
        return stop({"guard_below_baseline", true, fmt::format("capture {}: {}", i, *unguardable),
                     "set --guard-p99-ms above the service's p99 under this load, or give "
                     "--guard-factor (a multiple of it)"});
    }
    if (guard) {
      guard->start_watching();
      // Without a limit the bill alone: nothing stops the capture.
      if (spec.guard->armed()) options.guard = [&guard] { return guard->check(); };
      options.service_cost = [&guard] { return guard->bill(std::nullopt); };
    }
    options.load = [&](std::vector<Diagnosis>& diagnoses) {
      if (guard) {
        guard->stop_watching();
        guard->measure_after();
      }
      return stop_load(*driver, diagnoses);
    };
    std::unique_ptr<NcuRunner> runner =
        spec.runner_for ? spec.runner_for(i) : std::make_unique<LocalNcuRunner>();
    CaptureResult capture =
        CaptureSession(spec.capture, options, *runner, observer_).run(bundle_paths_[i - 1]);
    driver.reset();
    step({{"step", "captured"}, {"capture", i}, {"status", capture.status}});
    // The guard stopped this capture (its bundle incomplete, which ends the sequence): the next
    // would hurt the service the same way.
    if (guard && guard->fired() && i < spec.captures)
      note(fmt::format("warm: the latency guard fired: captures {} to {} not made", i + 1,
                       spec.captures));
    result_.failed |= capture.failed;
    result_.incomplete |= capture.incomplete;
    result_.bundle_paths.push_back(capture.bundle_path);
    result_.captures.push_back(std::move(capture));
    return true;
  }

  // Once ncu has ended: the load stopped (cut off when interrupted), diagnosed when requests
  // failed or none completed, and the manifest's load block.
  nlohmann::json stop_load(load::RequestDriver& driver, std::vector<Diagnosis>& diagnoses) {
    load::LoadFigures figures = interrupt_received() ? driver.abandon() : driver.stop();
    note(
        fmt::format("warm: load stopped: {} sent, {} completed, {} failed{}", figures.sent,
                    figures.completed, figures.failed,
                    figures.cancelled > 0 ? fmt::format(", {} cancelled", figures.cancelled) : ""));
    if (figures.failed > 0 || figures.completed == 0) {
      diagnoses.push_back(
          {"load_requests_failed", true,
           fmt::format("{} of {} requests sent during the capture failed{}, {} completed",
                       figures.failed, figures.sent, failure_text(figures), figures.completed),
           "a capture under ncu is slow, but requests must not fail: check the server's log "
           "and the request timeout; lower --load-concurrency"});
    }
    nlohmann::json block = render::load_figures_json(figures);
    block["warmup"] = warmup_;
    block["readiness"] = readiness_;
    if (spec_.route) block["route"] = spec_.route();
    return block;
  }

  const WarmCaptureSpec& spec_;
  const SessionOptions& session_;
  CaptureObserver& observer_;
  const std::vector<std::string>& bundle_paths_;
  Clock::time_point began_;
  std::string started_at_;
  WarmCaptureResult result_;
  nlohmann::json sequence_ = nlohmann::json::array();
  // What the steps learned, for the captures' bundles (or the one of a sequence that stops).
  nlohmann::json readiness_, warmup_;
  std::shared_ptr<LogFollower> log_;
  std::optional<LogLineWatch> log_watch_;
  std::unique_ptr<ProcessTreeAttacher> tree_;
  std::optional<int> pid_;
  std::string model_;
};

}  // namespace

WarmCaptureResult run_warm_capture(const WarmCaptureSpec& spec, const SessionOptions& session,
                                   CaptureObserver& observer,
                                   const std::vector<std::string>& bundle_paths) {
  if (bundle_paths.size() != static_cast<size_t>(spec.captures))
    throw std::logic_error("run_warm_capture: one bundle path per capture");
  return WarmSequence(spec, session, observer, bundle_paths).run();
}

}  // namespace kprof::capture
