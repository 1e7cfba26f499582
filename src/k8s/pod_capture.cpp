#include "k8s/pod_capture.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <filesystem>
#include <memory>
#include <sstream>

#include "common/child_process.h"
#include "common/error.h"
#include "common/text.h"
#include "common/utf8.h"
#include "k8s/port_forward.h"
#include "k8s/workload.h"
#include "render/envelope.h"

namespace kprof::k8s {
namespace {

// The attach client in the pod: ncu stays attached until the target exits, so the script
// detaches it (SIGINT, from inside the pod) once the report is written or kprof asks for it with
// the stop file (a hold ends so; killing kubectl exec would leave ncu attached in the pod).
// `ncu` is a shell script that runs the real ncu as its child (in Nsight Compute's folder and
// CUDA's bin/ alike): a SIGINT to the script alone leaves ncu attached (seen on the H200,
// tools/k8s/attach-wrapper-check.py), so ncu runs in a process group of its own (setsid) and the
// whole group gets the SIGINT, as kprof's local runner does; without setsid (or when the group
// cannot be signalled), the script and its children. setsid also takes ncu out of the wrapper's
// session: a wrapper killed with its exec does not take ncu with it (the stop file detaches it). A
// background job of a non-interactive sh also starts with SIGINT ignored, which a program may keep
// (Python does): coreutils' env --default-signal=INT gives it back.
constexpr const char* kAttachScript =
    "report=$1; shift; group=; "
    "if env --default-signal=INT env >/dev/null 2>&1; then set -- env --default-signal=INT \"$@\"; "
    "fi; "
    "if command -v setsid >/dev/null 2>&1; then set -- setsid \"$@\"; group=1; fi; "
    "\"$@\" & pid=$!; "
    "while kill -0 \"$pid\" 2>/dev/null; do "
    "if [ -s \"$report.ncu-rep\" ] || [ -e \"$report.stop\" ]; then sleep 1; "
    "if [ -z \"$group\" ] || ! kill -s INT -- \"-$pid\" 2>/dev/null; then kill -s INT \"$pid\" "
    "$(cat /proc/\"$pid\"/task/*/children 2>/dev/null); fi; "
    "wait \"$pid\"; exit $?; fi; "
    "sleep 0.5; done; wait \"$pid\"";
// Creates the stop file $1 (a path kprof made up, passed as a parameter, never as shell text).
constexpr const char* kStopScript = ": > \"$1\"";
// A process of the pod as /proc shows it: its state letter, its command line on one line (NULs
// and the newlines of a `python -c` script made spaces), its threads' names (a thread that ends
// meanwhile is left out). Exit 3: no such process.
constexpr const char* kDescribeScript =
    "d=/proc/$1; [ -d \"$d\" ] || exit 3; read -r stat < \"$d/stat\" || exit 3; "
    "s=${stat##*) }; echo \"${s%% *}\"; tr '\\000\\n' '  ' < \"$d/cmdline\"; echo; "
    "for t in \"$d\"/task/*; do cat \"$t/comm\" 2>/dev/null; done; exit 0";
// After the stop file, how long the client may take to detach before kubectl itself is stopped.
constexpr std::chrono::seconds kDetachGrace{20};

// Where the pod is, as every bundle captured or traced in it records it.
capture::ManifestKubernetes placement_block(const PodPlacement& where) {
  capture::ManifestKubernetes k;
  k.method = where.method;
  k.namespace_name = where.namespace_name;
  k.deployment = where.deployment;
  k.pod = where.pod;
  k.container = where.container;
  k.node = where.node;
  k.image = where.image;
  k.image_digest = where.image_id;
  k.cleanup_receipt = where.cleanup_receipt;
  return k;
}

// The profiled pod's Ready condition and the container's restartCount (k8s/workload.h's
// pod_readiness) through `kubectl get pod`, for the latency guard: a read that fails says why.
capture::PodStatus read_pod_status(const Kubectl& kubectl, const PodPlacement& where) {
  capture::PodStatus status;
  KubectlResult got =
      kubectl.run({"get", "pod", "-n", where.namespace_name, "-o", "json", "--", where.pod},
                  std::chrono::seconds(20));
  if (!got.started || got.exit_code != 0) {
    status.problem = got.started ? condense_message(got.err) : "kubectl could not be started";
    return status;
  }
  nlohmann::json pod = nlohmann::json::parse(got.out, nullptr, /*allow_exceptions=*/false);
  if (pod.is_discarded() || !pod.is_object()) {
    status.problem = "kubectl get pod printed no JSON object";
    return status;
  }
  PodReadiness readiness = pod_readiness(pod, where.container);
  status.read = true;
  status.ready = readiness.ready;
  status.restart_count = readiness.restart_count;
  return status;
}

}  // namespace

KubectlExecRunner::KubectlExecRunner(const Kubectl& kubectl, PodPlacement where, std::string in_pod,
                                     std::string label,
                                     std::function<void(const std::string&)> note)
    : kubectl_(kubectl),
      where_(std::move(where)),
      in_pod_(std::move(in_pod)),
      label_(std::move(label)),
      note_(std::move(note)) {}

ChildResult run_attach_client(const Kubectl& kubectl, const PodPlacement& where,
                              const std::string& in_pod, const ChildRequest& request,
                              std::vector<std::string>* exec_argv) {
  std::vector<std::string> exec = {
      "exec", "-n", where.namespace_name, where.pod,      "-c",  where.container, "--",
      "sh",   "-c", kAttachScript,        "kprof-attach", in_pod};
  exec.insert(exec.end(), request.argv.begin(), request.argv.end());
  if (exec_argv) *exec_argv = exec;
  using Clock = std::chrono::steady_clock;
  Clock::time_point began = Clock::now();
  // Asked to stop (the session's or the holder's on_tick), out of time, or kprof interrupted:
  // the stop file detaches ncu inside the pod; kubectl is stopped only if that does not end it
  // in time.
  std::optional<Clock::time_point> stop_written;
  bool asked = false, timed_out = false;
  std::string stop_failure;
  auto write_stop = [&] {
    KubectlStream cleanup;
    cleanup.survive_interrupt = true;
    KubectlResult stop =
        kubectl.run({"exec", "-n", where.namespace_name, where.pod, "-c", where.container, "--",
                     "sh", "-c", kStopScript, "kprof-stop", in_pod + ".stop"},
                    std::chrono::seconds(30), cleanup);
    if (!stop.started || stop.exit_code != 0) {
      stop_failure = fmt::format(
          "kprof could not write the stop file {}.stop in the pod ({}); "
          "kubectl exec was stopped instead",
          in_pod, condense_message(stop.err));
    }
  };
  bool connected = false;
  KubectlStream stream;
  stream.on_line = [&request, &connected](const std::string& line, bool err) {
    if (line.rfind("==PROF== Connected to process", 0) == 0) connected = true;
    if (request.on_line) request.on_line(line, err);
  };
  stream.survive_interrupt = true;
  stream.on_tick = [&] {
    if (!stop_written) {
      if (request.on_tick && request.on_tick()) asked = true;
      if (request.timeout && Clock::now() - began > *request.timeout) timed_out = true;
      if (asked || timed_out || interrupt_received()) {
        write_stop();
        stop_written = Clock::now();
      }
    }
    return stop_written && (!stop_failure.empty() || Clock::now() - *stop_written > kDetachGrace);
  };
  KubectlResult attached = kubectl.run(exec, std::chrono::hours(24 * 365), stream);
  // kubectl exec ended by itself after ncu connected (the stream dropped, kubectl killed): ncu
  // may still be attached in the pod; the stop file detaches it there too (harmless when it has
  // ended).
  if (!stop_written && connected && attached.exit_code != 130) write_stop();
  ChildResult result;
  result.started = attached.started;
  result.start_error = attached.started ? "" : attached.err;
  result.exit_code = attached.exit_code;
  result.timed_out = timed_out;
  result.interrupted = !timed_out && (attached.interrupted || interrupt_received());
  // The script's SIGINT ends the attach client with 130: the report written, or kprof asked.
  result.stop_requested = !timed_out && (attached.exit_code == 130 || asked);
  result.out = std::move(attached.out);
  result.err = std::move(attached.err);
  if (!stop_failure.empty()) result.err += "\n" + stop_failure;
  result.combined = std::move(attached.combined);
  result.elapsed = attached.elapsed;
  return result;
}

PodProcess parse_pod_process(int pid, const std::string& text) {
  PodProcess found;
  std::istringstream lines(text);
  std::string state, command_line, thread;
  if (!std::getline(lines, state) || !std::getline(lines, command_line)) return found;
  capture::LaunchedProcess process;
  process.pid = pid;
  process.command_line = to_valid_utf8(trim(command_line));
  while (std::getline(lines, thread)) {
    std::string name = to_valid_utf8(trim(thread));
    if (!name.empty() && std::find(process.thread_names.begin(), process.thread_names.end(),
                                   name) == process.thread_names.end())
      process.thread_names.push_back(name);
  }
  found.zombie = trim(state) == "Z";
  found.process = std::move(process);
  return found;
}

PodProcess describe_pod_process(const Kubectl& kubectl, const PodPlacement& where, int pid) {
  KubectlResult shown =
      kubectl.run({"exec", "-n", where.namespace_name, where.pod, "-c", where.container, "--", "sh",
                   "-c", kDescribeScript, "kprof-describe", std::to_string(pid)},
                  std::chrono::seconds(30));
  PodProcess found;
  if (shown.started && shown.exit_code == 3) {
    found.gone = true;
    return found;
  }
  if (!shown.started || shown.exit_code != 0) return found;  // unknown: the exec failed
  return parse_pod_process(pid, shown.out);
}

capture::TreeHost pod_tree_host(const Kubectl& kubectl, const PodPlacement& where) {
  capture::TreeHost host;
  auto holds = std::make_shared<std::atomic<int>>(0);
  host.run_client = [&kubectl, where, holds](const ChildRequest& request) {
    std::string in_pod = fmt::format("/tmp/kprof-{}-hold-{}", getpid(), ++*holds);
    return run_attach_client(kubectl, where, in_pod, request, nullptr);
  };
  host.describe = [&kubectl, where](int pid) {
    return describe_pod_process(kubectl, where, pid).process;
  };
  return host;
}

ChildResult KubectlExecRunner::run(const ChildRequest& request) {
  return run_attach_client(kubectl_, where_, in_pod_, request, &exec_);
}

std::optional<bool> KubectlExecRunner::target_still_there(const capture::AttachEndpoint&,
                                                          const std::vector<int>& pids) {
  if (pids.empty()) return std::nullopt;
  bool known = true;
  for (int pid : pids) {
    PodProcess process = describe_pod_process(kubectl_, where_, pid);
    if (process.gone || process.zombie) return false;
    known &= process.process.has_value();
  }
  return known ? std::optional<bool>(true) : std::nullopt;
}

std::optional<capture::Diagnosis> KubectlExecRunner::fetch_report(const std::string& written,
                                                                  const std::string& local) {
  copy_ = copy_verified(kubectl_, {where_.namespace_name, where_.pod, where_.container}, written,
                        local, "report", label_, note_);
  return copy_->failure;
}

void KubectlExecRunner::describe(capture::ManifestBuilder& manifest) const {
  capture::ManifestKubernetes k = placement_block(where_);
  k.kubectl = kubectl_.path();
  k.kubectl_exec = exec_;
  // ncu ran in the pod (else a warm sequence stopped before its capture: no report anywhere).
  if (!exec_.empty()) {
    k.report_in_pod = in_pod_ + ".ncu-rep";
    k.sha256_in_pod = copy_ ? copy_->sha256_in_pod : "";
    k.sha256_copied = copy_ ? copy_->sha256_copied : "";
  }
  manifest.kubernetes(std::move(k));
}

capture::CaptureResult capture_in_pod(const Kubectl& kubectl, const PodPlacement& where,
                                      const capture::CaptureSpec& spec,
                                      capture::SessionOptions session, int index,
                                      const std::string& bundle_path,
                                      capture::CaptureObserver& observer) {
  std::string in_pod = fmt::format("/tmp/kprof-{}-capture-{}", getpid(), index);
  KubectlExecRunner runner(kubectl, where, in_pod, fmt::format("capture {}", index),
                           [&observer](const std::string& text) { observer.note(text); });
  return capture::CaptureSession(spec, std::move(session), runner, observer).run(bundle_path);
}

capture::WarmCaptureResult warm_capture_in_pod(const Kubectl& kubectl, const PodPlacement& where,
                                               PodWarmRequest request,
                                               const capture::SessionOptions& session,
                                               capture::CaptureObserver& observer,
                                               const std::vector<std::string>& bundle_paths) {
  auto note = [&observer](const std::string& text) { observer.note(text); };
  PortForward forward(kubectl, {where.namespace_name, where.pod, request.server_port}, note);
  std::string started_at = utc_time();
  auto began = std::chrono::steady_clock::now();
  try {
    forward.start(60);
  } catch (const KubectlError& error) {
    capture::WarmCaptureResult result;
    result.failed = true;
    result.incomplete = interrupt_received();
    if (result.incomplete) {
      result.diagnoses.push_back({"interrupted", true, error.what(), "nothing was captured"});
    } else {
      result.diagnoses.push_back(
          {"port_forward_failed", true,
           fmt::format("the requests cannot reach the server: {} [{}]", error.what(), error.kind),
           "check that kubectl may port-forward in this namespace (RBAC: pods/portforward "
           "create) and that the server listens on --server-port in the pod"});
    }
    // Its bundle, as any stopped sequence's: nothing was held yet, the server runs on unheld.
    capture::StoppedSequence stopped;
    stopped.started_at = started_at;
    stopped.elapsed_s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - began).count();
    KubectlExecRunner runner(kubectl, where, fmt::format("/tmp/kprof-{}-capture-1", getpid()),
                             "capture 1", note);
    capture::keep_stopped_bundle(result, request.warm.capture, session, runner, std::move(stopped),
                                 request.warm.captures, nlohmann::json::array(),
                                 bundle_paths.front());
    return result;
  }
  note(fmt::format("requests reach {}/{} port {} through kubectl port-forward at {}", where.pod,
                   where.container, request.server_port, forward.base_url()));
  capture::WarmCaptureSpec& warm = request.warm;
  warm.load.base_url = forward.base_url();
  warm.ready_url = forward.base_url() + request.ready_path;
  auto log_problem = std::make_shared<std::string>();
  if (!warm.ready_log_regex.empty()) {
    warm.ready_log_file = fmt::format("the log of {}/{}", where.pod, where.container);
    // The whole log each time (a kubectl logs -f would hold one more stream open for the whole
    // wait): every 2 s, and what kubectl said when it failed.
    warm.log = std::make_shared<capture::WholeTextLogFollower>(
        [&kubectl, where, log_problem]() -> std::optional<std::string> {
          KubectlResult log =
              kubectl.run({"logs", "-n", where.namespace_name, where.pod, "-c", where.container},
                          std::chrono::seconds(60));
          *log_problem = log.exit_code == 0 ? "" : condense_message(log.err);
          if (log.exit_code != 0) return std::nullopt;
          return std::move(log.out);
        },
        [log_problem] { return *log_problem; });
    warm.log_poll_s = 2;
  }
  warm.names = {"--ready-path", "--server-port"};
  warm.host = pod_tree_host(kubectl, where);
  warm.runner_for = [&kubectl, &observer, where](int index) {
    return std::make_unique<KubectlExecRunner>(
        kubectl, where, fmt::format("/tmp/kprof-{}-capture-{}", getpid(), index),
        fmt::format("capture {}", index),
        [&observer](const std::string& text) { observer.note(text); });
  };
  warm.route = [&forward] { return forward.describe(); };
  // The guard (or the bill alone) watches the pod too: its readiness and the server container's
  // restarts, read through kubectl every 2 s at least (never faster than the probes).
  if (warm.guard) {
    warm.guard->pod_name = where.namespace_name + "/" + where.pod;
    warm.guard->pod_container = where.container;
    warm.guard->pod_interval_s = std::max(2.0, warm.guard->interval_s);
    warm.guard->read_pod = [&kubectl, where] { return read_pod_status(kubectl, where); };
  }
  capture::WarmCaptureResult result =
      capture::run_warm_capture(warm, session, observer, bundle_paths);
  forward.stop();
  return result;
}

PodTraceResult trace_in_pod(const Kubectl& kubectl, const PodPlacement& where,
                            const std::string& tracer_image, const TraceWindowOptions& window,
                            const BundleLabels& labels, const std::string& bundle_path,
                            const std::function<void(const std::string&)>& note) {
  namespace fs = std::filesystem;
  using nlohmann::json;
  capture::EvidenceBundle bundle(bundle_path);
  std::string started_at = utc_time();
  PodTraceResult result;
  TraceWindowResult& traced = result.window;
  traced = run_trace_window(kubectl, {where.namespace_name, where.pod, where.container}, window,
                            bundle.staging_path(), note);
  if (!traced.tracer_lines.empty()) {
    std::string lines;
    for (const std::string& line : traced.tracer_lines) lines += line + "\n";
    bundle.write("tracer-lines.txt", lines);
  }
  json files = json::array();
  for (const TracedFile& file : traced.files) {
    files.push_back({{"name", fs::path(file.local_path).filename().string()},
                     {"path_in_pod", file.pod_path},
                     {"sha256_in_pod", file.sha256_in_pod},
                     {"sha256_copied", file.sha256_copied}});
  }
  json windows = json::array();
  for (const capture::TraceWindowLine& w : traced.windows) {
    windows.push_back({{"pid", w.pid},
                       {"window", w.window},
                       {"stop_reason", w.stop_reason},
                       {"path_in_pod", w.path},
                       {"events", w.events},
                       {"dropped", w.dropped}});
  }
  result.failed = traced.failed();
  capture::ManifestBuilder manifest(render::tool_json(labels.argv));
  manifest.labels(labels.campaign, labels.cell_id, labels.revision)
      .times(started_at, utc_time())
      .trace({{"duration_s", window.duration_s},
              {"started_at", traced.started_at},
              {"stopped_at", traced.stopped_at},
              {"files", files},
              {"unfinished_in_pod", traced.unfinished},
              {"windows", windows}})
      .diagnoses(traced.diagnoses);
  capture::ManifestKubernetes k = placement_block(where);
  k.tracer_image = tracer_image;
  k.kubectl = kubectl.path();
  k.kubectl_exec = traced.control_calls;
  manifest.kubernetes(std::move(k));
  if (result.failed) manifest.failed();
  if (traced.interrupted) manifest.incomplete("interrupted");
  result.bundle_path =
      traced.interrupted ? bundle.abandon(manifest.build()) : bundle.commit(manifest.build());
  for (const TracedFile& file : traced.files) {
    result.copied_files.push_back(
        (fs::path(result.bundle_path) / fs::path(file.local_path).filename()).string());
  }
  return result;
}

}  // namespace kprof::k8s
