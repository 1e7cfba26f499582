// The target Deployment as kprof needs it (read from kubectl's JSON), the preflight assessment,
// and the objects kprof creates: the sister Deployment and the profiler ephemeral container.
// Pure functions over JSON; every generated object is checked by check_* for what the API
// schema cannot catch.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <map>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

namespace kprof::k8s {

// kubectl's JSON read without trusting its shape: the value at a path of keys (null when a key is
// absent or a step is not an object); string_at: "" unless that value is a string.
const nlohmann::json& value_at(const nlohmann::json& value,
                               std::initializer_list<const char*> path);
std::string string_at(const nlohmann::json& value, std::initializer_list<const char*> path);

struct ContainerInfo {
  std::string name, image;
  std::vector<std::string> command, args;
  std::vector<std::pair<std::string, std::string>>
      env;           // literal values; valueFrom shown as "<from …>"
  std::string gpus;  // nvidia.com/gpu limit, "" when none
  std::optional<double>
      gpu_memory_utilization;  // --gpu-memory-utilization (vLLM) / --mem-fraction-static (SGLang)
  std::optional<std::string> injection;  // CUDA_INJECTION64_PATH already set
  bool under_ncu_launch = false;         // command already `ncu --mode launch …`
  // Started as `sh -c SCRIPT` (bash, dash…): the flags below were read from the script's words.
  bool started_by_script = false;
  // Where its server listens in the pod, for the warm capture's requests: the engine's own
  // --port (vLLM, SGLang, trtllm-serve), else the containerPort named http, else the first TCP
  // containerPort; server_port_from says which ("its --port", "its containerPort named http", …).
  std::optional<int> server_port;
  std::string server_port_from;
  // The HTTP path its readiness (else startup, else liveness) probe asks of that port, e.g.
  // /health.
  std::string health_path;
  // The engine's own --api-key (vLLM, SGLang), which the warm capture's requests must carry.
  std::string api_key;
  // Its liveness and readiness probes as the kubelet runs them (Kubernetes' defaults where a
  // field is absent: period 10 s, failure threshold 3, timeout 1 s): how long the engine may
  // stall before it is restarted or leaves its Service (the capture plan's limits).
  struct Probe {
    std::string kind;  // "liveness", "readiness"
    double period_s = 10, failure_threshold = 3, timeout_s = 1;
  };
  std::vector<Probe> probes;
};

struct PodInfo {
  std::string name, node, phase;
  std::map<std::string, std::string> image_ids;  // container → imageID (digest)
  std::vector<std::string> ephemeral_containers;
};

struct ServiceInfo {
  std::string name;
  std::map<std::string, std::string> selector;
};

struct TargetInfo {
  std::string namespace_name, deployment, revision;
  int replicas = 0;
  std::map<std::string, std::string> match_labels, template_labels;
  std::vector<ContainerInfo> containers;
  std::vector<PodInfo> pods;
  std::vector<ServiceInfo> services;  // those selecting the target's pods
  nlohmann::json deployment_json;

  const ContainerInfo* container(const std::string& name) const;  // "" → the first
};

TargetInfo parse_target(const nlohmann::json& deployment, const nlohmann::json& pods,
                        const nlohmann::json& services);

// Where a sister (a copy of the server asking for the same GPUs) could run: per schedulable
// node, allocatable nvidia.com/gpu and what pods not yet finished request there. `checked` is
// false when kubectl could not list nodes or pods (RBAC: both are cluster-scope), why_not says.
struct NodeGpus {
  std::string name;
  std::int64_t allocatable = 0, requested = 0;
  std::int64_t free() const { return allocatable > requested ? allocatable - requested : 0; }
};
struct GpuCapacity {
  bool checked = false;
  std::string why_not;
  std::vector<NodeGpus> nodes;  // nodes with nvidia.com/gpu allocatable, not cordoned
};

// From `kubectl get nodes -o json` and `kubectl get pods --all-namespaces -o json`: a pod's
// request is the larger of its containers' sum and its largest initContainer (the scheduler's
// rule); a limit without a request counts as the request (extended resources must match).
// Pods Succeeded or Failed hold nothing.
GpuCapacity gpu_capacity(const nlohmann::json& nodes, const nlohmann::json& pods);

// The GPUs one container asks for ("" → 0; a non-number → 0).
std::int64_t gpu_count(const std::string& gpus);

// Why a pod has not started, from its status: the scheduler's Unschedulable message
// (PodScheduled False, e.g. "0/3 nodes are available: 3 Insufficient nvidia.com/gpu."), or a
// container waiting on an image it cannot pull (ErrImagePull, ImagePullBackOff,
// InvalidImageName) or a crash loop. Empty while it is merely on its way.
struct PodStuck {
  std::string reason;   // "Unschedulable", "ImagePullBackOff", "CrashLoopBackOff", …
  std::string message;  // the API's message
};
std::optional<PodStuck> pod_stuck(const nlohmann::json& pod);

// What the latency guard watches of the profiled pod (issue 41), from kubectl's JSON of it: its
// Ready condition (nullopt unless the condition says True or False) and CONTAINER's restartCount
// (nullopt when no status of that container gives one).
struct PodReadiness {
  std::optional<bool> ready;
  std::optional<std::int64_t> restart_count;
};
PodReadiness pod_readiness(const nlohmann::json& pod, const std::string& container);

struct Assessment {
  std::string method;  // "sidecar" or "sister"
  std::string safety;  // "single-replica" or "multi-replica"
  std::vector<std::string> reasons;
  std::vector<std::string> warnings;
};

Assessment assess(const TargetInfo& target, const ContainerInfo& container, int client_minor,
                  const GpuCapacity& capacity = {});

// `kubectl debug --custom` exists from kubectl 1.31.
constexpr int kCustomMinimumMinor = 31;

struct SisterOptions {
  std::string container;  // the server container ("" → first)
  std::string ncu_image;  // an image holding Nsight Compute
  std::string ncu_dir = "/opt/nvidia/nsight-compute/2025.3.1";  // its folder in that image
  std::string run_id;                                           // short, [a-z0-9]
  // --trace: the server runs under kprof's tracer instead of ncu. tracer_image holds
  // libkprof_tracer.so and libcupti.so.13 in tracer_dir; ncu_image and ncu_dir are then unused.
  bool trace = false;
  std::string tracer_image = "";
  std::string tracer_dir = "/opt/kprof/lib";
  // The engine's memory fraction in the copy (vLLM --gpu-memory-utilization, SGLang
  // --mem-fraction-static, rewritten where the server's command or args give it): below one
  // half ncu's replay save stays in device memory (bench/capture-cost.sh).
  std::optional<double> memory_fraction = std::nullopt;
};

// The mount point of the emptyDir the initContainer copies ncu into.
constexpr const char* kNcuMount = "/kprof-ncu";

// With --trace: the emptyDir the initContainer copies the tracer (and the libcupti.so.13 beside
// it, found through the library's $ORIGIN) into; the tracer writes its traces there too, and
// polls the control file kprof writes `start` and `stop` into with kubectl exec.
constexpr const char* kTracerMount = "/kprof-tracer";
constexpr const char* kTracerLibrary = "/kprof-tracer/libkprof_tracer.so";
constexpr const char* kTraceControl = "/kprof-tracer/control";

nlohmann::json sister_deployment(const TargetInfo& target, const SisterOptions& options);
std::string sister_name(const std::string& deployment, const std::string& run_id);

// kprof's own checks of a generated sister Deployment; empty when fine. CUDA_INJECTION64_PATH may
// be set only to kprof's tracer in its volume (--trace); an ncu sister must not have it.
std::vector<std::string> check_sister(const nlohmann::json& manifest, const TargetInfo& target);

// The --custom partial container spec for `kubectl debug` (capabilities, a volume mount).
nlohmann::json ephemeral_custom_spec();
// What ephemeral containers may not have (ports, probes, resources, lifecycle).
std::vector<std::string> check_ephemeral_custom(const nlohmann::json& spec);

// Kubernetes' name rules (k8s.io/apimachinery validation): a DNS-1123 label (namespaces,
// containers): ≤ 63, [a-z0-9-], alphanumeric at both ends; a DNS-1123 subdomain (Deployments,
// pods): ≤ 253, labels joined by '.'.
// The commands of a `sh -c SCRIPT` script as the shell would split them (nothing run or
// expanded; a word the shell would expand is a marker no flag reader takes), and the words of the
// one that runs the engine — whose --port, --api-key and memory flag are the server's (a
// sidecar's `--port 9100` beside it is not): the command naming an engine (vllm, sglang.…,
// trtllm-serve, …), else the last started with `exec`, else all of them.
std::vector<std::vector<std::string>> shell_script_commands(const std::string& script);
std::vector<std::string> engine_words(const std::string& script);

bool is_dns_label(const std::string& name);
bool is_dns_subdomain(const std::string& name);
// Those rules in words, for the message that refuses a name.
inline constexpr const char* kLabelRule =
    "a DNS-1123 label: at most 63 characters of a-z, 0-9 and '-', starting and ending with a "
    "letter or digit";
inline constexpr const char* kSubdomainRule =
    "a DNS-1123 subdomain: at most 253 characters of a-z, 0-9, '-' and '.', each part starting "
    "and ending with a letter or digit";

// What marks an object kprof created (the sister Deployment carries both on its metadata): the
// managed-by label with value "kprof", and the run id of the kprof run that created it (also in
// the object's name, "-kprof-RUN", and in the cleanup receipt). kprof deletes only objects that
// carry both, with the run id the receipt records.
constexpr const char* kManagedByLabel = "app.kubernetes.io/managed-by";
constexpr const char* kManagedByValue = "kprof";
constexpr const char* kRunLabel = "kprof.dev/run";
constexpr const char* kSisterOfLabel = "kprof.dev/sister-of";

// Why `object` (kubectl's JSON of it) is not the kind/namespace/name that kprof run `run`
// created; std::nullopt when it is.
std::optional<std::string> not_created_by_kprof(const nlohmann::json& object,
                                                const std::string& kind,
                                                const std::string& namespace_name,
                                                const std::string& name, const std::string& run);

}  // namespace kprof::k8s
