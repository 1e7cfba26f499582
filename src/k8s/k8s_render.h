// `kprof k8s` results as text, JSON and YAML: the preflight assessment, the generated sister
// Deployment, the cleanup steps and what to do about a failed kubectl call.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "capture/attach_route.h"
#include "k8s/cleanup.h"
#include "k8s/kubectl.h"
#include "k8s/operation.h"
#include "k8s/pod_capture.h"
#include "k8s/workload.h"

namespace kprof::k8s {

struct PreflightView {
  const k8s::KubectlVersions& versions;
  const k8s::TargetInfo& target;
  const k8s::ContainerInfo& container;
  const k8s::Assessment& assessment;
  const k8s::GpuCapacity& gpu_capacity;
  // The route ncu can reach the server by (capture/attach_route.h), for the ncu version given.
  const capture::RouteChoice& route;
};

// Why a sister pod could not start, with what to do.
std::string describe_pod_stuck(const k8s::PodStuck& stuck);

// kprof.k8s-preflight/1.
nlohmann::json preflight_json(const PreflightView& view, const std::vector<std::string>& argv);
std::string preflight_text(const PreflightView& view);

// YAML of a Kubernetes object: strings double-quoted (so "8", "on" or "0.92" stay strings),
// numbers and booleans bare.
std::string yaml_text(const nlohmann::json& value);

// What to do about a kubectl failure of classify_failure's kind.
std::string kubectl_failure_hint(const std::string& kind);
// "message [kind] → hint".
std::string describe_kubectl_error(const k8s::KubectlError& error);
// One cleanup step as a line ("deleted Deployment ns/name", "refused to delete …").
std::string describe_cleanup_step(const k8s::CleanupStep& step, const std::string& receipt);

// "N trace files from NS/POD in BUNDLE:", then each file where it is now with its window (pid,
// window, events, what stopped it).
std::string trace_files_text(const k8s::PodTraceResult& traced, const k8s::PodPlacement& where);

// The end of a sister or sidecar operation: progress notes (what was deleted or gone) and the
// text for stderr (what could not be deleted, the receipt, each leftover and how to remove it).
struct OperationEndText {
  std::vector<std::string> notes;
  std::string text;
};
OperationEndText operation_end_text(const k8s::OperationEndReport& report,
                                    const k8s::CleanupReceipt& receipt);

// `kprof k8s cleanup`: each step, then "N leftovers in RECEIPT".
std::vector<std::string> cleanup_lines(const k8s::OperationEndReport& report,
                                       const k8s::CleanupReceipt& receipt);

}  // namespace kprof::k8s
