// One capture, wherever ncu runs: ncu started through an NcuRunner (locally, or inside a pod
// through kubectl exec — ninja's CommandRunner is the model), its output read as it arrives by
// one NcuProgressParser, progress reported to a CaptureObserver, what went wrong classified by
// `diagnose` (the one classification), the report fetched, exported and analysed, and the
// evidence bundle written with one ManifestBuilder. `kprof capture` and `kprof k8s` both run it.
#pragma once

#include <chrono>
#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "capture/bundle_manifest.h"
#include "capture/evidence_bundle.h"
#include "capture/ncu_command.h"
#include "capture/ncu_diagnosis.h"
#include "capture/ncu_progress.h"
#include "common/child_process.h"
#include "model/report.h"
#include "pipeline/analyze.h"

namespace kprof::capture {

// How ncu is run. The session hands over ncu's argv as it runs where ncu is; on_line gets every
// line as it arrives; on_tick (an attach capture) may ask for the stop that detaches.
class NcuRunner {
 public:
  virtual ~NcuRunner() = default;
  // Blocks until ncu ends. stop_requested: kprof (the session, or the runner itself) detached it.
  virtual ChildResult run(const ChildRequest& request) = 0;
  // The --export path ncu is given (ncu appends .ncu-rep), for a report that belongs in `bundle`.
  virtual std::string export_path(const EvidenceBundle& bundle) = 0;
  // Brings the report ncu wrote (`written`) to `local`; a diagnosis when it could not.
  virtual std::optional<Diagnosis> fetch_report(const std::string& written,
                                                const std::string& local) = 0;
  // After detaching: are the processes ncu was connected to (`pids`, from its "Connected to
  // process PID" lines) still running? std::nullopt: cannot tell from here.
  virtual std::optional<bool> target_still_there(const AttachEndpoint& endpoint,
                                                 const std::vector<int>& pids) = 0;
  // What the runner adds to the manifest (where it ran: the `kubernetes` block).
  virtual void describe(ManifestBuilder& manifest) const = 0;
};

// ncu on this machine, through run_child; the report is written straight into the bundle.
class LocalNcuRunner : public NcuRunner {
 public:
  ChildResult run(const ChildRequest& request) override;
  std::string export_path(const EvidenceBundle& bundle) override;
  std::optional<Diagnosis> fetch_report(const std::string&, const std::string&) override {
    return std::nullopt;
  }
  std::optional<bool> target_still_there(const AttachEndpoint& endpoint,
                                         const std::vector<int>& pids) override;
  void describe(ManifestBuilder&) const override {}
};

// Whether the process `pid` of this machine runs: it exists and is not a zombie.
bool process_running(int pid, const std::string& proc_root = "/proc");
// Whether HOST names this machine (loopback, or this machine's own host name).
bool is_local_host(const std::string& host);

// What a capture tells while it runs. Every method has a default that ignores it.
class CaptureObserver {
 public:
  virtual ~CaptureObserver() = default;
  // ncu is about to start: the command, the refusals' warnings, where the bundle will be.
  virtual void started(const NcuCommand& /*command*/, const std::string& /*bundle_path*/) {}
  virtual void process_connected(const std::string& /*line*/) {}
  // Kernel `index` (1-based) of `expected` (when a launch count is known) finished profiling.
  virtual void kernel_profiled(size_t /*index*/, std::optional<std::int64_t> /*expected*/,
                               const std::string& /*name*/, std::optional<int> /*passes*/) {}
  virtual void ncu_message(const std::string& /*line*/) {}  // "==ERROR==", "==WARNING=="
  virtual void detaching() {}
  virtual void detached(std::optional<bool> /*target_still_there*/) {}
  virtual void note(const std::string& /*text*/) {}  // an export left out, a copy retried, …
};

// The verdicts of a bundle's report (the analyze pipeline); std::nullopt when the report selects
// no kernel. Throws InputError when the report cannot be read.
using BundleAnalysis = pipeline::BundleAnalysis;
using BundleAnalyzer = std::function<std::optional<BundleAnalysis>(const std::string& report)>;

struct SessionOptions {
  std::vector<std::pair<std::string, std::string>> env;  // set on ncu's process
  double timeout_s = 0;                                  // 0: none
  std::string ncu_version;                               // the banner, for the manifest
  std::string export_ncu;         // a local ncu for the report's CSV exports; "" leaves them out
  std::vector<std::string> argv;  // kprof's own, for the manifest's "tool" head
  std::string campaign, cell_id, revision;
  // The bundle's analysis.json (a test's own stands in; unset: none).
  BundleAnalyzer analyze = pipeline::analyze_for_bundle;
  // Attached to one process of a tree: the pid meant (a failure when ncu connected to another),
  // what the manifest's attach block records beyond the endpoint (asked when the manifest is
  // built: the steering steps so far) and the load that ran.
  std::optional<int> expected_pid;
  std::function<nlohmann::json()> attach_details;
  // Called once ncu has ended, before the manifest is built: stops the load, may add its
  // diagnoses, returns the "load" block.
  std::function<nlohmann::json(std::vector<Diagnosis>&)> load;
  // The plan the capture ran by (capture --trace: capture_plan.h's plan_for_bundle), recorded
  // with the measured ncu wall time beside the predicted one; null: none.
  nlohmann::json plan;
  // The latency guard (issue 41, latency_guard.h): asked about every 100 ms while ncu runs; a
  // reason stops ncu (SIGINT to its process group: an attach client detaches, a launched target
  // stops) and the bundle is kept, incomplete, with that reason. Unset: no guard.
  std::function<std::optional<std::string>()> guard;
  // Called once ncu has ended: what the capture cost the service (the manifest's "service"
  // block: latency before, during and after, the longest stall, ncu's hold, the guard).
  std::function<nlohmann::json()> service_cost;
};

struct CaptureResult {
  std::string status;  // "ok", "failed", "incomplete"
  bool failed = false, incomplete = false;
  std::vector<Diagnosis> diagnoses;
  NcuProgress progress;
  ChildResult ncu;
  std::string bundle_path;     // where the bundle is (FINAL or FINAL.incomplete)
  std::string analysis_table;  // naming the bundle where it is; "" without an analysis
  nlohmann::json manifest;
};

class CaptureSession {
 public:
  // spec.ncu is ncu where the runner runs it; spec.export_path is set by the session.
  CaptureSession(CaptureSpec spec, SessionOptions options, NcuRunner& runner,
                 CaptureObserver& observer);
  // Runs the capture into a new bundle at bundle_path (EvidenceBundle's rules: refused when
  // something is there). Throws std::invalid_argument for a refused capture (callers check the
  // spec with build_ncu_command first) and InputError for a bundle that cannot be written.
  CaptureResult run(const std::string& bundle_path);

 private:
  // The steps of run() that are more than a call: what kprof's own stop of ncu means, and the
  // bundle's analysis with its check of the metrics asked for.
  void add_stop_diagnoses(const CaptureSpec& spec, const ChildResult& result, bool detached,
                          const std::vector<int>& pids, std::vector<Diagnosis>& diagnoses);
  void analyze_report(const CaptureSpec& spec, const std::string& report_file,
                      std::string& analysis_text, std::string& analysis_json,
                      std::vector<Diagnosis>& diagnoses);

  CaptureSpec spec_;
  SessionOptions options_;
  NcuRunner& runner_;
  CaptureObserver& observer_;
};

// ncu's own exports of the report into the bundle: raw.csv (--page raw) and speed_of_light.csv
// (--page details --section SpeedOfLight); a failed export is noted and left out.
void write_ncu_exports(EvidenceBundle& bundle, const std::string& ncu_path,
                       const std::string& report_file,
                       const std::function<void(const std::string&)>& note);

// The metric names of a comma-separated list (regex:, group: … entries skipped) that no kernel
// of the report has: ncu collects nothing for a name it does not know and says nothing.
std::vector<std::string> metrics_not_collected(const std::string& metric_list,
                                               const model::Report& report);

}  // namespace kprof::capture
