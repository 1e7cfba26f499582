#include "k8s/k8s_render.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <filesystem>

#include "common/redact.h"
#include "common/text.h"
#include "render/envelope.h"

namespace kprof::k8s {

using render::with_envelope;
namespace {
using nlohmann::json;

void emit_yaml(YAML::Emitter& out, const json& value) {
  if (value.is_object()) {
    out << YAML::BeginMap;
    for (const auto& [key, item] : value.items()) {
      out << YAML::Key << key << YAML::Value;
      emit_yaml(out, item);
    }
    out << YAML::EndMap;
  } else if (value.is_array()) {
    out << YAML::BeginSeq;
    for (const auto& item : value) emit_yaml(out, item);
    out << YAML::EndSeq;
  } else if (value.is_string()) {
    out << YAML::DoubleQuoted << value.get<std::string>();
  } else if (value.is_boolean()) {
    out << value.get<bool>();
  } else if (value.is_number_integer()) {
    out << value.get<long long>();
  } else if (value.is_number()) {
    out << value.get<double>();
  } else {
    out << YAML::Null;
  }
}

}  // namespace

std::string yaml_text(const json& value) {
  YAML::Emitter emitter;
  emit_yaml(emitter, value);
  return std::string(emitter.c_str()) + "\n";
}

namespace {
json gpu_capacity_json(const k8s::GpuCapacity& capacity) {
  json nodes = json::array();
  for (const k8s::NodeGpus& node : capacity.nodes) {
    nodes.push_back({{"name", node.name},
                     {"allocatable", node.allocatable},
                     {"requested", node.requested},
                     {"free", node.free()}});
  }
  return {{"checked", capacity.checked},
          {"why_not", capacity.checked ? json(nullptr) : json(capacity.why_not)},
          {"nodes", nodes}};
}
}  // namespace

std::string describe_pod_stuck(const k8s::PodStuck& stuck) {
  std::string next;
  if (stuck.reason == "Unschedulable") {
    next =
        "the sister asks for the same GPUs as the server: free them (scale another workload "
        "down), add a node, or profile the server itself with `kprof k8s sidecar` if it runs "
        "under ncu";
  } else if (stuck.reason == "ErrImagePull" || stuck.reason == "ImagePullBackOff" ||
             stuck.reason == "InvalidImageName") {
    next = "check --ncu-image / --tracer-image (name, tag, the pod's imagePullSecrets)";
  } else {
    next = "read the pod's log (kubectl logs --previous) for why the server exits";
  }
  return fmt::format("the sister pod cannot start: {}: {} → {}", stuck.reason, stuck.message, next);
}

json preflight_json(const PreflightView& view, const std::vector<std::string>& argv) {
  const k8s::TargetInfo& t = view.target;
  const k8s::ContainerInfo& container = view.container;
  json pods = json::array();
  for (const auto& p : t.pods)
    pods.push_back(
        {{"name", p.name}, {"node", p.node}, {"phase", p.phase}, {"image_ids", p.image_ids}});
  // The server's command line and environment are where a key enters this view (its --api-key,
  // HF_TOKEN): shown redacted; the sister kubectl creates keeps them whole (common/redact.h).
  json env = json::object();
  for (const auto& [k, v] : container.env)
    env[k] = is_secret_name(k) && !v.empty() ? std::string(kRedacted) : redact_secrets(v);
  json services = json::array();
  for (const auto& s : t.services) services.push_back(s.name);
  return with_envelope(
      "kprof.k8s-preflight/1", argv,
      {{"kubectl",
        {{"client", view.versions.client_text},
         {"server", view.versions.server_text},
         {"debug_custom_supported", view.versions.client_minor >= k8s::kCustomMinimumMinor}}},
       {"namespace", t.namespace_name},
       {"deployment", t.deployment},
       {"revision", t.revision},
       {"replicas", t.replicas},
       {"pods", pods},
       {"services", services},
       {"container",
        {{"name", container.name},
         {"image", container.image},
         {"command", redact_secrets(container.command)},
         {"args", redact_secrets(container.args)},
         {"env", env},
         {"gpus", container.gpus},
         {"gpu_memory_utilization", container.gpu_memory_utilization
                                        ? json(*container.gpu_memory_utilization)
                                        : json(nullptr)},
         {"under_ncu_launch", container.under_ncu_launch}}},
       {"gpu_capacity", gpu_capacity_json(view.gpu_capacity)},
       {"route",
        {{"id", capture::route_id(view.route.route)},
         {"why", view.route.why},
         {"next", view.route.next}}},
       {"recommendation",
        {{"method", view.assessment.method},
         {"safety", view.assessment.safety},
         {"reasons", view.assessment.reasons},
         {"warnings", view.assessment.warnings}}}});
}

std::string preflight_text(const PreflightView& view) {
  const k8s::TargetInfo& t = view.target;
  const k8s::ContainerInfo& container = view.container;
  std::string services;
  for (const auto& x : t.services) services += (services.empty() ? "" : ", ") + x.name;
  std::string text =
      fmt::format("deployment {}/{} (revision {}): {} replica{}, services {}\n", t.namespace_name,
                  t.deployment, t.revision.empty() ? "?" : t.revision, t.replicas,
                  t.replicas == 1 ? "" : "s", services.empty() ? "none" : services);
  for (const auto& p : t.pods)
    text += fmt::format("  pod {} on {} ({})\n", p.name, p.node.empty() ? "?" : p.node, p.phase);
  std::vector<std::string> command = container.command;
  command.insert(command.end(), container.args.begin(), container.args.end());
  text += fmt::format(
      "container {}: {}\n  command: {}\n  gpus: {}{}\n", container.name, container.image,
      quoted_command(redact_secrets(command)), container.gpus.empty() ? "none" : container.gpus,
      container.gpu_memory_utilization
          ? fmt::format(", GPU memory fraction {:.2f}", *container.gpu_memory_utilization)
          : "");
  text += fmt::format(
      "kubectl: client {}, server {}; `kubectl debug --custom`: {}\n", view.versions.client_text,
      view.versions.server_text.empty() ? "?" : view.versions.server_text,
      view.versions.client_minor >= k8s::kCustomMinimumMinor ? "yes" : "no (kubectl < 1.31)");
  if (view.gpu_capacity.checked) {
    for (const k8s::NodeGpus& node : view.gpu_capacity.nodes) {
      text += fmt::format("node {}: nvidia.com/gpu {} allocatable, {} requested, {} free\n",
                          node.name, node.allocatable, node.requested, node.free());
    }
  }
  text += fmt::format("route: {} — {}\n", capture::route_title(view.route.route), view.route.why);
  if (!view.route.next.empty()) text += "  → " + view.route.next + "\n";
  text += fmt::format("recommended: kprof k8s {} with --safety {}\n", view.assessment.method,
                      view.assessment.safety);
  for (const auto& r : view.assessment.reasons) text += "  because " + r + "\n";
  for (const auto& w : view.assessment.warnings) text += "  warning: " + w + "\n";
  return text;
}

std::string kubectl_failure_hint(const std::string& kind) {
  if (kind == "not_found") return "check the namespace (-n) and the name";
  if (kind == "forbidden")
    return "your RBAC role lacks this verb; ask for it or use a context that has it";
  if (kind == "ephemeral_disabled")
    return "this cluster has ephemeral containers disabled: use `kprof k8s sister`";
  if (kind == "unknown_flag") return "this kubectl is too old for the option; upgrade kubectl";
  if (kind == "unreachable") return "check the context and that the API server is reachable";
  return "see kubectl's message";
}

std::string describe_kubectl_error(const k8s::KubectlError& error) {
  return fmt::format("{} [{}] → {}", error.what(), error.kind, kubectl_failure_hint(error.kind));
}

std::string describe_cleanup_step(const k8s::CleanupStep& step, const std::string& receipt) {
  using Result = k8s::CleanupStep::Result;
  const std::string what = step.object.describe();
  switch (step.result) {
    case Result::kDeleted:
      return "deleted " + what;
    case Result::kGone:
      return what + " is not in the cluster (deleted already, or never created)";
    case Result::kRefused:
      return fmt::format(
          "refused to delete {}: {}; kprof deletes only what it created (labels {}={} and {}=RUN "
          "of the receipt); it stays listed in {}",
          what, step.detail, k8s::kManagedByLabel, k8s::kManagedByValue, k8s::kRunLabel, receipt);
    case Result::kFailed:
      return fmt::format("could not delete {}: {} [{}] → {}", what, step.detail, step.failure_kind,
                         kubectl_failure_hint(step.failure_kind));
    case Result::kCannotRemove:
      return fmt::format("cannot remove {}: {}", what, step.detail);
  }
  return what;
}

std::string trace_files_text(const k8s::PodTraceResult& traced, const k8s::PodPlacement& where) {
  namespace fs = std::filesystem;
  const std::vector<k8s::TracedFile>& files = traced.window.files;
  std::string text =
      fmt::format("{} trace file{} from {}/{} in {}:\n", files.size(), files.size() == 1 ? "" : "s",
                  where.namespace_name, where.pod, traced.bundle_path);
  for (const std::string& path : traced.copied_files) {
    std::string name = fs::path(path).filename().string();
    std::string line = "  " + path;
    for (const capture::TraceWindowLine& w : traced.window.windows) {
      if (fs::path(w.path).filename() == name)
        line += fmt::format("  pid {} window {}, {} events, stopped by {}", w.pid, w.window,
                            w.events, w.stop_reason);
    }
    text += line + "\n";
  }
  return text;
}

OperationEndText operation_end_text(const k8s::OperationEndReport& report,
                                    const k8s::CleanupReceipt& receipt) {
  using Result = k8s::CleanupStep::Result;
  OperationEndText out;
  for (const k8s::CleanupStep& step : report.steps) {
    std::string line = describe_cleanup_step(step, receipt.path());
    if (step.result == Result::kDeleted || step.result == Result::kGone) {
      out.notes.push_back(line);
    } else if (step.result != Result::kCannotRemove) {
      out.text += "kprof: " + line + "\n";
    }
  }
  size_t left = receipt.leftovers().size();
  out.text += fmt::format("kprof: cleanup receipt {} ({}; {} leftover{})\n", receipt.path(),
                          report.status, left, left == 1 ? "" : "s");
  for (const k8s::ReceiptObject& object : receipt.leftovers()) {
    std::string how =
        object.left_because && object.left_because->rfind("kprof refused", 0) == 0
            ? fmt::format("{}; if it is yours to remove: `{}`", *object.left_because,
                          quoted_command({"kubectl", "delete", "deployment", "-n",
                                          object.namespace_name, "--", object.name}))
            : fmt::format("remove with `{}`",
                          quoted_command({"kprof", "k8s", "cleanup", "--receipt", receipt.path()}));
    out.text += fmt::format("  left: {} — {}\n", object.describe(), how);
  }
  for (const k8s::CleanupStep& step : report.steps) {
    if (step.result == Result::kCannotRemove)
      out.text += fmt::format("  stays: {} — {}\n", step.object.describe(), step.detail);
  }
  return out;
}

std::vector<std::string> cleanup_lines(const k8s::OperationEndReport& report,
                                       const k8s::CleanupReceipt& receipt) {
  std::vector<std::string> lines;
  for (const k8s::CleanupStep& step : report.steps)
    lines.push_back(describe_cleanup_step(step, receipt.path()));
  size_t left = receipt.leftovers().size();
  lines.push_back(fmt::format("{} leftover{} in {}", left, left == 1 ? "" : "s", receipt.path()));
  return lines;
}

}  // namespace kprof::k8s
