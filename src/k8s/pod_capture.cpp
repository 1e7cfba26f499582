#include "k8s/pod_capture.h"

#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>

#include "common/text.h"

namespace kprof::k8s {
namespace {

constexpr const char* kAttachScript =
    "report=$1; shift; \"$@\" & pid=$!; "
    "while kill -0 \"$pid\" 2>/dev/null; do "
    "if [ -s \"$report.ncu-rep\" ]; then sleep 1; kill -INT \"$pid\"; wait \"$pid\"; exit $?; fi; "
    "sleep 0.5; done; wait \"$pid\"";

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

}  // namespace

KubectlExecRunner::KubectlExecRunner(const Kubectl& kubectl, PodPlacement where, std::string in_pod,
                                     std::string label,
                                     std::function<void(const std::string&)> note)
    : kubectl_(kubectl),
      where_(std::move(where)),
      in_pod_(std::move(in_pod)),
      label_(std::move(label)),
      note_(std::move(note)) {}

ChildResult KubectlExecRunner::run(const ChildRequest& request) {
  exec_ = {"exec", "-n", where_.namespace_name, where_.pod,     "-c",   where_.container, "--",
           "sh",   "-c", kAttachScript,         "kprof-attach", in_pod_};
  exec_.insert(exec_.end(), request.argv.begin(), request.argv.end());
  std::chrono::milliseconds timeout = request.timeout.value_or(std::chrono::hours(24 * 365));
  KubectlResult attached = kubectl_.run(exec_, timeout, [&](const std::string& line, bool err) {
    if (request.on_line) request.on_line(line, err);
  });
  ChildResult result;
  result.started = attached.started;
  result.start_error = attached.started ? "" : attached.err;
  result.exit_code = attached.exit_code;
  result.interrupted = attached.interrupted;
  // The script's SIGINT ends the attach client with 130 once the report is written.
  result.stop_requested = attached.exit_code == 130;
  result.out = std::move(attached.out);
  result.err = std::move(attached.err);
  result.combined = std::move(attached.combined);
  result.elapsed = attached.elapsed;
  return result;
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
  k.report_in_pod = in_pod_ + ".ncu-rep";
  k.sha256_in_pod = copy_ ? copy_->sha256_in_pod : "";
  k.sha256_copied = copy_ ? copy_->sha256_copied : "";
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
  capture::ManifestBuilder manifest(labels.tool);
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
