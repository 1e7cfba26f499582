#include "k8s/operations.h"

#include <fmt/format.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "capture/attach_route.h"
#include "capture/capture_render.h"
#include "capture/ncu_command.h"
#include "capture/ncu_locator.h"
#include "common/child_process.h"
#include "common/redact.h"
#include "common/text.h"
#include "k8s/cleanup.h"
#include "k8s/cleanup_receipt.h"
#include "k8s/k8s_render.h"
#include "k8s/kubectl.h"
#include "k8s/pod_capture.h"
#include "k8s/workload.h"
#include "load/request_driver.h"
#include "pipeline/traces.h"

namespace kprof::k8s {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

// How a sister or sidecar operation went: a Kubernetes failure ends its steps (never the cleanup
// after them) and is reported once.
struct Outcome {
  bool all_ok = true;
  bool kubernetes_failed = false;
  bool incomplete = false;  // a capture ran past --timeout (bundle .incomplete): exit 8
  void kubernetes_failure(const std::string& message, pipeline::Answer& answer) {
    all_ok = false;
    kubernetes_failed = true;
    answer.notes += "kprof: " + message + "\n";
  }
};

Cluster read_target(const OperationRequest& request) {
  try {
    check_names(request.target);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  Kubectl kubectl(find_kubectl(request.kubectl), request.context, request.kubeconfig);
  try {
    return read_cluster(std::move(kubectl), request.target);
  } catch (const KubectlError& error) {
    throw K8sFailed(describe_kubectl_error(error));
  }
}

const ContainerInfo& server_container(const Cluster& cluster, const std::string& name) {
  const ContainerInfo* container = cluster.target.container(name);
  if (!container) {
    throw UsageError(fmt::format("no container \"{}\" in {}", name, cluster.target.deployment));
  }
  return *container;
}

// The request's capture for the pod: ncu's path there, the target's safety preset, the attach
// endpoint inside the pod.
capture::CaptureSpec pod_capture_spec(const OperationRequest& request, const std::string& ncu,
                                      const std::string& safety) {
  capture::CaptureSpec spec = request.capture;
  spec.ncu = ncu;
  spec.safety =
      safety == "single-replica" ? capture::Safety::kSingleReplica : capture::Safety::kMultiReplica;
  spec.attach = capture::AttachEndpoint{"127.0.0.1", std::nullopt};
  spec.export_path = "/tmp/kprof-capture";  // each capture sets its own
  return spec;
}

// A capture kprof would refuse is a usage error, before anything is created.
void refuse_early(const capture::CaptureSpec& spec) {
  try {
    capture::build_ncu_command(spec);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
}

// Progress of the captures in a pod, each line at once. index 0: the captures of a warm
// sequence, numbered as each starts.
class PodCaptureObserver : public capture::CaptureObserver {
 public:
  PodCaptureObserver(OperationObserver& out, int index, std::string where)
      : out_(out), index_(index), counting_(index == 0), where_(std::move(where)) {}
  void started(const capture::NcuCommand& command, const std::string&) override {
    if (counting_) ++index_;
    note(fmt::format("capture {}: attaching in {}: {}", index_, where_,
                     quoted_command(command.argv)));
  }
  void kernel_profiled(size_t kernel, std::optional<std::int64_t>, const std::string&,
                       std::optional<int>) override {
    note(fmt::format("capture {}: kernel {} profiled", index_, kernel));
  }
  void note(const std::string& text) override { out_.note(text); }

 private:
  OperationObserver& out_;
  int index_;
  bool counting_;
  std::string where_;
};

std::string where_text(const PodPlacement& where) {
  return fmt::format("{}/{} ({})", where.pod, where.container, where.method);
}

// One sister or sidecar operation under way: what it was asked, where its progress goes, what
// it answers.
struct Operation {
  const OperationRequest& request;
  OperationObserver& observer;
  pipeline::Answer answer;
  Outcome outcome;

  // What every capture in a pod records and runs beside ncu: the timeout, ncu's own CSV exports
  // when this machine has an ncu (the report is read locally), the manifest's head and labels.
  capture::SessionOptions pod_session(const Cluster& cluster) const {
    capture::SessionOptions session;
    session.timeout_s = request.timeout_s;
    session.export_ncu = capture::locate_ncu("").path;
    session.argv = request.argv;
    session.campaign = request.campaign;
    session.cell_id = request.cell;
    session.revision = cluster.target.revision;
    return session;
  }

  // A capture's end as it comes: its diagnoses, its summary, its verdict table.
  void report_capture(int index, const capture::CaptureResult& result) {
    observer.to_stderr(capture::diagnoses_text(result.diagnoses));
    observer.note(capture::pod_capture_summary(index, result));
    if (!result.analysis_table.empty()) observer.to_stdout(result.analysis_table);
  }

  // One attach capture in the pod, copied out with its digest checked, into one bundle; a failed
  // or incomplete one is recorded in the outcome (the bundle says why).
  void capture_once(const Cluster& cluster, const PodPlacement& where, const fs::path& out_dir,
                    const capture::CaptureSpec& spec, int index) {
    PodCaptureObserver progress(observer, index, where_text(where));
    capture::CaptureResult result =
        capture_in_pod(cluster.kubectl, where, spec, pod_session(cluster), index,
                       (out_dir / fmt::format("capture-{}", index)).string(), progress);
    report_capture(index, result);
    if (result.failed) outcome.all_ok = false;
    if (result.incomplete) outcome.incomplete = true;
  }

  // One trace window in the traced sister into the bundle trace-1, each trace ranked as `kprof
  // rank` does. Returns false when no whole trace came out (the diagnoses say why).
  bool trace_once(const Cluster& cluster, const PodPlacement& where, const fs::path& out_dir) {
    TraceWindowOptions window;
    window.duration_s = request.trace_duration_s;
    window.finish_timeout_s = request.timeout_s;
    PodTraceResult traced = trace_in_pod(
        cluster.kubectl, where, request.tracer_image, window,
        {request.argv, request.campaign, request.cell, cluster.target.revision},
        (out_dir / "trace-1").string(), [this](const std::string& line) { observer.note(line); });
    answer.notes += capture::diagnoses_text(traced.window.diagnoses);
    answer.out += trace_files_text(traced, where);
    for (const std::string& path : traced.copied_files) {
      try {
        pipeline::RankText ranked =
            pipeline::rank_trace_text(path, request.argv, request.top, request.name_width);
        answer.out += "\n" + ranked.table;
        answer.notes += ranked.warnings;
      } catch (const InputError& error) {
        answer.notes += fmt::format("kprof: {}: not ranked: {}\n", path, error.message());
      }
    }
    size_t files = traced.copied_files.size();
    observer.note(fmt::format("trace {}: {} file{}; bundle {}", traced.failed ? "failed" : "done",
                              files, files == 1 ? "" : "s", traced.bundle_path));
    return !traced.failed;
  }
};

// Where the sister's server takes requests and tells it is ready, from the request or the
// Deployment; a usage error when neither says (checked before anything is created).
struct ServerEndpoint {
  int port = 0;
  std::string port_from, ready_path;
};
ServerEndpoint server_endpoint(const OperationRequest& request, const ContainerInfo& container) {
  ServerEndpoint endpoint;
  if (request.server_port) {
    if (*request.server_port < 1 || *request.server_port > 65535)
      throw UsageError(fmt::format("--server-port {}: expected 1 to 65535", *request.server_port));
    endpoint = {*request.server_port, "--server-port", ""};
  } else if (container.server_port) {
    endpoint = {*container.server_port, container.server_port_from, ""};
  } else {
    throw UsageError(fmt::format(
        "container {} gives no --port and declares no containerPort: give --server-port PORT "
        "(where it serves the OpenAI API in the pod), or --startup to capture its start-up",
        container.name));
  }
  endpoint.ready_path = !request.ready_path.empty()      ? request.ready_path
                        : !container.health_path.empty() ? container.health_path
                                                         : "/health";
  if (endpoint.ready_path[0] != '/')
    throw UsageError(
        fmt::format("--ready-path {}: expected a path such as /health", endpoint.ready_path));
  return endpoint;
}

// The warm sequence in the sister's pod: one bundle per capture (capture-1 …), each summarised
// as it ends. Returns false when a capture failed or the sequence stopped (diagnoses say why); a
// port-forward kubectl refused is a Kubernetes failure (exit 10), reported through the outcome.
// What each capture cost the service (its bundle's "service" block, where a guard ran) goes into
// the receipt too.
bool warm_capture_in_sister(Operation& op, const Cluster& cluster, const PodPlacement& where,
                            const fs::path& out_dir, const capture::CaptureSpec& spec,
                            const ServerEndpoint& endpoint, const std::string& container_api_key,
                            CleanupReceipt& receipt) {
  const OperationRequest& request = op.request;
  PodWarmRequest warm;
  warm.warm = request.warm;
  warm.warm.capture = spec;
  warm.warm.ready_timeout_s = request.ready_timeout_s;
  warm.warm.captures = request.captures;
  // The server's own --api-key, unless KPROF_API_KEY says otherwise.
  if (warm.warm.load.api_key.empty()) warm.warm.load.api_key = container_api_key;
  warm.server_port = endpoint.port;
  warm.ready_path = endpoint.ready_path;
  std::vector<std::string> bundles;
  for (int i = 1; i <= request.captures; ++i)
    bundles.push_back((out_dir / fmt::format("capture-{}", i)).string());
  op.observer.note(
      fmt::format("warm capture: start-up unprofiled, then {} capture{} while requests flow to "
                  "port {} ({}) at concurrency {}",
                  request.captures, request.captures == 1 ? "" : "s", endpoint.port,
                  endpoint.port_from, request.warm.load.concurrency));
  PodCaptureObserver progress(op.observer, 0, where_text(where));
  capture::WarmCaptureResult result =
      warm_capture_in_pod(cluster.kubectl, where, warm, op.pod_session(cluster), progress, bundles);
  int index = 0;
  for (const capture::CaptureResult& one : result.captures) {
    op.report_capture(++index, one);
    if (one.manifest.contains("service")) receipt.service_cost(one.manifest["service"]);
  }
  op.observer.to_stderr(capture::diagnoses_text(result.diagnoses));
  if (result.stopped) op.observer.note(capture::stopped_sequence_summary(*result.stopped));
  for (const capture::Diagnosis& diagnosis : result.diagnoses) {
    if (diagnosis.id == "port_forward_failed")
      op.outcome.kubernetes_failure("kubectl port-forward to the sister failed (above)", op.answer);
  }
  if (result.incomplete) op.outcome.incomplete = true;
  return !result.failed;
}

// Owns the end of a sister or sidecar operation, whatever ends it: deletes what the receipt
// lists as created (clean_up: only what still carries kprof's labels), finishes the receipt with
// a true status, and says what is left and how to remove it. finish() is the normal end; the
// destructor does the same when an exception leaves the operation (a local error after
// creating: a full disk, a bundle folder that appeared meanwhile) and says it at once, since the
// operation's answer is then dropped and only the exception's line follows.
class OperationEnd {
 public:
  OperationEnd(Kubectl& kubectl, CleanupReceipt& receipt, OperationObserver& observer)
      : kubectl_(kubectl), receipt_(receipt), observer_(observer) {}
  OperationEnd(const OperationEnd&) = delete;
  OperationEnd& operator=(const OperationEnd&) = delete;

  ~OperationEnd() {
    if (finished_) return;
    finished_ = true;
    try {
      bool clean = true;
      observer_.to_stderr(end(interrupt_received() ? "interrupted" : "failed", clean));
    } catch (const std::exception& error) {
      observer_.to_stderr(
          fmt::format("kprof: could not finish the cleanup of {}: {}; look for objects labelled "
                      "{}={} in the cluster\n",
                      receipt_.path(), error.what(), kManagedByLabel, kManagedByValue));
    }
  }

  pipeline::Answer finish(Operation& op) {
    finished_ = true;
    bool clean = true;
    Outcome& outcome = op.outcome;
    std::string status = interrupt_received() ? "interrupted" : outcome.all_ok ? "ok" : "failed";
    op.answer.notes += end(status, clean);
    if (!clean) outcome.kubernetes_failed = true;
    op.answer.code = receipt_.status() == "interrupted" ? ExitCode::kIncomplete
                     : outcome.kubernetes_failed        ? ExitCode::kK8sFailed
                     : outcome.incomplete               ? ExitCode::kIncomplete
                     : outcome.all_ok                   ? ExitCode::kOk
                                                        : ExitCode::kCaptureFailed;
    return std::move(op.answer);
  }

 private:
  // Cleans up and finishes the receipt; `clean` false when something removable is left.
  std::string end(std::string status, bool& clean) {
    OperationEndReport report = end_operation(kubectl_, receipt_, std::move(status));
    clean = report.clean;
    OperationEndText text = operation_end_text(report, receipt_);
    for (const std::string& line : text.notes) observer_.note(line);
    return text.text;
  }

  Kubectl& kubectl_;
  CleanupReceipt& receipt_;
  OperationObserver& observer_;
  bool finished_ = false;
};

LocalPlan prepare_plan(const OperationRequest& request, const std::string& kind,
                       const std::string& run) {
  // A traced sister writes one bundle, trace-1; ncu captures capture-1..N.
  return prepare_output({request.output, request.receipt, kind, run,
                         request.trace ? "trace" : "capture",
                         request.trace ? 1 : request.captures});
}

// A sister asks for the server's GPUs: said before creating it when no node has them free (its
// pod would stay Pending; the wait gives up after kUnschedulableGraceS, not --ready-timeout).
void warn_without_free_gpus(const Cluster& cluster, const ContainerInfo& container,
                            OperationObserver& observer) {
  std::int64_t wanted = gpu_count(container.gpus);
  if (wanted <= 0) return;
  GpuCapacity capacity = read_gpu_capacity(cluster.kubectl);
  std::int64_t most_free = 0;
  for (const NodeGpus& node : capacity.nodes) most_free = std::max(most_free, node.free());
  if (capacity.checked && most_free < wanted) {
    observer.note(
        fmt::format("warning: no node has {} nvidia.com/gpu free (at most {}); the sister pod "
                    "will likely stay Pending",
                    wanted, most_free));
  }
}

// The sister's steps once it is created: its pod running, then the trace window, the warm
// sequence or the start-up captures.
void run_created_sister(Operation& op, const Cluster& cluster, const ContainerInfo& container,
                        const SisterOptions& sister, const Assessment& assessment,
                        const ServerEndpoint& endpoint, const LocalPlan& plan,
                        CleanupReceipt& receipt) {
  const OperationRequest& request = op.request;
  const std::string& ns = request.target.namespace_name;
  SisterPod pod;
  bool running = wait_for_sister_pod(cluster.kubectl, ns, sister.run_id, container.name,
                                     request.trace, request.ready_timeout_s, pod);
  PodPlacement where{request.trace ? "sister-trace" : "sister",
                     ns,
                     cluster.target.deployment,
                     pod.pod,
                     container.name,
                     pod.node,
                     container.image,
                     pod.image_id,
                     fs::absolute(receipt.path()).string()};
  if (!running && pod.stuck) throw K8sFailed(describe_pod_stuck(*pod.stuck));
  if (!running)
    throw K8sFailed(interrupt_received() ? "interrupted while waiting for the sister pod"
                    : request.trace
                        ? "the sister pod's server was not ready in time (--ready-timeout)"
                        : "the sister pod did not reach Running in time (--ready-timeout)");
  if (request.trace) {
    op.observer.note(fmt::format("pod {} ready on {}", where.pod, where.node));
    if (!op.trace_once(cluster, where, plan.out_dir)) op.outcome.all_ok = false;
    return;
  }
  op.observer.note(fmt::format("pod {} running on {}; waiting for the server to wait for ncu",
                               where.pod, where.node));
  bool waiting = wait_for_attachable_server(cluster.kubectl, ns, where.pod, container.name,
                                            request.ready_timeout_s);
  if (!waiting)
    throw K8sFailed(interrupt_received() ? "interrupted while waiting for the server"
                                         : "the server never printed ncu's \"Waiting "
                                           "for profiler to attach\" (--ready-timeout)");
  const std::string ncu = std::string(kNcuMount) + "/ncu";
  if (!request.startup) {
    if (!warm_capture_in_sister(op, cluster, where, plan.out_dir,
                                pod_capture_spec(request, ncu, assessment.safety), endpoint,
                                container.api_key, receipt))
      op.outcome.all_ok = false;
    return;
  }
  for (int i = 1; i <= request.captures && !interrupt_received(); ++i) {
    op.capture_once(cluster, where, plan.out_dir, pod_capture_spec(request, ncu, assessment.safety),
                    i);
  }
}

}  // namespace

std::string find_kubectl(const std::string& given) {
  std::string wanted = given;
  if (wanted.empty()) {
    const char* env = std::getenv("KPROF_KUBECTL");
    wanted = env && *env ? env : "kubectl";
  }
  std::string found = find_executable(wanted);
  if (found.empty()) {
    throw NotReady(
        fmt::format("kubectl not found ({}); install it or pass --kubectl PATH", wanted));
  }
  return found;
}

pipeline::Answer run_preflight(const OperationRequest& request) {
  Cluster cluster = read_target(request);
  const ContainerInfo& container = server_container(cluster, request.target.container);
  GpuCapacity capacity = read_gpu_capacity(cluster.kubectl);
  Assessment assessment =
      assess(cluster.target, container, cluster.versions.client_minor, capacity);
  // The route ncu can reach the server by, for the ncu named with --ncu-version: the pod's maps
  // are not read, so the in-process setup is what the container declares.
  capture::RouteTarget where;
  where.where = capture::RouteTarget::Where::kKubernetes;
  where.under_ncu_launch = container.under_ncu_launch;
  where.loaded_injection_library =
      std::any_of(container.env.begin(), container.env.end(), [](const auto& entry) {
        return entry.first == "NV_COMPUTE_PROFILER_IN_PROCESS" && entry.second == "1";
      });
  capture::RouteChoice route = capture::choose_attach_route(request.capture.ncu_version, where);
  PreflightView view{cluster.versions, cluster.target, container, assessment, capacity, route};
  pipeline::Answer answer;
  answer.out = request.json_output ? preflight_json(view, request.argv).dump(1) + "\n"
                                   : preflight_text(view);
  return answer;
}

pipeline::Answer run_plan(const OperationRequest& request, capture::PlanOptions plan) {
  Cluster cluster = read_target(request);
  const ContainerInfo& container = server_container(cluster, request.target.container);
  std::string where = fmt::format("Deployment {}/{}, container {}", cluster.target.namespace_name,
                                  cluster.target.deployment, container.name);
  for (const ContainerInfo::Probe& probe : container.probes) {
    capture::ProbeBudget budget;
    budget.probe = probe.kind;
    budget.period_s = probe.period_s;
    budget.failure_threshold = probe.failure_threshold;
    budget.timeout_s = probe.timeout_s;
    budget.from = where;
    plan.limits.probes.push_back(budget);
  }
  if (!plan.memory_fraction && container.gpu_memory_utilization && plan.limits.device_gb &&
      !plan.limits.resident_gb) {
    plan.memory_fraction = container.gpu_memory_utilization;
    plan.limits.memory_from =
        fmt::format("the engine's memory fraction {} ({}) of {} GB",
                    *container.gpu_memory_utilization, where, *plan.limits.device_gb);
  }
  plan.limits.kubernetes = true;
  return capture::plan(plan, request.argv);
}

pipeline::Answer run_sister(const OperationRequest& request, OperationObserver& observer) {
  if (request.trace) {
    if (request.tracer_image.empty())
      throw UsageError(
          "--tracer-image is required with --trace: an image whose --tracer-dir holds "
          "libkprof_tracer.so and libcupti.so.13 (see docs/k8s.md, kprof k8s sister --trace)");
    if (!(request.trace_duration_s > 0 && request.trace_duration_s <= 3600))
      throw UsageError(fmt::format("--trace-duration {}: expected seconds in (0, 3600]",
                                   request.trace_duration_s));
  } else if (request.ncu_image.empty()) {
    throw UsageError(
        "--ncu-image is required: an image holding Nsight Compute (e.g. "
        "nvcr.io/nvidia/cuda:13.0.0-devel-ubuntu24.04)");
  }
  Cluster cluster = read_target(request);
  const ContainerInfo& container = server_container(cluster, request.target.container);
  // The server's own --api-key goes with the warm sequence's requests: a value that would add
  // headers to them is refused before anything is created.
  if (!request.trace && !request.startup && request.warm.load.api_key.empty()) {
    try {
      load::check_header_value(
          container.api_key, "the API key in the server's command line (--api-key, in container " +
                                 container.name + ")");
    } catch (const std::invalid_argument& error) {
      throw UsageError(std::string(error.what()) + "; give the key in KPROF_API_KEY");
    }
  }
  Assessment assessment = assess(cluster.target, container, cluster.versions.client_minor);
  SisterOptions sister{container.name, request.ncu_image, request.ncu_dir, run_id()};
  sister.trace = request.trace;
  sister.tracer_image = request.tracer_image;
  sister.tracer_dir = request.tracer_dir;
  sister.memory_fraction = request.memory_fraction;
  json manifest;
  try {
    manifest = sister_deployment(cluster.target, sister);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  std::vector<std::string> problems = check_sister(manifest, cluster.target);
  if (!problems.empty())
    throw std::logic_error("generated sister Deployment fails kprof's checks: " + problems.front());
  if (request.dry_run) {
    // What it would create, without the server's secrets (shown as ***).
    json shown = manifest;
    redact_secrets_in_json(shown);
    pipeline::Answer answer;
    answer.out = request.json_output ? shown.dump(1) + "\n" : yaml_text(shown);
    return answer;
  }
  warn_without_free_gpus(cluster, container, observer);
  // Refusals of the capture itself and local problems come before anything is created.
  ServerEndpoint endpoint;
  if (!request.trace) {
    refuse_early(pod_capture_spec(request, std::string(kNcuMount) + "/ncu", assessment.safety));
    if (!request.startup) endpoint = server_endpoint(request, container);
  }
  LocalPlan plan = prepare_plan(request, "sister", sister.run_id);
  keep_interrupts();
  const std::string& ns = request.target.namespace_name;
  CleanupReceipt receipt(plan.receipt, "sister", request.context);
  OperationEnd end(cluster.kubectl, receipt, observer);  // deletes what was created, always
  Operation op{request, observer, {}, {}};
  try {
    create_sister(cluster.kubectl, receipt, manifest, ns, cluster.target.deployment, sister.run_id,
                  [&](const std::string& name) {
                    observer.note(fmt::format(
                        "creating Deployment {}/{} (the server under {}, outside the Service)", ns,
                        name, request.trace ? "kprof's tracer" : "`ncu --mode launch`"));
                  });
    run_created_sister(op, cluster, container, sister, assessment, endpoint, plan, receipt);
  } catch (const KubectlError& error) {
    op.outcome.kubernetes_failure(describe_kubectl_error(error), op.answer);
  } catch (const K8sFailed& error) {
    op.outcome.kubernetes_failure(error.what(), op.answer);
  }
  return end.finish(op);
}

pipeline::Answer run_sidecar(const OperationRequest& request, OperationObserver& observer) {
  if (request.image.empty())
    throw UsageError(
        "--image is required: an image holding Nsight Compute for the profiler container");
  if (request.target.pod.empty() && request.target.deployment.empty())
    throw UsageError("give --pod NAME or a DEPLOYMENT");
  Cluster cluster = read_target(request);
  const ContainerInfo& container = server_container(cluster, request.target.container);
  if (!container.under_ncu_launch) {
    throw UsageError(fmt::format(
        "container {} does not run under `ncu --mode launch`, so nothing in the pod can attach "
        "to it: use `kprof k8s sister` (see `kprof k8s preflight`)",
        container.name));
  }
  if (cluster.target.pods.empty()) throw K8sFailed("no pod to attach a profiler container to");
  const PodInfo& pod = cluster.target.pods.front();
  if (!is_dns_subdomain(pod.name))
    throw K8sFailed(fmt::format("kubectl returned a pod without a valid name ({})",
                                quoted_command({pod.name})));
  Assessment assessment = assess(cluster.target, container, cluster.versions.client_minor);
  refuse_early(pod_capture_spec(request, request.ncu_path, assessment.safety));
  std::string run = run_id();
  LocalPlan plan = prepare_plan(request, "sidecar", run);
  keep_interrupts();
  const std::string& ns = request.target.namespace_name;
  std::string name = "kprof-ncu-" + run;  // a fresh name each time: ephemeral containers stay
  CleanupReceipt receipt(plan.receipt, "sidecar", request.context);
  OperationEnd end(cluster.kubectl, receipt, observer);
  SidecarCall debug =
      sidecar_debug_call({ns, pod.name, request.image, container.name, name, request.profile,
                          cluster.versions.client_minor, request.lifetime_s,
                          fs::path(receipt.path()).parent_path().string()});
  for (const std::string& line : debug.notes) observer.note(line);
  Operation op{request, observer, {}, {}};
  try {
    observer.note(
        fmt::format("adding profiler container {} to pod {}/{} (kubectl debug --profile "
                    "{})",
                    name, ns, pod.name, request.profile));
    cluster.kubectl.check(debug.argv);
    // Recorded once added: it cannot be removed, so the receipt is its record, not a to-do.
    receipt.created("EphemeralContainer", ns, pod.name + "/" + name, false,
                    fmt::format("ephemeral containers cannot be removed from a pod; its process "
                                "(sleep {}) ends by itself",
                                request.lifetime_s),
                    run);
    bool running =
        wait_for_ephemeral_container(cluster.kubectl, ns, pod.name, name, request.ready_timeout_s);
    if (!running) throw K8sFailed("the profiler container did not start in time (--ready-timeout)");
    auto image = pod.image_ids.find(container.name);
    PodPlacement where{"sidecar",
                       ns,
                       cluster.target.deployment,
                       pod.name,
                       name,
                       pod.node,
                       container.image,
                       image != pod.image_ids.end() ? image->second : "",
                       fs::absolute(receipt.path()).string()};
    for (int i = 1; i <= request.captures && !interrupt_received(); ++i) {
      op.capture_once(cluster, where, plan.out_dir,
                      pod_capture_spec(request, request.ncu_path, assessment.safety), i);
    }
  } catch (const KubectlError& error) {
    op.outcome.kubernetes_failure(describe_kubectl_error(error), op.answer);
  } catch (const K8sFailed& error) {
    op.outcome.kubernetes_failure(error.what(), op.answer);
  }
  return end.finish(op);
}

pipeline::Answer run_cleanup(const OperationRequest& request) {
  CleanupReceipt receipt = CleanupReceipt::load(request.receipt);
  Kubectl kubectl(find_kubectl(request.kubectl), request.context, request.kubeconfig);
  OperationEndReport report = clean_up_receipt(kubectl, receipt);
  pipeline::Answer answer;
  // On failure nothing goes to stdout: every line is on stderr, each a `kprof:` line.
  for (const std::string& line : cleanup_lines(report, receipt)) {
    if (report.clean) {
      answer.out += line + "\n";
    } else {
      answer.notes += "kprof: " + line + "\n";
    }
  }
  answer.code = report.clean ? ExitCode::kOk : ExitCode::kK8sFailed;
  return answer;
}

}  // namespace kprof::k8s
