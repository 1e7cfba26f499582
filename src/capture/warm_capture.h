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

#include <functional>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "capture/attach_targets.h"
#include "capture/capture_session.h"
#include "load/request_driver.h"

namespace kprof::capture {

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
  // The log's text so far (unset: ready_log_file read from this machine); ready_log_file then
  // only names it in messages (a pod's container log).
  std::function<std::string()> read_log;
  double log_poll_s = 0.2;  // between reads (a pod's log is fetched whole each time: longer)
  std::function<std::string()> log_problem;  // why read_log came back empty last, if it failed
  double ready_timeout_s = 600;
  load::LoadSpec load;  // base_url, concurrency, lengths, api (no budget: runs per capture)
  int warmup_requests = 16;
  double warmup_timeout_s = 600;
  int captures = 1;
  // The manifest's load block from the driver's figures (render's, handed in: capture does not
  // link render).
  std::function<nlohmann::json(const load::LoadFigures&)> figures_json;
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

// The first line matching regex that read()'s text gains over `before` (the text when the
// sequence began, before the target was held) within timeout_s (polled). Only the added text
// counts: a log appended to across runs holds an earlier run's line, and the held target could
// not print one since. `earlier` is such a line, for the diagnosis when none came (the server may
// be warm already). A text shorter than `before` (a log started over) is read from its start.
struct LogLineWait {
  std::optional<std::string> line, earlier;
  double waited_s = 0;
};
LogLineWait wait_for_log_line(const std::function<std::string()>& read, const std::string& regex,
                              double timeout_s, const std::string& before, double poll_s = 0.2);
// A file's whole text as it is now ("" when it cannot be read).
std::string read_log_file(const std::string& path);

}  // namespace kprof::capture
