// The manifest of every evidence bundle kprof writes (`kprof.bundle/1`): a local capture, an
// attach capture, a capture in a Kubernetes pod and a trace window in one are one shape, built
// here and nowhere else. Always present: schema, status, tool, campaign, cell_id,
// deployment_revision, started_at, ended_at, warnings, diagnoses. An ncu capture adds ncu,
// progress and its scope (preset, sections, metrics, kernel regex, launch skip/count, replay
// mode, clock control, target processes); then `target` (what a local capture ran) or `attach`
// (where it attached), `kubernetes` (where in the cluster), `trace` (a trace window's files).
// Status: "incomplete" when marked so (with incomplete_reason), else "failed" when a diagnosis
// is a failure or the caller marked it failed, else "ok".
#pragma once

#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "capture/ncu_command.h"
#include "capture/ncu_diagnosis.h"
#include "capture/ncu_progress.h"

namespace kprof::capture {

struct ManifestNcu {
  std::string path;     // the ncu that ran (inside the pod for a Kubernetes capture)
  std::string version;  // its banner line; "" when not known
  std::vector<std::string> argv;
  std::optional<int> exit_code;  // std::nullopt: it never started
  int signal = 0;
  bool detached_by_kprof = false;
};

struct ManifestKubernetes {
  std::string method;  // sister, sidecar, sister-trace
  std::string namespace_name, deployment, pod, container, node, image, image_digest;
  std::string cleanup_receipt, kubectl;
  nlohmann::json kubectl_exec = nlohmann::json::array();  // the exec argv (or the trace's calls)
  // An ncu capture: the report in the pod and the digests of the verified copy.
  std::optional<std::string> report_in_pod, sha256_in_pod, sha256_copied;
  std::optional<std::string> tracer_image;  // a trace window
};

class ManifestBuilder {
 public:
  // tool: the document's "tool" head (render::tool_json of kprof's argv).
  explicit ManifestBuilder(nlohmann::json tool);

  ManifestBuilder& labels(std::string campaign, std::string cell_id, std::string revision);
  ManifestBuilder& times(std::string started_at, std::string ended_at,
                         std::optional<double> elapsed_s = std::nullopt);
  ManifestBuilder& ncu(ManifestNcu ncu);
  ManifestBuilder& ncu_never_ran();  // ncu: null (a warm sequence stopped before its capture)
  ManifestBuilder& scope(const CaptureSpec& spec);
  ManifestBuilder& progress(const NcuProgress& progress);
  ManifestBuilder& warnings(std::vector<std::string> warnings);
  ManifestBuilder& diagnoses(std::vector<Diagnosis> diagnoses);
  // details: what the attach did beyond the endpoint (the process attached to, the steering
  // steps of a process tree, the warm sequence), merged into the block.
  ManifestBuilder& attach(const AttachEndpoint& endpoint,
                          const nlohmann::json& details = nlohmann::json::object());
  // The load that ran during the capture (the request driver's figures, warm-up, readiness).
  ManifestBuilder& load(nlohmann::json load);
  ManifestBuilder& target(std::vector<std::string> argv,
                          const std::vector<std::pair<std::string, std::string>>& env);
  ManifestBuilder& kubernetes(ManifestKubernetes where);
  ManifestBuilder& trace(nlohmann::json trace);
  // The capture's plan (capture_plan.h: plan_for_bundle), with the measured ncu wall time beside
  // the predicted one.
  ManifestBuilder& plan(nlohmann::json plan, double measured_ncu_wall_s);
  // What the capture cost the service (latency_guard.h's bill).
  ManifestBuilder& service(nlohmann::json service);
  ManifestBuilder& incomplete(std::string reason);  // "timeout", "interrupted"
  ManifestBuilder& failed();                        // a failure no diagnosis carries

  bool is_incomplete() const { return incomplete_reason_.has_value(); }
  bool is_failed() const;
  std::string status() const;  // "ok", "failed", "incomplete"
  nlohmann::json build() const;

 private:
  nlohmann::json doc_;
  std::vector<Diagnosis> diagnoses_;
  std::optional<std::string> incomplete_reason_;
  bool failed_ = false;
};

nlohmann::json diagnoses_json(const std::vector<Diagnosis>& diagnoses);

}  // namespace kprof::capture
