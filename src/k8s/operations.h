// The `kprof k8s` operations end to end, as library calls: preflight, the sister (warm capture,
// start-up capture or a trace window), the sidecar and cleanup. A sister or sidecar reads the
// target, checks everything local before anything is created, creates, waits, captures (each
// capture's bundle through the capture session), and — whatever ends it: its return, a
// Kubernetes failure, a local error, SIGINT/SIGTERM/SIGHUP — deletes what its receipt lists and
// finishes the receipt with a true status. Progress reaches an OperationObserver as it happens;
// the result is a pipeline::Answer (what goes to stdout and stderr, and the exit code).
#pragma once

#include <cstddef>
#include <optional>
#include <string>
#include <vector>

#include "capture/capture_session.h"
#include "capture/verbs.h"
#include "capture/warm_capture.h"
#include "k8s/operation.h"
#include "pipeline/answer.h"

namespace kprof::k8s {

// Where an operation's progress goes while it runs (the CLI prints each piece at once).
class OperationObserver {
 public:
  virtual ~OperationObserver() = default;
  virtual void note(const std::string& line) = 0;       // one progress line
  virtual void to_stderr(const std::string& text) = 0;  // diagnoses, as they come
  virtual void to_stdout(const std::string& text) = 0;  // a capture's verdict table
};

struct OperationRequest {
  std::vector<std::string> argv;  // kprof's own, for every bundle's manifest and the JSON
  std::string kubectl, context, kubeconfig;  // kubectl: a path or a name to look up
  ClusterRequest target;                     // namespace, deployment, pod, container
  bool json_output = false;                  // preflight --json, sister --dry-run --json
  // The captures: preset, kernel regex, launch skip and count, --force (the rest is filled in
  // for the pod: ncu's path, the safety preset, the attach endpoint, the export path).
  capture::CaptureSpec capture;
  int captures = 1;
  double timeout_s = 600;
  double ready_timeout_s = 900;
  std::string output, receipt, campaign, cell;
  // sister
  std::string ncu_image, ncu_dir;
  std::optional<double> memory_fraction;
  bool dry_run = false;
  bool trace = false;  // the tracer instead of ncu: one window
  std::string tracer_image, tracer_dir;
  double trace_duration_s = 10;
  std::size_t top = 10, name_width = 70;
  bool startup = false;  // capture the start-up instead of the warm sequence
  // The warm sequence's options (the load but its URL, readiness, warm-up, the process); the
  // server's own --api-key is used when warm.load.api_key is empty.
  capture::WarmCaptureSpec warm;
  std::optional<int> server_port;
  std::string ready_path;
  // sidecar
  std::string image, profile = "sysadmin", ncu_path = "ncu";
  int lifetime_s = 3600;
};

// Usage errors (UsageError) and Kubernetes failures before anything is created (K8sFailed) are
// thrown; once something was created, the answer says how it ended.
pipeline::Answer run_preflight(const OperationRequest& request);
pipeline::Answer run_sister(const OperationRequest& request, OperationObserver& observer);
pipeline::Answer run_sidecar(const OperationRequest& request, OperationObserver& observer);
// `kprof k8s plan DEPLOYMENT --trace T`: the capture plan (capture::plan) against the
// Deployment's own limits — its server container's liveness and readiness probes (period ×
// failure threshold) and its engine's memory fraction (with plan.limits.device_gb) — the sister
// deployment offered when nothing fits the live replica. Reads only; nothing is created.
pipeline::Answer run_plan(const OperationRequest& request, capture::PlanOptions plan);
// `kprof k8s cleanup --receipt R`: what R lists as left deleted (only what kprof labelled).
pipeline::Answer run_cleanup(const OperationRequest& request);

// kubectl: `given`, else $KPROF_KUBECTL, else `kubectl` on PATH; NotReady when none is found.
std::string find_kubectl(const std::string& given);

}  // namespace kprof::k8s
