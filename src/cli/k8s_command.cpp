// kprof k8s preflight|sister|sidecar|cleanup: capture from a live Kubernetes deployment through
// the user's kubectl, without rebuilding its image, leaving a cleanup receipt whatever happens.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "capture/ncu_locator.h"
#include "cli/analyze_command.h"
#include "cli/capture_support.h"
#include "cli/command.h"
#include "cli/rank_command.h"
#include "common/child_process.h"
#include "common/text.h"
#include "k8s/cleanup.h"
#include "k8s/cleanup_receipt.h"
#include "k8s/kubectl.h"
#include "k8s/operation.h"
#include "k8s/pod_capture.h"
#include "k8s/workload.h"
#include "render/capture_render.h"
#include "render/envelope.h"
#include "render/k8s_render.h"
#include "render/load_render.h"

namespace kprof::cli {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

struct K8sOptions {
  std::string kubectl, context, kubeconfig, namespace_name = "default";
  std::string deployment, pod, container;
  bool json_output = false;
  // capture
  std::string preset = "triage";
  std::string kernel_regex;
  std::optional<std::int64_t> launch_skip, launch_count;
  int captures = 1;
  double timeout_s = 600;
  std::optional<double> memory_fraction;  // sister: the engine's memory fraction in the copy
  double ready_timeout_s = 900;
  std::string output = "";
  std::string receipt;
  std::string campaign, cell;
  bool force = false;
  // sister
  std::string ncu_image, ncu_dir = "/opt/nvidia/nsight-compute/2025.3.1";
  bool dry_run = false;
  // sister --trace
  bool trace = false;
  std::string tracer_image, tracer_dir = "/opt/kprof/lib";
  double trace_duration_s = 10;
  size_t top = 10, name_width = 70;
  std::vector<std::string> ncu_only_given;  // ncu options on the command line, refused with --trace
  std::vector<std::string> trace_only_given;  // --trace's options, refused without it
  // sister: the warm sequence (default) or the start-up
  WarmOptions warm;
  std::optional<int> server_port;
  std::string ready_path;
  bool startup = false;
  std::vector<std::string> warm_only_given;  // the warm sequence's options, refused with --startup
  // sidecar
  std::string image, profile = "sysadmin", ncu_path = "ncu";
  int lifetime_s = 3600;
};

std::string kubectl_path(const std::string& given) {
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

// How a sister or sidecar operation went: a Kubernetes failure ends its steps (never the cleanup
// after them) and is reported once.
struct Outcome {
  bool all_ok = true;
  bool kubernetes_failed = false;
  bool incomplete = false;  // a capture ran past --timeout (bundle .incomplete): exit 8
  void kubernetes_failure(const std::string& message, Output& output) {
    all_ok = false;
    kubernetes_failed = true;
    output.stderr_text += "kprof: " + message + "\n";
  }
};

k8s::Cluster read_cluster(const K8sOptions& options) {
  k8s::ClusterRequest request{options.namespace_name, options.deployment, options.pod,
                              options.container};
  try {
    k8s::check_names(request);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  k8s::Kubectl kubectl(kubectl_path(options.kubectl), options.context, options.kubeconfig);
  try {
    return k8s::read_cluster(std::move(kubectl), request);
  } catch (const k8s::KubectlError& error) {
    throw K8sFailed(render::describe_kubectl_error(error));
  }
}

const k8s::ContainerInfo& server_container(const k8s::Cluster& cluster, const std::string& name) {
  const k8s::ContainerInfo* container = cluster.target.container(name);
  if (!container) {
    throw UsageError(fmt::format("no container \"{}\" in {}", name, cluster.target.deployment));
  }
  return *container;
}

// ---------------------------------------------------------------------------------------------
ExitCode run_preflight(const K8sOptions& options, Output& output) {
  k8s::Cluster cluster = read_cluster(options);
  const k8s::ContainerInfo& container = server_container(cluster, options.container);
  k8s::GpuCapacity capacity = k8s::read_gpu_capacity(cluster.kubectl);
  k8s::Assessment assessment =
      k8s::assess(cluster.target, container, cluster.versions.client_minor, capacity);
  render::PreflightView view{cluster.versions, cluster.target, container, assessment, capacity};
  output.stdout_text = options.json_output
                           ? render::preflight_json(view, output.argv).dump(1) + "\n"
                           : render::preflight_text(view);
  return ExitCode::kOk;
}

// ---------------------------------------------------------------------------------------------
capture::CaptureSpec pod_capture_spec(const K8sOptions& options, const std::string& ncu,
                                      const std::string& safety) {
  capture::CaptureSpec spec;
  spec.ncu = ncu;
  auto preset = capture::parse_preset(options.preset);
  if (!preset)
    throw UsageError(fmt::format("--preset {}: expected triage, basic or full", options.preset));
  spec.preset = *preset;
  spec.kernel_regex = options.kernel_regex;
  spec.launch_skip = options.launch_skip;
  spec.launch_count = options.launch_count;
  spec.safety =
      safety == "single-replica" ? capture::Safety::kSingleReplica : capture::Safety::kMultiReplica;
  spec.force = options.force;
  spec.attach = capture::AttachEndpoint{"127.0.0.1", std::nullopt};
  spec.export_path = "/tmp/kprof-capture";  // each capture sets its own
  return spec;
}

// Progress of the captures in a pod, each line at once on stderr. index 0: the captures of a
// warm sequence, numbered as each starts.
class PodCaptureObserver : public capture::CaptureObserver {
 public:
  PodCaptureObserver(int index, std::string where)
      : index_(index), counting_(index == 0), where_(std::move(where)) {}
  void started(const capture::NcuCommand& command, const std::string&) override {
    if (counting_) ++index_;
    note(fmt::format("capture {}: attaching in {}: {}", index_, where_,
                     quoted_command(command.argv)));
  }
  void kernel_profiled(size_t kernel, std::optional<std::int64_t>, const std::string&,
                       std::optional<int>) override {
    note(fmt::format("capture {}: kernel {} profiled", index_, kernel));
  }
  void note(const std::string& text) override { cli::note(text); }

 private:
  int index_;
  bool counting_;
  std::string where_;
};

// What every capture in a pod records and runs beside ncu: the timeout, ncu's own CSV exports
// when this machine has an ncu (the report is read locally), the manifest's head and labels, the
// analysis.
capture::SessionOptions pod_session(const K8sOptions& options, const k8s::Cluster& cluster,
                                    const std::vector<std::string>& argv) {
  capture::SessionOptions session;
  session.timeout_s = options.timeout_s;
  session.export_ncu = capture::locate_ncu("").path;
  session.tool = render::tool_json(argv);
  session.campaign = options.campaign;
  session.cell_id = options.cell;
  session.revision = cluster.target.revision;
  session.analyze = analyze_for_bundle;
  return session;
}

// One attach capture in the pod, copied out with its digest checked, into one bundle; a failed
// or incomplete one is recorded in outcome (the bundle says why).
void capture_in_pod(Outcome& outcome, const K8sOptions& options, const k8s::Cluster& cluster,
                    const k8s::PodPlacement& where, const fs::path& out_dir,
                    const capture::CaptureSpec& spec, int index,
                    const std::vector<std::string>& argv) {
  capture::SessionOptions session = pod_session(options, cluster, argv);
  PodCaptureObserver observer(index,
                              fmt::format("{}/{} ({})", where.pod, where.container, where.method));
  capture::CaptureResult result =
      k8s::capture_in_pod(cluster.kubectl, where, spec, std::move(session), index,
                          (out_dir / fmt::format("capture-{}", index)).string(), observer);
  std::fputs(render::diagnoses_text(result.diagnoses).c_str(), stderr);
  note(render::pod_capture_summary(index, result));
  if (!result.analysis_table.empty()) std::fputs(result.analysis_table.c_str(), stdout);
  std::fflush(stdout);
  if (result.failed) outcome.all_ok = false;
  if (result.incomplete) outcome.incomplete = true;
}

k8s::LocalPlan prepare_output(const K8sOptions& options, const std::string& kind,
                              const std::string& run) {
  // A traced sister writes one bundle, trace-1; ncu captures capture-1..N.
  return k8s::prepare_output({options.output, options.receipt, kind, run,
                              options.trace ? "trace" : "capture",
                              options.trace ? 1 : options.captures});
}

// Owns the end of a sister or sidecar operation, whatever ends it: deletes what the receipt
// lists as created (k8s::clean_up: only what still carries kprof's labels), finishes the receipt
// with a true status, and says what is left and how to remove it. finish() is the normal end;
// the destructor does the same when an exception leaves the operation (a local error after
// creating: a full disk, a bundle folder that appeared meanwhile) and prints straight to stderr,
// since the command's output is then dropped and only the exception's line follows.
class OperationEnd {
 public:
  OperationEnd(k8s::Kubectl& kubectl, k8s::CleanupReceipt& receipt)
      : kubectl_(kubectl), receipt_(receipt) {}
  OperationEnd(const OperationEnd&) = delete;
  OperationEnd& operator=(const OperationEnd&) = delete;

  ~OperationEnd() {
    if (finished_) return;
    finished_ = true;
    try {
      bool clean = true;
      std::string text = end(interrupt_received() ? "interrupted" : "failed", clean);
      std::fputs(text.c_str(), stderr);
    } catch (const std::exception& error) {
      std::fprintf(stderr,
                   "kprof: could not finish the cleanup of %s: %s; look for objects labelled "
                   "%s=%s in the cluster\n",
                   receipt_.path().c_str(), error.what(), k8s::kManagedByLabel,
                   k8s::kManagedByValue);
    }
  }

  ExitCode finish(Outcome outcome, Output& output) {
    finished_ = true;
    bool clean = true;
    std::string status = interrupt_received() ? "interrupted" : outcome.all_ok ? "ok" : "failed";
    output.stderr_text += end(status, clean);
    if (!clean) outcome.kubernetes_failed = true;
    if (receipt_.status() == "interrupted") return ExitCode::kIncomplete;
    if (outcome.kubernetes_failed) return ExitCode::kK8sFailed;
    if (outcome.incomplete) return ExitCode::kIncomplete;
    return outcome.all_ok ? ExitCode::kOk : ExitCode::kCaptureFailed;
  }

 private:
  // Cleans up and finishes the receipt; `clean` false when something removable is left.
  std::string end(std::string status, bool& clean) {
    k8s::OperationEndReport report = k8s::end_operation(kubectl_, receipt_, std::move(status));
    clean = report.clean;
    render::OperationEndText text = render::operation_end_text(report, receipt_);
    for (const std::string& line : text.notes) note(line);
    return text.text;
  }

 private:
  k8s::Kubectl& kubectl_;
  k8s::CleanupReceipt& receipt_;
  bool finished_ = false;
};

// One trace window in the traced sister into the bundle trace-1 (k8s::trace_in_pod), each trace
// ranked as `kprof rank` does. Returns false when no whole trace came out (the diagnoses say why).
bool trace_in_pod(const K8sOptions& options, const k8s::Cluster& cluster,
                  const k8s::PodPlacement& where, const fs::path& out_dir, Output& output) {
  k8s::TraceWindowOptions window;
  window.duration_s = options.trace_duration_s;
  window.finish_timeout_s = options.timeout_s;
  k8s::PodTraceResult traced = k8s::trace_in_pod(
      cluster.kubectl, where, options.tracer_image, window,
      {render::tool_json(output.argv), options.campaign, options.cell, cluster.target.revision},
      (out_dir / "trace-1").string(), note);
  output.stderr_text += render::diagnoses_text(traced.window.diagnoses);
  output.stdout_text += render::trace_files_text(traced, where);
  for (const std::string& path : traced.copied_files) {
    try {
      RankText ranked = rank_trace_text(path, output.argv, options.top, options.name_width);
      output.stdout_text += "\n" + ranked.table;
      output.stderr_text += ranked.warnings;
    } catch (const InputError& error) {
      output.stderr_text += fmt::format("kprof: {}: not ranked: {}\n", path, error.message());
    }
  }
  size_t files = traced.copied_files.size();
  note(fmt::format("trace {}: {} file{}; bundle {}", traced.failed ? "failed" : "done", files,
                   files == 1 ? "" : "s", traced.bundle_path));
  return !traced.failed;
}

// Where the sister's server takes requests and tells it is ready, from the options or the
// Deployment; a usage error when neither says (checked before anything is created).
struct ServerEndpoint {
  int port = 0;
  std::string port_from, ready_path;
};
ServerEndpoint server_endpoint(const K8sOptions& options, const k8s::ContainerInfo& container) {
  ServerEndpoint endpoint;
  if (options.server_port) {
    if (*options.server_port < 1 || *options.server_port > 65535)
      throw UsageError(fmt::format("--server-port {}: expected 1 to 65535", *options.server_port));
    endpoint = {*options.server_port, "--server-port", ""};
  } else if (container.server_port) {
    endpoint = {*container.server_port, container.server_port_from, ""};
  } else {
    throw UsageError(fmt::format(
        "container {} gives no --port and declares no containerPort: give --server-port PORT "
        "(where it serves the OpenAI API in the pod), or --startup to capture its start-up",
        container.name));
  }
  endpoint.ready_path = !options.ready_path.empty()      ? options.ready_path
                        : !container.health_path.empty() ? container.health_path
                                                         : "/health";
  if (endpoint.ready_path[0] != '/')
    throw UsageError(
        fmt::format("--ready-path {}: expected a path such as /health", endpoint.ready_path));
  return endpoint;
}

// The warm sequence in the sister's pod: one bundle per capture (capture-1 …), each summarised
// as it ends. Returns false when a capture failed or the sequence stopped (diagnoses say why); a
// port-forward kubectl refused is a Kubernetes failure (exit 10), reported through outcome.
bool warm_capture_in_sister(Outcome& outcome, Output& output, const K8sOptions& options,
                            const k8s::Cluster& cluster, const k8s::PodPlacement& where,
                            const fs::path& out_dir, const capture::CaptureSpec& spec,
                            const ServerEndpoint& endpoint, const std::string& container_api_key) {
  capture::SessionOptions session = pod_session(options, cluster, output.argv);
  k8s::PodWarmRequest request;
  request.warm.capture = spec;
  apply_warm_options(options.warm, request.warm);
  request.warm.ready_timeout_s = options.ready_timeout_s;
  request.warm.captures = options.captures;
  request.warm.figures_json = render::load_figures_json;
  // The server's own --api-key, unless KPROF_API_KEY says otherwise.
  if (request.warm.load.api_key.empty()) request.warm.load.api_key = container_api_key;
  request.server_port = endpoint.port;
  request.ready_path = endpoint.ready_path;
  std::vector<std::string> bundles;
  for (int i = 1; i <= options.captures; ++i)
    bundles.push_back((out_dir / fmt::format("capture-{}", i)).string());
  note(
      fmt::format("warm capture: start-up unprofiled, then {} capture{} while requests flow to "
                  "port {} ({}) at concurrency {}",
                  options.captures, options.captures == 1 ? "" : "s", endpoint.port,
                  endpoint.port_from, options.warm.load_concurrency));
  PodCaptureObserver observer(0,
                              fmt::format("{}/{} ({})", where.pod, where.container, where.method));
  capture::WarmCaptureResult result =
      k8s::warm_capture_in_pod(cluster.kubectl, where, request, session, observer, bundles);
  int index = 0;
  for (const capture::CaptureResult& one : result.captures) {
    std::fputs(render::diagnoses_text(one.diagnoses).c_str(), stderr);
    note(render::pod_capture_summary(++index, one));
    if (!one.analysis_table.empty()) std::fputs(one.analysis_table.c_str(), stdout);
  }
  std::fputs(render::diagnoses_text(result.diagnoses).c_str(), stderr);
  if (result.stopped) note(render::stopped_sequence_summary(*result.stopped));
  std::fflush(stdout);
  for (const capture::Diagnosis& diagnosis : result.diagnoses) {
    if (diagnosis.id == "port_forward_failed")
      outcome.kubernetes_failure("kubectl port-forward to the sister failed (above)", output);
  }
  if (result.incomplete) outcome.incomplete = true;
  return !result.failed;
}

ExitCode run_sister(const K8sOptions& options, Output& output) {
  if (options.trace) {
    if (!options.ncu_only_given.empty()) {
      throw UsageError(fmt::format(
          "{} {} not apply to --trace: the sister runs kprof's tracer, not ncu (it records every "
          "kernel's time; use `kprof k8s sister` without --trace for ncu's counters)",
          fmt::join(options.ncu_only_given, ", "),
          options.ncu_only_given.size() == 1 ? "does" : "do"));
    }
    if (options.tracer_image.empty())
      throw UsageError(
          "--tracer-image is required with --trace: an image whose --tracer-dir holds "
          "libkprof_tracer.so and libcupti.so.13 (see README, kprof k8s sister --trace)");
    if (!(options.trace_duration_s > 0 && options.trace_duration_s <= 3600))
      throw UsageError(fmt::format("--trace-duration {}: expected seconds in (0, 3600]",
                                   options.trace_duration_s));
  } else if (!options.trace_only_given.empty()) {
    throw UsageError(fmt::format("{} appl{} only with --trace",
                                 fmt::join(options.trace_only_given, ", "),
                                 options.trace_only_given.size() == 1 ? "ies" : "y"));
  } else if (options.startup && !options.warm_only_given.empty()) {
    throw UsageError(fmt::format(
        "{} belong{} to the warm sequence, which --startup leaves out (it captures the first "
        "matching launches of the server's start-up)",
        fmt::join(options.warm_only_given, ", "), options.warm_only_given.size() == 1 ? "s" : ""));
  } else if (options.ncu_image.empty())
    throw UsageError(
        "--ncu-image is required: an image holding Nsight Compute (e.g. "
        "nvcr.io/nvidia/cuda:13.0.0-devel-ubuntu24.04)");
  k8s::Cluster cluster = read_cluster(options);
  const k8s::ContainerInfo& container = server_container(cluster, options.container);
  k8s::Assessment assessment =
      k8s::assess(cluster.target, container, cluster.versions.client_minor);
  k8s::SisterOptions sister{container.name, options.ncu_image, options.ncu_dir, k8s::run_id()};
  sister.trace = options.trace;
  sister.tracer_image = options.tracer_image;
  sister.tracer_dir = options.tracer_dir;
  sister.memory_fraction = options.memory_fraction;
  json manifest;
  try {
    manifest = k8s::sister_deployment(cluster.target, sister);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  std::vector<std::string> problems = k8s::check_sister(manifest, cluster.target);
  if (!problems.empty())
    throw std::logic_error("generated sister Deployment fails kprof's checks: " + problems.front());
  if (options.dry_run) {
    output.stdout_text =
        options.json_output ? manifest.dump(1) + "\n" : render::yaml_text(manifest);
    return ExitCode::kOk;
  }
  // A sister asks for the server's GPUs: say before creating it when no node has them free (its
  // pod would stay Pending; the wait below gives up after kUnschedulableGraceS, not
  // --ready-timeout).
  if (std::int64_t wanted = k8s::gpu_count(container.gpus); wanted > 0) {
    k8s::GpuCapacity capacity = k8s::read_gpu_capacity(cluster.kubectl);
    std::int64_t most_free = 0;
    for (const k8s::NodeGpus& node : capacity.nodes) most_free = std::max(most_free, node.free());
    if (capacity.checked && most_free < wanted) {
      note(
          fmt::format("warning: no node has {} nvidia.com/gpu free (at most {}); the sister pod "
                      "will likely stay Pending",
                      wanted, most_free));
    }
  }
  // Refusals of the capture itself and local problems come before anything is created.
  ServerEndpoint endpoint;
  if (!options.trace) {
    build_or_refuse(
        pod_capture_spec(options, std::string(k8s::kNcuMount) + "/ncu", assessment.safety));
    if (!options.startup) {
      check_warm_options(options.warm);
      endpoint = server_endpoint(options, container);
    }
  }
  k8s::LocalPlan plan = prepare_output(options, "sister", sister.run_id);
  keep_interrupts();
  const std::string& ns = options.namespace_name;
  k8s::CleanupReceipt receipt(plan.receipt, "sister", options.context);
  OperationEnd end(cluster.kubectl, receipt);  // deletes what was created, on every exit path
  Outcome outcome;
  try {
    k8s::create_sister(
        cluster.kubectl, receipt, manifest, ns, cluster.target.deployment, sister.run_id,
        [&](const std::string& name) {
          note(fmt::format("creating Deployment {}/{} (the server under {}, outside the Service)",
                           ns, name, options.trace ? "kprof's tracer" : "`ncu --mode launch`"));
        });
    k8s::SisterPod pod;
    bool running = k8s::wait_for_sister_pod(cluster.kubectl, ns, sister.run_id, container.name,
                                            options.trace, options.ready_timeout_s, pod);
    k8s::PodPlacement where{options.trace ? "sister-trace" : "sister",
                            ns,
                            cluster.target.deployment,
                            pod.pod,
                            container.name,
                            pod.node,
                            container.image,
                            pod.image_id,
                            fs::absolute(receipt.path()).string()};
    if (!running && pod.stuck) throw K8sFailed(render::describe_pod_stuck(*pod.stuck));
    if (!running)
      throw K8sFailed(interrupt_received() ? "interrupted while waiting for the sister pod"
                      : options.trace
                          ? "the sister pod's server was not ready in time (--ready-timeout)"
                          : "the sister pod did not reach Running in time (--ready-timeout)");
    if (options.trace) {
      note(fmt::format("pod {} ready on {}", where.pod, where.node));
      if (!trace_in_pod(options, cluster, where, plan.out_dir, output)) outcome.all_ok = false;
      return end.finish(outcome, output);
    }
    note(fmt::format("pod {} running on {}; waiting for the server to wait for ncu", where.pod,
                     where.node));
    bool waiting = k8s::wait_for_attachable_server(cluster.kubectl, ns, where.pod, container.name,
                                                   options.ready_timeout_s);
    if (!waiting)
      throw K8sFailed(interrupt_received() ? "interrupted while waiting for the server"
                                           : "the server never printed ncu's \"Waiting "
                                             "for profiler to attach\" (--ready-timeout)");
    if (!options.startup) {
      capture::CaptureSpec spec =
          pod_capture_spec(options, std::string(k8s::kNcuMount) + "/ncu", assessment.safety);
      if (!warm_capture_in_sister(outcome, output, options, cluster, where, plan.out_dir, spec,
                                  endpoint, container.api_key))
        outcome.all_ok = false;
      return end.finish(outcome, output);
    }
    for (int i = 1; i <= options.captures && !interrupt_received(); ++i) {
      capture::CaptureSpec spec =
          pod_capture_spec(options, std::string(k8s::kNcuMount) + "/ncu", assessment.safety);
      capture_in_pod(outcome, options, cluster, where, plan.out_dir, spec, i, output.argv);
    }
  } catch (const k8s::KubectlError& error) {
    outcome.kubernetes_failure(render::describe_kubectl_error(error), output);
  } catch (const K8sFailed& error) {
    outcome.kubernetes_failure(error.what(), output);
  }
  return end.finish(outcome, output);
}

ExitCode run_sidecar(const K8sOptions& options, Output& output) {
  if (options.image.empty())
    throw UsageError(
        "--image is required: an image holding Nsight Compute for the profiler container");
  if (options.pod.empty() && options.deployment.empty())
    throw UsageError("give --pod NAME or a DEPLOYMENT");
  k8s::Cluster cluster = read_cluster(options);
  const k8s::ContainerInfo& container = server_container(cluster, options.container);
  if (!container.under_ncu_launch) {
    throw UsageError(fmt::format(
        "container {} does not run under `ncu --mode launch`, so nothing in the pod can attach "
        "to it: use `kprof k8s sister` (see `kprof k8s preflight`)",
        container.name));
  }
  if (cluster.target.pods.empty()) throw K8sFailed("no pod to attach a profiler container to");
  const k8s::PodInfo& pod = cluster.target.pods.front();
  if (!k8s::is_dns_subdomain(pod.name))
    throw K8sFailed(fmt::format("kubectl returned a pod without a valid name ({})",
                                quoted_command({pod.name})));
  k8s::Assessment assessment =
      k8s::assess(cluster.target, container, cluster.versions.client_minor);
  build_or_refuse(pod_capture_spec(options, options.ncu_path, assessment.safety));
  std::string run = k8s::run_id();
  k8s::LocalPlan plan = prepare_output(options, "sidecar", run);
  keep_interrupts();
  const std::string& ns = options.namespace_name;
  std::string name = "kprof-ncu-" + run;  // a fresh name each time: ephemeral containers stay
  k8s::CleanupReceipt receipt(plan.receipt, "sidecar", options.context);
  OperationEnd end(cluster.kubectl, receipt);
  k8s::SidecarCall debug =
      k8s::sidecar_debug_call({ns, pod.name, options.image, container.name, name, options.profile,
                               cluster.versions.client_minor, options.lifetime_s,
                               fs::path(receipt.path()).parent_path().string()});
  for (const std::string& line : debug.notes) note(line);
  Outcome outcome;
  try {
    note(fmt::format("adding profiler container {} to pod {}/{} (kubectl debug --profile {})", name,
                     ns, pod.name, options.profile));
    cluster.kubectl.check(debug.argv);
    // Recorded once added: it cannot be removed, so the receipt is its record, not a to-do.
    receipt.created("EphemeralContainer", ns, pod.name + "/" + name, false,
                    fmt::format("ephemeral containers cannot be removed from a pod; its process "
                                "(sleep {}) ends by itself",
                                options.lifetime_s),
                    run);
    bool running = k8s::wait_for_ephemeral_container(cluster.kubectl, ns, pod.name, name,
                                                     options.ready_timeout_s);
    if (!running) throw K8sFailed("the profiler container did not start in time (--ready-timeout)");
    auto image = pod.image_ids.find(container.name);
    k8s::PodPlacement where{"sidecar",
                            ns,
                            cluster.target.deployment,
                            pod.name,
                            name,
                            pod.node,
                            container.image,
                            image != pod.image_ids.end() ? image->second : "",
                            fs::absolute(receipt.path()).string()};
    for (int i = 1; i <= options.captures && !interrupt_received(); ++i) {
      capture::CaptureSpec spec = pod_capture_spec(options, options.ncu_path, assessment.safety);
      capture_in_pod(outcome, options, cluster, where, plan.out_dir, spec, i, output.argv);
    }
  } catch (const k8s::KubectlError& error) {
    outcome.kubernetes_failure(render::describe_kubectl_error(error), output);
  } catch (const K8sFailed& error) {
    outcome.kubernetes_failure(error.what(), output);
  }
  return end.finish(outcome, output);
}

ExitCode run_cleanup(const K8sOptions& options, Output& output) {
  k8s::CleanupReceipt receipt = k8s::CleanupReceipt::load(options.receipt);
  k8s::Kubectl kubectl(kubectl_path(options.kubectl), options.context, options.kubeconfig);
  k8s::OperationEndReport report = k8s::clean_up_receipt(kubectl, receipt);
  // On failure nothing goes to stdout: every line is on stderr, each a `kprof:` line.
  for (const std::string& line : render::cleanup_lines(report, receipt)) {
    if (report.clean) {
      output.stdout_text += line + "\n";
    } else {
      output.stderr_text += "kprof: " + line + "\n";
    }
  }
  return report.clean ? ExitCode::kOk : ExitCode::kK8sFailed;
}

void add_cluster_options(CLI::App* command, K8sOptions& options) {
  command->add_option("--kubectl", options.kubectl,
                      "kubectl to run (default: $KPROF_KUBECTL, then PATH)");
  command->add_option("--context", options.context, "kubeconfig context");
  command->add_option("--kubeconfig", options.kubeconfig, "kubeconfig file (default: kubectl's)");
  command->add_option("-n,--namespace", options.namespace_name, "Namespace")->capture_default_str();
}

void add_capture_options(CLI::App* command, K8sOptions& options) {
  command->add_option("--preset", options.preset, "triage (default), basic or full")
      ->capture_default_str();
  command->add_option("-k,--kernel-name", options.kernel_regex,
                      "Only kernels whose name matches this regex");
  command->add_option("--launch-skip", options.launch_skip,
                      "Skip this many matching launches first");
  command->add_option("-c,--launch-count", options.launch_count,
                      "Profile this many matching launches per capture");
  command->add_option("--captures", options.captures, "Attach, capture and detach this many times")
      ->capture_default_str();
  command->add_option("--timeout", options.timeout_s, "Seconds one capture may take")
      ->capture_default_str();
  command
      ->add_option("--ready-timeout", options.ready_timeout_s,
                   "Seconds to wait for the pod/container (and, warm, the server) to be ready")
      ->capture_default_str();
  command->add_flag("--force", options.force, "Allow an unscoped --preset full");
  command->add_option("-o,--output", options.output,
                      "Folder for the bundles (capture-N), the receipt and generated objects");
  command->add_option("--receipt", options.receipt,
                      "Cleanup receipt path (default in the output folder)");
  command->add_option("--campaign", options.campaign, "Label recorded in each bundle's manifest");
  command->add_option("--cell", options.cell, "Cell id recorded in each bundle's manifest");
}

}  // namespace

void define_k8s(CLI::App& parent, Runner& runner) {
  CLI::App* k8s = parent.add_subcommand(
      "k8s", "Capture from a live Kubernetes deployment (preflight, sister, sidecar, cleanup)");
  k8s->require_subcommand(1);
  k8s->footer(
      "All through your kubectl (exec'd with an argv; no shell). Start with `preflight`, which "
      "reads\n"
      "the Deployment, its pods and Services and recommends a method and a safety preset:\n"
      "  sister   a copy of the Deployment (same image, args, env minus CUDA_INJECTION64_PATH,\n"
      "           1 replica, labels no Service selects, ncu copied in by an initContainer, the\n"
      "           server under `ncu --mode launch`). kprof holds the server unprofiled through\n"
      "           its start-up, reaches it with kubectl port-forward, waits until it is ready,\n"
      "           sends warm-up requests, then per capture attaches while --load-concurrency\n"
      "           requests are in flight and detaches (the server keeps running), --captures\n"
      "           times, then deletes it. --startup captures the start-up instead.\n"
      "  sister --trace  the same copy under kprof's tracer instead of ncu (copied in from\n"
      "           --tracer-image): one window of --trace-duration seconds opened and closed with\n"
      "           kubectl exec, the traces copied out verified and ranked, then deleted.\n"
      "  sidecar  an ephemeral profiler container (kubectl debug --profile, --target, --custom on\n"
      "           kubectl >= 1.31) in a pod whose server already runs under `ncu --mode launch`.\n"
      "Each report is copied out with kubectl cp, its SHA-256 checked against the pod's, into an\n"
      "evidence bundle (capture-N/) whose manifest records the pod, node, image digest and "
      "revision.\n"
      "A cleanup receipt (JSON) lists what was created and deleted; it is written after every "
      "step,\n"
      "so it survives failures, SIGINT and SIGTERM; `kprof k8s cleanup --receipt R` removes "
      "leftovers.\n\n"
      "kprof deletes only objects that still carry its labels "
      "(app.kubernetes.io/managed-by=kprof,\n"
      "kprof.dev/run=RUN of the receipt); receipts are validated whole before anything is done.\n\n"
      "Exit codes: 0 ok; 2 refused (options, names Kubernetes cannot have); 3 output folder,\n"
      "bundle or receipt already there or unwritable (checked before creating anything); 4 not a\n"
      "valid receipt; 7 a capture failed; 8 interrupted (cleanup done, receipt written) or a\n"
      "capture ran past --timeout (its bundle .incomplete); 9 kubectl not found; 10 a\n"
      "Kubernetes call failed (not found, forbidden, ephemeral containers disabled, …: the\n"
      "message says which and what to do) or something created is left.\n\n"
      "Examples:\n"
      "  kprof k8s preflight -n serving llama-70b\n"
      "  kprof k8s sister -n serving llama-70b --ncu-image "
      "nvcr.io/nvidia/cuda:13.0.0-devel-ubuntu24.04 --dry-run\n"
      "  kprof k8s sister -n serving llama-70b --ncu-image IMAGE -k 'gemm|attention' --captures 3 "
      "-o llama-run\n"
      "  kprof k8s sister -n serving llama-70b --ncu-image IMAGE -k nvjet --load-concurrency 64 "
      "--attach-process VLLM::EngineCore\n"
      "  kprof k8s sister -n serving llama-70b --trace --tracer-image IMAGE --trace-duration 20\n"
      "  kprof k8s cleanup --receipt llama-run/kprof-sister-receipt-….json");

  auto preflight = std::make_shared<K8sOptions>();
  CLI::App* c = k8s->add_subcommand(
      "preflight", "Read the target and recommend sidecar or sister and a safety preset");
  add_cluster_options(c, *preflight);
  c->add_option("DEPLOYMENT", preflight->deployment, "Deployment name")->required();
  c->add_option("--container", preflight->container, "Server container (default: the first)");
  c->add_flag("--json", preflight->json_output, "Print JSON (kprof.k8s-preflight/1)");
  c->callback([&runner, preflight] {
    runner = [preflight](Output& o) { return run_preflight(*preflight, o); };
  });

  auto sister = std::make_shared<K8sOptions>();
  c = k8s->add_subcommand(
      "sister", "Serve the same model under ncu in a copy of the Deployment, capture, delete it");
  add_cluster_options(c, *sister);
  add_capture_options(c, *sister);
  c->add_option("DEPLOYMENT", sister->deployment, "Deployment to copy")->required();
  c->add_option("--container", sister->container, "Server container (default: the first)");
  c->add_option("--ncu-image", sister->ncu_image,
                "Image holding Nsight Compute, copied in by an initContainer");
  c->add_option("--ncu-dir", sister->ncu_dir, "Nsight Compute's folder in that image")
      ->capture_default_str();
  c->add_flag("--dry-run", sister->dry_run,
              "Print the Deployment (YAML; JSON with --json) and create nothing");
  c->add_flag("--json", sister->json_output, "With --dry-run: JSON instead of YAML");
  c->add_flag("--trace", sister->trace,
              "Run the copy under kprof's tracer instead of ncu: one window of --trace-duration "
              "seconds, the traces copied out and ranked");
  c->add_option("--tracer-image", sister->tracer_image,
                "With --trace: image holding libkprof_tracer.so and libcupti.so.13, copied in by "
                "an initContainer");
  c->add_option("--tracer-dir", sister->tracer_dir, "Their folder in that image")
      ->capture_default_str();
  c->add_option("--memory-fraction", sister->memory_fraction,
                "The engine's memory fraction in the copy (rewrites vLLM's "
                "--gpu-memory-utilization or SGLang's --mem-fraction-static in its command): "
                "at 0.5 or less ncu's replay save stays on the GPU (1-5 s a kernel on an H200, "
                "18-41 s at 80-100 GiB resident)")
      ->check(CLI::Range(0.05, 1.0));
  c->add_option("--trace-duration", sister->trace_duration_s, "Seconds the trace window is open")
      ->capture_default_str();
  c->add_flag("--startup", sister->startup,
              "Capture the first matching launches of the server's start-up instead of the warm "
              "sequence (no requests are sent)");
  c->add_option("--server-port", sister->server_port,
                "Where the server takes requests in the pod (default: its --port, also read "
                "from a `sh -c` script's words, else its containerPort named http, else the "
                "first)");
  c->add_option("--ready-path", sister->ready_path,
                "Readiness: this path answers 200 through the port-forward (default: the "
                "readiness probe's path, else /health)");
  add_warm_options(c, sister->warm,
                   "Readiness: a line matching this regex in the server container's log "
                   "(kubectl logs), instead of --ready-path");
  c->add_option("--top", sister->top, "With --trace: kernels listed in each ranking")
      ->capture_default_str();
  c->callback([&runner, sister, c] {
    // What only ncu uses is refused with --trace rather than silently ignored.
    for (const char* name : {"--ncu-image", "--ncu-dir", "--preset", "--kernel-name",
                             "--launch-skip", "--launch-count", "--captures", "--force"}) {
      if (c->get_option(name)->count() > 0) sister->ncu_only_given.push_back(name);
    }
    for (const char* name : {"--tracer-image", "--tracer-dir", "--trace-duration", "--top"}) {
      if (c->get_option(name)->count() > 0) sister->trace_only_given.push_back(name);
    }
    for (const char* name :
         {"--server-port", "--ready-path", "--attach-process", "--attach-timeout",
          "--ready-log-line", "--warmup-requests", "--warmup-timeout", "--load-concurrency",
          "--prompt-len", "--output-len", "--load-api", "--model"}) {
      if (c->get_option(name)->count() > 0) {
        sister->warm_only_given.push_back(name);
        sister->ncu_only_given.push_back(name);  // the tracer sends no requests either
      }
    }
    if (c->get_option("--startup")->count() > 0) sister->ncu_only_given.push_back("--startup");
    runner = [sister](Output& o) { return run_sister(*sister, o); };
  });

  auto sidecar = std::make_shared<K8sOptions>();
  c = k8s->add_subcommand(
      "sidecar",
      "Add an ephemeral profiler container to a pod running under ncu --mode launch; capture");
  add_cluster_options(c, *sidecar);
  add_capture_options(c, *sidecar);
  c->add_option("DEPLOYMENT", sidecar->deployment, "Deployment whose first pod to use");
  c->add_option("--pod", sidecar->pod, "A pod, instead of a Deployment");
  c->add_option("--container", sidecar->container,
                "Server container to --target (default: the first)");
  c->add_option("--image", sidecar->image, "Image of the profiler container (holding ncu)");
  c->add_option("--ncu-path", sidecar->ncu_path, "ncu inside that image")->capture_default_str();
  c->add_option("--profile", sidecar->profile,
                "kubectl debug --profile (sysadmin gives the capabilities ncu needs)")
      ->capture_default_str();
  c->add_option("--lifetime", sidecar->lifetime_s,
                "Seconds the profiler container lives (it cannot be removed)")
      ->capture_default_str();
  c->callback(
      [&runner, sidecar] { runner = [sidecar](Output& o) { return run_sidecar(*sidecar, o); }; });

  auto cleanup = std::make_shared<K8sOptions>();
  c = k8s->add_subcommand("cleanup", "Remove what a receipt lists as left over");
  c->add_option("--receipt", cleanup->receipt, "A kprof cleanup receipt")->required();
  c->add_option("--kubectl", cleanup->kubectl, "kubectl to run");
  c->add_option("--context", cleanup->context, "kubeconfig context");
  c->add_option("--kubeconfig", cleanup->kubeconfig, "kubeconfig file");
  c->callback(
      [&runner, cleanup] { runner = [cleanup](Output& o) { return run_cleanup(*cleanup, o); }; });
}

}  // namespace kprof::cli
