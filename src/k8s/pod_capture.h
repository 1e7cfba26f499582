// What kprof records from a pod into a bundle: an ncu attach capture (`k8s sister`, `k8s
// sidecar`: the capture session run with ncu exec'd in the pod by kubectl, its report copied out
// verified) and a trace window (`k8s sister --trace`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "capture/attach_targets.h"
#include "capture/capture_session.h"
#include "capture/warm_capture.h"
#include "k8s/copy_out.h"
#include "k8s/kubectl.h"
#include "k8s/trace_window.h"

namespace kprof::k8s {

// Where the captures run and what the manifest says about it.
struct PodPlacement {
  std::string method;  // "sister", "sidecar", "sister-trace"
  std::string namespace_name, deployment, pod, container, node, image, image_id;
  std::string cleanup_receipt;  // absolute path of the receipt
};

// The attach client run in the pod by `kubectl exec … sh -c SCRIPT`: ncu stays attached until
// the target exits, so the script detaches it (SIGINT) once the report file is written; ncu then
// exits 130, which the runner reports as a stop kprof asked for. User values arrive as "$@" —
// positional parameters, never parsed as shell code.
class KubectlExecRunner : public capture::NcuRunner {
 public:
  // in_pod: the report's path in the pod without .ncu-rep; label starts the copy's notes.
  KubectlExecRunner(const Kubectl& kubectl, PodPlacement where, std::string in_pod,
                    std::string label, std::function<void(const std::string&)> note);
  ChildResult run(const ChildRequest& request) override;
  std::string export_path(const capture::EvidenceBundle&) override { return in_pod_; }
  std::optional<capture::Diagnosis> fetch_report(const std::string& written,
                                                 const std::string& local) override;
  // Asked of the pod's /proc through kubectl exec (127.0.0.1 there is not reachable here).
  std::optional<bool> target_still_there(const capture::AttachEndpoint&,
                                         const std::vector<int>& pids) override;
  void describe(capture::ManifestBuilder& manifest) const override;

 private:
  const Kubectl& kubectl_;
  PodPlacement where_;
  std::string in_pod_, label_;
  std::function<void(const std::string&)> note_;
  std::vector<std::string> exec_;
  std::optional<VerifiedCopy> copy_;
};

// An ncu attach client run in the pod under the attach script, REPORT being in_pod: ends when
// ncu does; request.on_tick, request.timeout (timed_out) or an interrupt writes REPORT.stop,
// which detaches it there (kubectl exec is stopped only when that fails or takes 20 s), and so
// does a kubectl exec that ended by itself. exec_argv, when given, receives the kubectl argv.
ChildResult run_attach_client(const Kubectl& kubectl, const PodPlacement& where,
                              const std::string& in_pod, const ChildRequest& request,
                              std::vector<std::string>* exec_argv);
// A process of the pod from its /proc (kubectl exec … sh): described; gone (no such process);
// or neither, when the exec failed and nothing can be told. zombie: ended, not yet reaped.
struct PodProcess {
  std::optional<capture::LaunchedProcess> process;
  bool gone = false, zombie = false;
};
PodProcess describe_pod_process(const Kubectl& kubectl, const PodPlacement& where, int pid);
// What the describe script printed (state letter, command line, thread names, a line each) as a
// process: nothing described when it printed less. Text made valid UTF-8 (it is the pod's).
PodProcess parse_pod_process(int pid, const std::string& text);
// The pod as the host of a launched tree (capture::ProcessTreeAttacher): hold clients through
// run_attach_client (each with its own stop file), processes described by describe_pod_process.
// kubectl must outlive it.
capture::TreeHost pod_tree_host(const Kubectl& kubectl, const PodPlacement& where);

// One capture in `where` into the bundle BUNDLE_PATH: the spec's attach endpoint is the pod's
// own ncu launch-mode target. index numbers the report in the pod and the notes ("capture 2").
capture::CaptureResult capture_in_pod(const Kubectl& kubectl, const PodPlacement& where,
                                      const capture::CaptureSpec& spec,
                                      capture::SessionOptions session, int index,
                                      const std::string& bundle_path,
                                      capture::CaptureObserver& observer);

// The warm sequence (capture::run_warm_capture) on a pod's server: the hold clients and the
// captures run in the pod, the requests reach its server_port through a kubectl port-forward
// (readiness at ready_path there, or a line of the container's log when warm.ready_log_regex is
// set), the forward recorded as the load block's route. warm.capture, warm.process, timeouts,
// load (but its base_url), warm-up and captures come from the caller. When the port-forward
// cannot start, the result has its diagnosis and no capture.
struct PodWarmRequest {
  capture::WarmCaptureSpec warm;
  int server_port = 0;
  std::string ready_path = "/health";
};
capture::WarmCaptureResult warm_capture_in_pod(const Kubectl& kubectl, const PodPlacement& where,
                                               PodWarmRequest request,
                                               const capture::SessionOptions& session,
                                               capture::CaptureObserver& observer,
                                               const std::vector<std::string>& bundle_paths);

// What every bundle's manifest takes from the command: its tool head and labels.
struct BundleLabels {
  std::vector<std::string> argv;  // kprof's own, for the manifest's "tool" head
  std::string campaign, cell_id, revision;
};

// One trace window in the traced sister (run_trace_window) into the bundle BUNDLE_PATH: the
// traces copied out verified, the tracer's lines, one kprof.bundle/1 manifest.
struct PodTraceResult {
  TraceWindowResult window;
  std::string bundle_path;                // FINAL, or FINAL.incomplete when interrupted
  std::vector<std::string> copied_files;  // their paths in the bundle where it is now
  bool failed = false;
};
PodTraceResult trace_in_pod(const Kubectl& kubectl, const PodPlacement& where,
                            const std::string& tracer_image, const TraceWindowOptions& window,
                            const BundleLabels& labels, const std::string& bundle_path,
                            const std::function<void(const std::string&)>& note);

}  // namespace kprof::k8s
