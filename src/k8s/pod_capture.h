// What kprof records from a pod into a bundle: an ncu attach capture (`k8s sister`, `k8s
// sidecar`: the capture session run with ncu exec'd in the pod by kubectl, its report copied out
// verified) and a trace window (`k8s sister --trace`).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "capture/capture_session.h"
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
  // 127.0.0.1 in the pod is not reachable from here.
  std::optional<bool> target_still_there(const capture::AttachEndpoint&,
                                         const std::vector<int>&) override {
    return std::nullopt;
  }
  void describe(capture::ManifestBuilder& manifest) const override;

 private:
  const Kubectl& kubectl_;
  PodPlacement where_;
  std::string in_pod_, label_;
  std::function<void(const std::string&)> note_;
  std::vector<std::string> exec_;
  std::optional<VerifiedCopy> copy_;
};

// One capture in `where` into the bundle BUNDLE_PATH: the spec's attach endpoint is the pod's
// own ncu launch-mode target. index numbers the report in the pod and the notes ("capture 2").
capture::CaptureResult capture_in_pod(const Kubectl& kubectl, const PodPlacement& where,
                                      const capture::CaptureSpec& spec,
                                      capture::SessionOptions session, int index,
                                      const std::string& bundle_path,
                                      capture::CaptureObserver& observer);

// What every bundle's manifest takes from the command: its tool head and labels.
struct BundleLabels {
  nlohmann::json tool;  // render::tool_json(argv)
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
