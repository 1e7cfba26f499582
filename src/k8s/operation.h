// The steps of a `kprof k8s` operation that are not Kubernetes objects of their own: the target
// read from the cluster, the local side checked before anything is created, the waits for what
// was created to come up, the run id that labels it.
#pragma once

#include <functional>
#include <string>

#include "k8s/cleanup.h"
#include "k8s/cleanup_receipt.h"
#include "k8s/kubectl.h"
#include "k8s/workload.h"

namespace kprof::k8s {

struct ClusterRequest {
  std::string namespace_name, deployment, pod, container;
};

// kubectl's versions and the target (Deployment, or a pod alone; its pods; the Services
// selecting them).
struct Cluster {
  Kubectl kubectl;
  KubectlVersions versions;
  TargetInfo target;
};

// Names kprof passes to kubectl must be names Kubernetes can have: a value such as "--all" is
// refused (std::invalid_argument naming the option and the rule) rather than risk kubectl
// reading it as a flag (get and delete also take names after `--`).
void check_names(const ClusterRequest& request);
// check_names, then the reads; a failed call throws KubectlError.
Cluster read_cluster(Kubectl kubectl, const ClusterRequest& request);

// Five characters of [a-z0-9] labelling what one operation creates.
std::string run_id();

// The local side of a sister or sidecar operation, checked before anything is created in the
// cluster (a local failure after creating would leave it running): the output folder can be
// made, no bundle folder PREFIX-1..N is already there, and the receipt's folder exists. Throws
// InputError (exit 3) naming the path.
struct LocalPlanRequest {
  std::string output;   // -o; "" puts the bundles beside the receipt
  std::string receipt;  // --receipt; "" names one in the output folder
  std::string kind;     // "sister", "sidecar"
  std::string run;
  std::string bundle_prefix;  // "capture", "trace"
  int bundles = 1;
};
struct LocalPlan {
  std::string out_dir;
  std::string receipt;
};
LocalPlan prepare_output(const LocalPlanRequest& request);

// Polls ready() once a second until it holds (true), the time is up or kprof is interrupted
// (false).
bool wait_for(double timeout_s, const std::function<bool()>& ready);

// The sister's pod (labelled with the run id) Running — and, traced, its server container
// ready —; fills pod, node and the server's image digest. A failed call throws KubectlError.
struct SisterPod {
  std::string pod, node, image_id;
  // Set when the wait ended early because the pod cannot start (the scheduler found no node,
  // an image cannot be pulled, the server crash-loops): waiting out --ready-timeout would not
  // change it.
  std::optional<PodStuck> stuck;
};
// How long a pod may stay Unschedulable (or in a first ErrImagePull) before the wait gives up:
// long enough for a pod
// being preempted out of the way or a node coming back, short against --ready-timeout's 900 s.
inline constexpr double kUnschedulableGraceS = 60;
bool wait_for_sister_pod(const Kubectl& kubectl, const std::string& namespace_name,
                         const std::string& run, const std::string& container, bool need_ready,
                         double timeout_s, SisterPod& found);

// nvidia.com/gpu allocatable and requested per node (kubectl get nodes, get pods -A); a
// KubectlError (RBAC: both are cluster-scope reads) leaves checked false with the reason.
GpuCapacity read_gpu_capacity(const Kubectl& kubectl);
// The server under `ncu --mode launch` printed "Waiting for profiler to attach".
bool wait_for_attachable_server(const Kubectl& kubectl, const std::string& namespace_name,
                                const std::string& pod, const std::string& container,
                                double timeout_s);
// The ephemeral container NAME of POD is running.
bool wait_for_ephemeral_container(const Kubectl& kubectl, const std::string& namespace_name,
                                  const std::string& pod, const std::string& name,
                                  double timeout_s);

// Creates the sister Deployment MANIFEST in NAMESPACE: written beside the receipt (NAME.json),
// recorded in the receipt before the create (a kprof killed right after it still leaves a
// receipt), then `kubectl create`. Returns its name; a failed call throws KubectlError.
std::string create_sister(const Kubectl& kubectl, CleanupReceipt& receipt,
                          const nlohmann::json& manifest, const std::string& namespace_name,
                          const std::string& sister_of, const std::string& run,
                          const std::function<void(const std::string&)>& announce);

// The `kubectl debug` call that adds the ephemeral profiler container NAME to POD, targeting
// the server container: --profile (sysadmin falls back to general before kubectl 1.30), the
// capabilities ncu needs through --custom (written beside the receipt, kubectl 1.31+), a
// process that ends by itself after lifetime_s. notes: what an older kubectl changes.
struct SidecarRequest {
  std::string namespace_name, pod, image, target_container, name, profile;
  int client_minor = 0;
  int lifetime_s = 3600;
  std::string custom_dir;  // where the --custom file goes
};
struct SidecarCall {
  std::vector<std::string> argv;
  std::vector<std::string> notes;
};
SidecarCall sidecar_debug_call(const SidecarRequest& request);

// The end of a sister or sidecar operation, whatever ended it: deletes what the receipt lists as
// created (clean_up: only what still carries kprof's labels), from now on running kubectl to
// completion also after SIGINT/SIGTERM, and finishes the receipt with STATUS — "failed" instead
// of "ok" when something removable is left (clean false).
struct OperationEndReport {
  std::vector<CleanupStep> steps;
  std::string status;
  bool clean = true;
};
OperationEndReport end_operation(Kubectl& kubectl, CleanupReceipt& receipt, std::string status);
// `kprof k8s cleanup`: the same deletions for a receipt read back, finished "cleaned" or, when
// something was refused or failed, "cleanup-failed".
OperationEndReport clean_up_receipt(Kubectl& kubectl, CleanupReceipt& receipt);

}  // namespace kprof::k8s
