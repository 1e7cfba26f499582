#include "capture/bundle_manifest.h"

#include <algorithm>
#include <cmath>

#include "common/redact.h"

namespace kprof::capture {
namespace {
using nlohmann::json;

template <typename T>
json or_null(const std::optional<T>& value) {
  return value ? json(*value) : json(nullptr);
}

}  // namespace

json diagnoses_json(const std::vector<Diagnosis>& diagnoses) {
  json list = json::array();
  for (const auto& d : diagnoses) {
    list.push_back({{"id", d.id}, {"failure", d.failure}, {"what", d.what}, {"next", d.next}});
  }
  return list;
}

ManifestBuilder::ManifestBuilder(json tool) {
  doc_ = {{"schema", "kprof.bundle/1"},
          {"tool", std::move(tool)},
          {"campaign", ""},
          {"cell_id", ""},
          {"deployment_revision", ""},
          {"started_at", ""},
          {"ended_at", ""},
          {"warnings", json::array()}};
}

ManifestBuilder& ManifestBuilder::labels(std::string campaign, std::string cell_id,
                                         std::string revision) {
  doc_["campaign"] = std::move(campaign);
  doc_["cell_id"] = std::move(cell_id);
  doc_["deployment_revision"] = std::move(revision);
  return *this;
}

ManifestBuilder& ManifestBuilder::times(std::string started_at, std::string ended_at,
                                        std::optional<double> elapsed_s) {
  doc_["started_at"] = std::move(started_at);
  doc_["ended_at"] = std::move(ended_at);
  if (elapsed_s) doc_["elapsed_s"] = *elapsed_s;
  return *this;
}

ManifestBuilder& ManifestBuilder::ncu_never_ran() {
  doc_["ncu"] = nullptr;
  return *this;
}

ManifestBuilder& ManifestBuilder::ncu(ManifestNcu ncu) {
  doc_["ncu"] = {{"path", ncu.path},     {"version", ncu.version},
                 {"argv", ncu.argv},     {"exit_code", or_null(ncu.exit_code)},
                 {"signal", ncu.signal}, {"detached_by_kprof", ncu.detached_by_kprof}};
  return *this;
}

ManifestBuilder& ManifestBuilder::scope(const CaptureSpec& spec) {
  std::optional<std::int64_t> launch_count = effective_launch_count(spec);
  doc_.update({
      {"preset", preset_name(spec.preset)},
      {"preset_arguments", preset_arguments(spec.preset)},
      {"sections", spec.sections},
      {"metrics", spec.metrics},
      {"kernel_regex", spec.kernel_regex},
      {"launch_skip", or_null(spec.launch_skip)},
      {"launch_count", or_null(launch_count)},
      {"replay_mode", spec.replay_mode.empty() ? "kernel" : spec.replay_mode},
      {"clock_control", spec.clock_control},
  });
  // An attach capture profiles the process it attaches to; ncu takes no --target-processes there.
  if (!spec.attach) doc_["target_processes"] = spec.children ? "all" : "application-only";
  // Where profiling happened and the filters ncu applied beside the kernel regex (issue 13, 19).
  doc_["range"] = spec.range == Range::kCudaProfilerApi || spec.honor_profiler_start_stop
                      ? "cuda-profiler-api"
                      : "from-start";
  doc_["nvtx_include"] = spec.nvtx_include;
  doc_["nvtx_exclude"] = spec.nvtx_exclude;
  doc_["graph_profiling"] = spec.graph_profiling.empty() ? "node" : spec.graph_profiling;
  doc_["kernel_filter"] = kernel_filter(spec);  // as ncu got it (--children: NCCL left out)
  return *this;
}

ManifestBuilder& ManifestBuilder::progress(const NcuProgress& progress) {
  const std::vector<int>& passes = progress.passes;
  json low = nullptr, high = nullptr;
  if (!passes.empty()) {
    auto [min, max] = std::minmax_element(passes.begin(), passes.end());
    low = *min;
    high = *max;
  }
  doc_["progress"] = {{"kernels_profiled", progress.kernels_profiled},
                      {"passes_per_kernel", passes},
                      {"passes_min", low},
                      {"passes_max", high}};
  return *this;
}

ManifestBuilder& ManifestBuilder::warnings(std::vector<std::string> warnings) {
  doc_["warnings"] = std::move(warnings);
  return *this;
}

ManifestBuilder& ManifestBuilder::diagnoses(std::vector<Diagnosis> diagnoses) {
  diagnoses_ = std::move(diagnoses);
  return *this;
}

ManifestBuilder& ManifestBuilder::attach(const AttachEndpoint& endpoint, const json& details) {
  doc_["attach"] = {{"host", endpoint.host}, {"port", endpoint.port.value_or(49152)}};
  if (details.is_object()) doc_["attach"].update(details);
  return *this;
}

ManifestBuilder& ManifestBuilder::load(json load) {
  doc_["load"] = std::move(load);
  return *this;
}

ManifestBuilder& ManifestBuilder::target(
    std::vector<std::string> argv, const std::vector<std::pair<std::string, std::string>>& env) {
  json env_json = json::object();
  for (const auto& [name, value] : env) env_json[name] = value;
  doc_["target"] = {{"argv", std::move(argv)}, {"env", std::move(env_json)}};
  return *this;
}

ManifestBuilder& ManifestBuilder::kubernetes(ManifestKubernetes where) {
  json k = {{"method", where.method},
            {"namespace", where.namespace_name},
            {"deployment", where.deployment},
            {"pod", where.pod},
            {"container", where.container},
            {"node", where.node},
            {"image", where.image},
            {"image_digest", where.image_digest},
            {"cleanup_receipt", where.cleanup_receipt},
            {"kubectl", where.kubectl},
            {"kubectl_exec", where.kubectl_exec}};
  if (where.report_in_pod) k["report_in_pod"] = *where.report_in_pod;
  if (where.sha256_in_pod) k["sha256_in_pod"] = *where.sha256_in_pod;
  if (where.sha256_copied) k["sha256_copied"] = *where.sha256_copied;
  if (where.tracer_image) k["tracer_image"] = *where.tracer_image;
  doc_["kubernetes"] = std::move(k);
  return *this;
}

ManifestBuilder& ManifestBuilder::trace(json trace) {
  doc_["trace"] = std::move(trace);
  return *this;
}

ManifestBuilder& ManifestBuilder::plan(json plan, double measured_ncu_wall_s) {
  double predicted = plan.value("predicted_ncu_wall_s", 0.0);
  plan["measured_ncu_wall_s"] = std::round(measured_ncu_wall_s * 1000) / 1000;
  // measured / predicted − 1: how far off the plan was, for the next one.
  plan["error"] = predicted > 0
                      ? json(std::round((measured_ncu_wall_s / predicted - 1) * 1000) / 1000)
                      : json(nullptr);
  doc_["plan"] = std::move(plan);
  return *this;
}

ManifestBuilder& ManifestBuilder::service(json service) {
  doc_["service"] = std::move(service);
  return *this;
}

ManifestBuilder& ManifestBuilder::incomplete(std::string reason) {
  incomplete_reason_ = std::move(reason);
  return *this;
}

ManifestBuilder& ManifestBuilder::failed() {
  failed_ = true;
  return *this;
}

bool ManifestBuilder::is_failed() const {
  return failed_ || std::any_of(diagnoses_.begin(), diagnoses_.end(),
                                [](const Diagnosis& d) { return d.failure; });
}

std::string ManifestBuilder::status() const {
  if (incomplete_reason_) return "incomplete";
  return is_failed() ? "failed" : "ok";
}

json ManifestBuilder::build() const {
  json manifest = doc_;
  manifest["status"] = status();
  manifest["diagnoses"] = diagnoses_json(diagnoses_);
  if (incomplete_reason_) manifest["incomplete_reason"] = *incomplete_reason_;
  // The command lines, environments and URLs it quotes carry no secret (common/redact.h).
  redact_secrets_in_json(manifest);
  return manifest;
}

}  // namespace kprof::capture
