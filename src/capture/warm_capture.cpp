#include "capture/warm_capture.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <fstream>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <thread>

#include "capture/bundle_manifest.h"
#include "capture/evidence_bundle.h"
#include "common/child_process.h"
#include "common/error.h"
#include "common/text.h"

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

std::string read_log_file(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

LogLineWait wait_for_log_line(const std::function<std::string()>& read, const std::string& regex,
                              double timeout_s, const std::string& before, double poll_s) {
  RE2 pattern(regex, RE2::Quiet);
  Clock::time_point start = Clock::now();
  LogLineWait wait;
  auto first_match = [&](std::string_view text) -> std::optional<std::string> {
    std::istringstream in{std::string(text)};
    for (std::string line; std::getline(in, line);)
      if (RE2::PartialMatch(line, pattern)) return line;
    return std::nullopt;
  };
  wait.earlier = first_match(before);
  // Where new text begins: a line being written at the first read counts once it is whole.
  size_t seen = before.rfind('\n') == std::string::npos ? 0 : before.rfind('\n') + 1;
  while (!interrupt_received()) {
    std::string text = read();
    if (text.size() < seen) seen = 0;
    if ((wait.line = first_match(std::string_view(text).substr(seen)))) break;
    if (seconds_since(start) >= timeout_s) break;
    Clock::time_point next =
        Clock::now() + std::chrono::milliseconds(static_cast<long>(poll_s * 1000));
    while (Clock::now() < next && seconds_since(start) < timeout_s && !interrupt_received())
      std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  wait.waited_s = seconds_since(start);
  return wait;
}

CaptureResult write_stopped_bundle(const CaptureSpec& spec, const SessionOptions& session,
                                   NcuRunner& runner, const StoppedSequence& stopped,
                                   const std::string& bundle_path) {
  EvidenceBundle bundle(bundle_path);
  ManifestBuilder manifest(session.tool);
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

WarmCaptureResult run_warm_capture(const WarmCaptureSpec& spec, const SessionOptions& session,
                                   CaptureObserver& observer,
                                   const std::vector<std::string>& bundle_paths) {
  if (bundle_paths.size() != static_cast<size_t>(spec.captures))
    throw std::logic_error("run_warm_capture: one bundle path per capture");
  WarmCaptureResult result;
  Clock::time_point began = Clock::now();
  std::string started_at = utc_time();
  nlohmann::json sequence = nlohmann::json::array();
  auto step = [&](nlohmann::json entry) {
    entry["at_s"] = seconds_since(began);
    sequence.push_back(std::move(entry));
  };
  // What the steps learned, for the captures' bundles (or the one of a sequence that stops).
  nlohmann::json readiness, warmup;
  const ProcessTreeAttacher* held_tree = nullptr;
  auto stop_with = [&](Diagnosis diagnosis) {
    result.failed = true;
    result.incomplete = interrupt_received();
    result.diagnoses.push_back(std::move(diagnosis));
    if (result.captures.empty()) {
      StoppedSequence stopped;
      stopped.started_at = started_at;
      stopped.elapsed_s = seconds_since(began);
      if (held_tree) stopped.attach_details = attach_details(*held_tree, spec.process);
      if (!readiness.is_null()) stopped.load["readiness"] = readiness;
      if (!warmup.is_null()) stopped.load["warmup"] = warmup;
      if (spec.route) {
        nlohmann::json route = spec.route();
        if (route.value("local_port", 0) > 0) stopped.load["route"] = std::move(route);
      }
      std::unique_ptr<NcuRunner> runner =
          spec.runner_for ? spec.runner_for(1) : std::make_unique<LocalNcuRunner>();
      keep_stopped_bundle(result, spec.capture, session, *runner, std::move(stopped), spec.captures,
                          sequence, bundle_paths.front());
    }
    return result;
  };
  auto note = [&](const std::string& text) { observer.note(text); };

  // The log as it is before anything is held: only what the server prints from now on tells
  // that it is ready.
  std::function<std::string()> read_log =
      spec.read_log ? spec.read_log : [&spec] { return read_log_file(spec.ready_log_file); };
  std::string log_before = spec.ready_log_regex.empty() ? "" : read_log();

  // 1. Start-up runs unprofiled: the target held with the filter that matches nothing.
  ProcessTreeAttacher tree(
      spec.capture.ncu, *spec.capture.attach, spec.process, note,
      spec.host.run_client ? spec.host : local_tree_host(*spec.capture.attach));
  held_tree = &tree;
  note("warm: holding the target unprofiled while it starts (kernel filter matching nothing)");
  std::optional<int> pid = tree.find_target(spec.attach_timeout_s);
  if (!pid) {
    if (spec.process)
      return stop_with(process_not_found(*spec.process, tree, spec.attach_timeout_s));
    std::string said = tree.last_unconnected_said();
    return stop_with(
        {"warm_not_attached", true,
         fmt::format("no process waited for a profiler within {} s{}", spec.attach_timeout_s,
                     said.empty() ? "" : " (the last attach client said: " + said + ")"),
         "start the server under `ncu --mode launch` (it waits at its first CUDA "
         "call), check --attach HOST, or allow more time with --attach-timeout"});
  }
  step({{"step", "released_at_startup"}, {"pid", *pid}});
  // Through readiness and warm-up, whatever else starts to wait is held too (workers spawned by
  // the engine as it starts would otherwise wait, and its start-up with them).
  tree.follow();

  // 2. Readiness.
  if (!spec.ready_log_regex.empty()) {
    note(fmt::format("warm: waiting for a line matching /{}/ in {} (at most {} s)",
                     spec.ready_log_regex, spec.ready_log_file, spec.ready_timeout_s));
    LogLineWait line = wait_for_log_line(read_log, spec.ready_log_regex, spec.ready_timeout_s,
                                         log_before, spec.log_poll_s);
    readiness = {{"signal", "log_line"},
                 {"file", spec.ready_log_file},
                 {"regex", spec.ready_log_regex},
                 {"ready", line.line.has_value()},
                 {"waited_s", line.waited_s}};
    if (!line.line) {
      if (interrupt_received()) {
        return stop_with({"interrupted", true,
                          fmt::format("interrupted while waiting for a line matching /{}/ in {}",
                                      spec.ready_log_regex, spec.ready_log_file),
                          "nothing was captured; the target keeps running (let go of it)"});
      }
      return stop_with(
          {"warm_not_ready", true,
           fmt::format("the server did not become ready: no new line of {} matched /{}/ "
                       "within {} s{}{}",
                       spec.ready_log_file, spec.ready_log_regex, spec.ready_timeout_s,
                       spec.log_problem && !spec.log_problem().empty()
                           ? " (reading it failed: " + spec.log_problem() + ")"
                           : "",
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
    readiness["line"] = *line.line;
  } else {
    auto [base, path] = split_url(spec.ready_url);
    note(fmt::format("warm: waiting for {} to answer 200 (at most {} s)", spec.ready_url,
                     spec.ready_timeout_s));
    // wait_ready polls a flag; kprof's SIGINT/SIGTERM only set interrupt_received(), so a
    // watcher hands it over (Ctrl-C during this wait went unheard for --ready-timeout).
    std::atomic<bool> stop{false}, waited{false};
    std::thread watcher([&] {
      while (!waited.load()) {
        if (interrupt_received()) {
          stop.store(true);
          return;
        }
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      }
    });
    load::Readiness ready =
        load::wait_ready(base, path, spec.ready_timeout_s, &stop, spec.load.api_key);
    waited.store(true);
    watcher.join();
    if (!ready.ready && interrupt_received()) {
      readiness = {{"signal", "http"},
                   {"url", spec.ready_url},
                   {"ready", false},
                   {"waited_s", std::round(ready.waited_s * 1000) / 1000},
                   {"why_not", "interrupted"}};
      return stop_with(
          {"interrupted", true,
           fmt::format("interrupted while waiting for {} to answer 200", spec.ready_url),
           "nothing was captured; the target keeps running (let go of it)"});
    }
    readiness = {{"signal", "http"},
                 {"url", spec.ready_url},
                 {"ready", ready.ready},
                 {"waited_s", std::round(ready.waited_s * 1000) / 1000}};
    if (!ready.ready) {
      readiness["why_not"] = ready.why_not;
      // Through a port-forward the local error says little: what kubectl last said does.
      std::string route_said;
      if (spec.route) {
        nlohmann::json route = spec.route();
        std::string problem = route.value("last_problem", "");
        if (!problem.empty())
          route_said = fmt::format("; {} said: {}", route.value("via", "the route"), problem);
      }
      return stop_with(
          {"warm_not_ready", true,
           fmt::format("the server did not become ready: {} did not answer 200 "
                       "within {} s (last: {}{})",
                       spec.ready_url, spec.ready_timeout_s, ready.why_not, route_said),
           "check the server's log (start-up held by another unattached process? "
           "name it with --attach-process), the health endpoint (" +
               spec.names.ready_url + "), or allow more time with --ready-timeout"});
    }
  }
  step({{"step", "ready"}, {"readiness", readiness}});
  note(fmt::format("warm: ready after {} s", readiness["waited_s"].get<double>()));

  // 3. Warm-up requests, all of which must complete.
  warmup = {{"requested", spec.warmup_requests}};
  std::string model = spec.load.model;
  if (spec.warmup_requests > 0) {
    load::LoadSpec warm = spec.load;
    warm.max_requests = spec.warmup_requests;
    warm.duration_s.reset();
    note(fmt::format("warm: sending {} warm-up requests", spec.warmup_requests));
    load::LoadFigures figures;
    try {
      load::RequestDriver driver(warm);
      driver.start();
      model = driver.spec().model;
      Clock::time_point start = Clock::now();
      while (!driver.finished() && seconds_since(start) < spec.warmup_timeout_s &&
             !interrupt_received())
        std::this_thread::sleep_for(std::chrono::milliseconds(100));
      figures = interrupt_received() ? driver.abandon() : driver.stop();
    } catch (const load::LoadError& error) {
      return stop_with({"warmup_requests_failed", true,
                        fmt::format("the warm-up requests could not be sent: {}", error.what()),
                        "check " + spec.names.load_url +
                            " (where the server takes OpenAI requests), --model, and KPROF_API_KEY "
                            "for a server started with --api-key"});
    }
    warmup["sent"] = figures.sent;
    warmup["completed"] = figures.completed;
    warmup["failed"] = figures.failed;
    warmup["cancelled"] = figures.cancelled;
    warmup["duration_s"] = figures.duration_s;
    step({{"step", "warmup"},
          {"sent", figures.sent},
          {"completed", figures.completed},
          {"failed", figures.failed}});
    if (interrupt_received()) {
      return stop_with({"interrupted", true,
                        fmt::format("interrupted during the warm-up requests ({} of {} completed, "
                                    "{} cut off)",
                                    figures.completed, spec.warmup_requests, figures.cancelled),
                        "nothing was captured; the target keeps running (let go of it)"});
    }
    if (figures.completed < spec.warmup_requests) {
      return stop_with(
          {"warmup_requests_failed", true,
           fmt::format("{} of {} warm-up requests completed ({} failed{}) within {} s",
                       figures.completed, spec.warmup_requests, figures.failed,
                       failure_text(figures), spec.warmup_timeout_s),
           "check the server's log; a server slowed by the hold may need --warmup-timeout"});
    }
  }

  // 4. The captures, each while requests flow.
  load::LoadSpec serving = spec.load;
  serving.model = model;
  serving.max_requests.reset();
  serving.duration_s.reset();
  for (int i = 1; i <= spec.captures && !interrupt_received(); ++i) {
    // Between captures the target ran free: held again, and whatever started waiting since
    // (a worker spawned, a process a detach left waiting) held too, before it is let go.
    if (i > 1 && !tree.hold_target(spec.attach_timeout_s)) {
      return stop_with({"warm_target_not_held", true,
                        fmt::format("capture {}: the target (pid {}) did not wait for a profiler "
                                    "again within {} s after the previous capture's detach",
                                    i, *pid, spec.attach_timeout_s),
                        "check that the server still runs (its log); the captures made so far "
                        "are kept"});
    }
    if (i > 1) step({{"step", "held_again"}, {"capture", i}});
    tree.stop_following();
    tree.hold_others();
    tree.release_target();
    step({{"step", "detached"}, {"capture", i}});
    std::unique_ptr<load::RequestDriver> driver;
    try {
      driver = std::make_unique<load::RequestDriver>(serving);
      driver->start();
    } catch (const load::LoadError& error) {
      return stop_with({"load_requests_failed", true,
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
    SessionOptions options = session;
    options.expected_pid = pid;
    nlohmann::json sequence_so_far = sequence;
    options.attach_details = [&tree, &spec, i, sequence_so_far] {
      nlohmann::json details = attach_details(tree, spec.process);
      details["warm"] = {
          {"capture", i}, {"captures", spec.captures}, {"sequence", sequence_so_far}};
      return details;
    };
    options.load = [&](std::vector<Diagnosis>& diagnoses) {
      // Interrupted: the requests in flight are cut off, not waited for.
      load::LoadFigures figures = interrupt_received() ? driver->abandon() : driver->stop();
      note(fmt::format(
          "warm: load stopped: {} sent, {} completed, {} failed{}", figures.sent, figures.completed,
          figures.failed,
          figures.cancelled > 0 ? fmt::format(", {} cancelled", figures.cancelled) : ""));
      if (figures.failed > 0 || figures.completed == 0) {
        diagnoses.push_back(
            {"load_requests_failed", true,
             fmt::format("{} of {} requests sent during the capture failed{}, {} completed",
                         figures.failed, figures.sent, failure_text(figures), figures.completed),
             "a capture under ncu is slow, but requests must not fail: check the server's log "
             "and the request timeout; lower --load-concurrency"});
      }
      nlohmann::json block =
          spec.figures_json ? spec.figures_json(figures) : nlohmann::json::object();
      block["warmup"] = warmup;
      block["readiness"] = readiness;
      if (spec.route) block["route"] = spec.route();
      return block;
    };
    std::unique_ptr<NcuRunner> runner =
        spec.runner_for ? spec.runner_for(i) : std::make_unique<LocalNcuRunner>();
    CaptureResult capture =
        CaptureSession(spec.capture, options, *runner, observer).run(bundle_paths[i - 1]);
    driver.reset();
    step({{"step", "captured"}, {"capture", i}, {"status", capture.status}});
    result.failed |= capture.failed;
    result.incomplete |= capture.incomplete;
    result.bundle_paths.push_back(capture.bundle_path);
    result.captures.push_back(std::move(capture));
    if (result.failed || result.incomplete) break;
  }
  // Interrupted between warm-up and the first capture: said, and its bundle kept, as anywhere
  // before.
  if (result.captures.empty() && !result.failed && interrupt_received()) {
    return stop_with({"interrupted", true, "interrupted before the first capture began",
                      "nothing was captured; the target keeps running (let go of it)"});
  }
  tree.release_all();
  return result;
}

}  // namespace kprof::capture
