// The warm capture sequence (issue 20): a serving engine's start-up runs unprofiled, then the
// capture attaches while requests flow, so the kernels captured are serving kernels with
// serving shapes. Steps, each bounded by a timeout and diagnosed by name when it does not happen:
//   1. hold the target with an attach client that profiles nothing (`kReleaseFilter`): its
//      start-up proceeds (other processes of the tree are held the same way, the named one found);
//   2. wait for readiness (an HTTP health URL answering 200, or a line of a log file);
//   3. send warm-up requests (all must complete);
//   4. for each of N captures: let go of the hold, start the load, attach with the real filter
//      (--launch-skip counts within it), detach, stop the load; one bundle per capture.
// `kprof capture --attach … --load-url …` runs it locally; the k8s sister can run it in a pod.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "capture/attach_targets.h"
#include "capture/capture_session.h"
#include "capture/latency_guard.h"
#include "load/request_driver.h"

namespace re2 {
class RE2;
}  // namespace re2

namespace kprof::capture {

// A log read as it grows, never whole again: each read_new() hands over what the log gained since
// the previous one, in pieces. When the log started over (shorter than what was read, or another
// file at the name) it is handed over from its start, its first piece flagged.
class LogFollower {
 public:
  using OnText = std::function<void(std::string_view text, bool log_started_over)>;
  virtual ~LogFollower() = default;
  virtual void read_new(const OnText& on_text) = 0;
  // Why the last read failed ("" when it did not).
  virtual std::string problem() const { return {}; }
};

// A file on this machine followed from where the last read ended (read in 1 MiB pieces, so a
// log of gigabytes costs its new bytes at each poll, not its size).
class FileLogFollower final : public LogFollower {
 public:
  explicit FileLogFollower(std::string path) : path_(std::move(path)) {}
  void read_new(const OnText& on_text) override;
  std::string problem() const override { return problem_; }
  std::uint64_t bytes_read() const { return bytes_read_; }  // in all, for the tests

 private:
  std::string path_, problem_;
  std::uint64_t offset_ = 0, bytes_read_ = 0;
  std::uint64_t device_ = 0, inode_ = 0;
  bool started_over_ = false;  // said with the next piece read
};

// A log that can only be fetched whole (`kubectl logs`), handed over as what it gained.
class WholeTextLogFollower final : public LogFollower {
 public:
  // read: the whole log now (nullopt when it could not be read: nothing changed, which is not
  // a log that started over); problem: why not, if it failed.
  WholeTextLogFollower(std::function<std::optional<std::string>()> read,
                       std::function<std::string()> problem)
      : read_(std::move(read)), problem_(std::move(problem)) {}
  void read_new(const OnText& on_text) override;
  std::string problem() const override { return problem_ ? problem_() : std::string(); }

 private:
  std::function<std::optional<std::string>()> read_;
  std::function<std::string()> problem_;
  size_t seen_ = 0;
  bool started_over_ = false;  // said with the next piece read
};

struct WarmCaptureSpec {
  CaptureSpec capture;  // attach set; the real filter
  std::optional<ProcessSelector> process;
  // Where the tree runs (unset: this machine, local_tree_host) and the runner of each capture
  // (1-based; unset: LocalNcuRunner).
  TreeHost host;
  std::function<std::unique_ptr<NcuRunner>(int capture)> runner_for;
  double attach_timeout_s = 120;
  std::string ready_url;                        // GET until 200 (when no log line is named)
  std::string ready_log_file, ready_log_regex;  // or: a line matching REGEX in this log
  // How the log is read (unset: ready_log_file followed on this machine); ready_log_file then
  // only names it in messages (a pod's container log).
  std::shared_ptr<LogFollower> log;
  double log_poll_s = 0.2;  // between reads (a pod's log is fetched whole each time: longer)
  double ready_timeout_s = 600;
  load::LoadSpec load;  // base_url, concurrency, lengths, api (no budget: runs per capture)
  int warmup_requests = 16;
  double warmup_timeout_s = 600;
  int captures = 1;
  // The latency guard (issue 41): per capture, its baseline taken once the load flows, its
  // probes while ncu runs (stopping ncu when the service suffers), its after-probes before the
  // load stops; the bill in each bundle's "service" block. Its probe's URL is the load's unless
  // set (--guard-url). Unset: no guard.
  std::optional<GuardSpec> guard;
  // How the requests reach the server, when not directly (a kubectl port-forward): the load
  // block's "route", asked when each manifest is built.
  std::function<nlohmann::json()> route;
  // The caller's options that set where requests go and how readiness is asked, for the hints.
  struct OptionNames {
    std::string ready_url = "--ready-url", load_url = "--load-url";
  } names;
};

struct WarmCaptureResult {
  std::vector<CaptureResult> captures;
  std::vector<Diagnosis> diagnoses;  // the sequence's own, when it stopped before a capture
  std::vector<std::string> bundle_paths;
  bool failed = false, incomplete = false;
  // Stopped before its first capture: the bundle of what it did (write_stopped_bundle), at the
  // first bundle path.
  std::optional<CaptureResult> stopped;
};

// What a warm sequence knew when it stopped before its first capture.
struct StoppedSequence {
  std::vector<Diagnosis> diagnoses;  // why it stopped
  std::string started_at;            // utc_time() when the sequence began
  double elapsed_s = 0;
  // The attach block's details (the holds, the sequence's steps) and the load block (readiness,
  // warm-up, the route), as far as the sequence got.
  nlohmann::json attach_details = nlohmann::json::object();
  nlohmann::json load = nlohmann::json::object();
};

// The bundle of a warm sequence that stopped before its first capture, so that what it learned
// is kept like any capture's: status failed (incomplete when interrupted), its diagnoses, the
// holds and steps, readiness and warm-up, where it ran (runner.describe: the kubernetes block);
// ncu null and nothing profiled, as the capture's ncu never ran. No report, no analysis.
CaptureResult write_stopped_bundle(const CaptureSpec& spec, const SessionOptions& session,
                                   NcuRunner& runner, const StoppedSequence& stopped,
                                   const std::string& bundle_path);
// write_stopped_bundle for a sequence of `captures` stopped at `result`'s diagnoses after the
// steps `sequence`: the bundle into result.stopped (result.incomplete as it says), or a
// bundle_not_written warning beside the diagnoses when it cannot be written. What both the local
// sequence and the pod's (its port-forward failed) call.
void keep_stopped_bundle(WarmCaptureResult& result, const CaptureSpec& spec,
                         const SessionOptions& session, NcuRunner& runner, StoppedSequence stopped,
                         int captures, const nlohmann::json& sequence,
                         const std::string& bundle_path);

// Runs the sequence, capture i into bundle_paths[i - 1] (spec.captures of them; their folder
// exists). Notes go to observer.note.
WarmCaptureResult run_warm_capture(const WarmCaptureSpec& spec, const SessionOptions& session,
                                   CaptureObserver& observer,
                                   const std::vector<std::string>& bundle_paths);

// Waiting for a line of a log: skip_existing() reads what the log holds when the sequence
// begins (before the target is held: the server cannot print its line since) and remembers a
// matching line from then as `earlier`, for the diagnosis when no new one comes (the server may
// be warm already); wait() then polls for the first line matching regex that the log gains. A
// line half-written at the first read counts once it is whole; a log that starts over is read
// from its start. Lines are read as they come, so memory is one line, not the log (a line
// longer than 1 MiB is matched on its first MiB).
struct LogLineWait {
  std::optional<std::string> line, earlier;
  double waited_s = 0;
};
class LogLineWatch {
 public:
  LogLineWatch(LogFollower& log, const std::string& regex);
  ~LogLineWatch();
  LogLineWatch(const LogLineWatch&) = delete;
  LogLineWatch& operator=(const LogLineWatch&) = delete;
  void skip_existing();
  LogLineWait wait(double timeout_s, double poll_s = 0.2);

 private:
  void take(std::string_view text, bool started_over, bool existing);
  LogFollower& log_;
  std::unique_ptr<re2::RE2> pattern_;
  std::string partial_;  // the line being written
  LogLineWait result_;
};

}  // namespace kprof::capture
