#include "k8s/operation.h"

#include <fmt/format.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <random>
#include <stdexcept>
#include <thread>

#include "common/child_process.h"
#include "common/error.h"
#include "common/file_bytes.h"
#include "common/json_table.h"
#include "common/redact.h"
#include "common/text.h"
#include "k8s/workload.h"

namespace kprof::k8s {
namespace {
namespace fs = std::filesystem;
using nlohmann::json;

std::string selector_text(const std::map<std::string, std::string>& labels) {
  std::string text;
  for (const auto& [key, value] : labels) text += (text.empty() ? "" : ",") + key + "=" + value;
  return text;
}

void make_folder(const fs::path& dir) {
  std::error_code error;
  fs::create_directories(dir, error);
  if (error || !fs::is_directory(dir)) {
    throw InputError(ExitCode::kInputUnreadable, dir.string(), InputPosition::none(),
                     "cannot create the output folder: " +
                         (error ? error.message() : std::string("not a directory")));
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    throw InputError(ExitCode::kInputUnreadable, dir.string(), InputPosition::none(),
                     "the output folder is not writable");
  }
}

}  // namespace

void check_names(const ClusterRequest& request) {
  auto refuse = [](const char* option, const std::string& value, const char* what,
                   const char* rule) {
    throw std::invalid_argument(
        fmt::format("{} {}: is not a valid {} ({})", option, quoted_command({value}), what, rule));
  };
  if (!is_dns_label(request.namespace_name))
    refuse("-n", request.namespace_name, "Kubernetes namespace", kLabelRule);
  if (!request.deployment.empty() && !is_dns_subdomain(request.deployment))
    refuse("DEPLOYMENT", request.deployment, "Deployment name", kSubdomainRule);
  if (!request.pod.empty() && !is_dns_subdomain(request.pod))
    refuse("--pod", request.pod, "pod name", kSubdomainRule);
  if (!request.container.empty() && !is_dns_label(request.container))
    refuse("--container", request.container, "container name", kLabelRule);
}

Cluster read_cluster(Kubectl kubectl, const ClusterRequest& request) {
  check_names(request);
  Cluster cluster{std::move(kubectl), {}, {}};
  const std::string& ns = request.namespace_name;
  KubectlResult version = cluster.kubectl.run({"version", "-o", "json"});
  if (json versions = parse_json_or_discarded(version.out); !versions.is_discarded()) {
    try {
      cluster.versions = parse_versions(versions);
    } catch (const json::exception&) {
    }
  }
  json deployment;
  if (!request.deployment.empty()) {
    deployment = cluster.kubectl.get_json(
        {"get", "deployment", "-n", ns, "-o", "json", "--", request.deployment});
  }
  json pods = json{{"items", json::array()}};
  if (!request.pod.empty()) {
    pods["items"].push_back(
        cluster.kubectl.get_json({"get", "pod", "-n", ns, "-o", "json", "--", request.pod}));
    if (deployment.is_null()) {
      // A pod alone: its own spec stands for the template.
      const json& pod = pods["items"][0];
      deployment = {
          {"metadata", {{"name", string_at(pod, {"metadata", "name"})}, {"namespace", ns}}},
          {"spec",
           {{"replicas", 1},
            {"template",
             {{"metadata", value_at(pod, {"metadata"})}, {"spec", value_at(pod, {"spec"})}}}}}};
    }
  } else {
    std::string selector =
        selector_text(parse_target(deployment, json::object(), json::object()).match_labels);
    pods = cluster.kubectl.get_json({"get", "pods", "-n", ns, "-l", selector, "-o", "json"});
  }
  json services = cluster.kubectl.get_json({"get", "services", "-n", ns, "-o", "json"});
  cluster.target = parse_target(deployment, pods, services);
  return cluster;
}

std::string run_id() {
  std::random_device device;
  std::mt19937 generator(device());
  static const char* kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string id;
  for (int i = 0; i < 5; ++i) id += kAlphabet[generator() % 36];
  return id;
}

LocalPlan prepare_output(const LocalPlanRequest& request) {
  LocalPlan plan;
  fs::path dir = request.output.empty() ? fs::path(".") : fs::path(request.output);
  if (request.receipt.empty()) {
    plan.receipt = (dir / fmt::format("kprof-{}-receipt-{}-{}.json", request.kind,
                                      utc_time("%Y%m%dT%H%M%SZ"), request.run))
                       .string();
  } else {
    plan.receipt = request.receipt;
  }
  // Without -o the bundles go beside the receipt, as before.
  fs::path out_dir = request.output.empty() ? fs::path(plan.receipt).parent_path() : dir;
  if (out_dir.empty()) out_dir = ".";
  make_folder(out_dir);
  fs::path receipt_dir = fs::path(plan.receipt).parent_path();
  if (!receipt_dir.empty()) make_folder(receipt_dir);
  for (int i = 1; i <= request.bundles; ++i) {
    fs::path bundle = out_dir / fmt::format("{}-{}", request.bundle_prefix, i);
    std::error_code error;
    if (fs::symlink_status(bundle, error).type() != fs::file_type::not_found) {
      throw InputError(ExitCode::kInputUnreadable, bundle.string(), InputPosition::none(),
                       "already exists; choose another --output (kprof never overwrites a bundle)");
    }
  }
  plan.out_dir = out_dir.string();
  return plan;
}

bool wait_for(double timeout_s, const std::function<bool()>& ready) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    if (interrupt_received()) return false;
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return false;
}

namespace {
struct PodCannotStart {};
}  // namespace

GpuCapacity read_gpu_capacity(const Kubectl& kubectl) {
  try {
    json nodes = kubectl.get_json({"get", "nodes", "-o", "json"});
    json pods = kubectl.get_json({"get", "pods", "--all-namespaces", "-o", "json",
                                  "--field-selector=status.phase!=Succeeded,status.phase!=Failed"});
    return gpu_capacity(nodes, pods);
  } catch (const KubectlError& error) {
    GpuCapacity capacity;
    capacity.why_not = error.what();
    return capacity;
  }
}

bool wait_for_sister_pod(const Kubectl& kubectl, const std::string& namespace_name,
                         const std::string& run, const std::string& container, bool need_ready,
                         double timeout_s, SisterPod& found) {
  std::string selector = std::string(kRunLabel) + "=" + run;
  std::optional<std::chrono::steady_clock::time_point> unschedulable_since;
  try {
    return wait_for(timeout_s, [&] {
      found.stuck.reset();  // the state of this poll only
      json pods =
          kubectl.get_json({"get", "pods", "-n", namespace_name, "-l", selector, "-o", "json"});
      const json& items = value_at(pods, {"items"});
      for (const auto& p : items.is_array() ? items : json::array()) {
        std::string pod_name = string_at(p, {"metadata", "name"});
        if (std::optional<PodStuck> stuck = pod_stuck(p)) {
          // An image that cannot be pulled or a crash loop will not fix itself; a scheduler
          // that found no node might, shortly (preemption, a node back from maintenance).
          auto now = std::chrono::steady_clock::now();
          if (stuck->reason == "Unschedulable" || stuck->reason == "ErrImagePull") {
            if (!unschedulable_since) unschedulable_since = now;
            if (now - *unschedulable_since < std::chrono::duration<double>(kUnschedulableGraceS)) {
              found.stuck = stuck;  // what to say if --ready-timeout passes first
              continue;
            }
          }
          found.pod = pod_name;
          found.stuck = stuck;
          throw PodCannotStart{};
        }
        if (string_at(p, {"status", "phase"}) != "Running" || !is_dns_subdomain(pod_name)) continue;
        const json& statuses = value_at(p, {"status", "containerStatuses"});
        bool server_ready = false;
        for (const auto& st : statuses.is_array() ? statuses : json::array()) {
          if (string_at(st, {"name"}) != container) continue;
          found.image_id = string_at(st, {"imageID"});
          server_ready = value_at(st, {"ready"}) == true;
        }
        // A traced server keeps its probes: ready means it serves (CUDA initialised, tracer
        // loaded). Under ncu it waits for the attach, which its log says.
        if (need_ready && !server_ready) continue;
        found.pod = pod_name;
        found.node = string_at(p, {"spec", "nodeName"});
        found.stuck.reset();
        return true;
      }
      return false;
    });
  } catch (const PodCannotStart&) {
    return false;
  }
}

bool wait_for_attachable_server(const Kubectl& kubectl, const std::string& namespace_name,
                                const std::string& pod, const std::string& container,
                                double timeout_s) {
  return wait_for(timeout_s, [&] {
    KubectlResult logs =
        kubectl.run({"logs", "-n", namespace_name, "-c", container, "--tail", "200", "--", pod});
    return logs.exit_code == 0 &&
           logs.out.find("Waiting for profiler to attach") != std::string::npos;
  });
}

bool wait_for_ephemeral_container(const Kubectl& kubectl, const std::string& namespace_name,
                                  const std::string& pod, const std::string& name,
                                  double timeout_s) {
  return wait_for(timeout_s, [&] {
    json p = kubectl.get_json({"get", "pod", "-n", namespace_name, "-o", "json", "--", pod});
    const json& statuses = value_at(p, {"status", "ephemeralContainerStatuses"});
    for (const auto& st : statuses.is_array() ? statuses : json::array()) {
      if (string_at(st, {"name"}) == name && value_at(st, {"state", "running"}).is_object())
        return true;
    }
    return false;
  });
}

std::string create_sister(const Kubectl& kubectl, CleanupReceipt& receipt,
                          const nlohmann::json& manifest, const std::string& namespace_name,
                          const std::string& sister_of, const std::string& run,
                          const std::function<void(const std::string&)>& announce) {
  std::string name = string_at(manifest, {"metadata", "name"});
  // The record beside the receipt carries no secret of the server's command line or environment
  // (common/redact.h); what kubectl creates must, so it is handed over from a file of its own in
  // a folder only this user can read, removed as soon as kubectl has read it.
  fs::path folder = fs::path(receipt.path()).parent_path();
  nlohmann::json record = manifest;
  redact_secrets_in_json(record);
  write_file_atomically((folder / (name + ".json")).string(), record.dump(1) + "\n");
  receipt.created("Deployment", namespace_name, name, true, "sister of " + sister_of, run);
  announce(name);
  const std::string private_dir = create_unique_directory((folder / ".kprof-create-").string());
  struct RemoveOnExit {
    std::string dir;
    ~RemoveOnExit() {
      std::error_code ignored;
      fs::remove_all(dir, ignored);
    }
  } remove{private_dir};
  fs::permissions(private_dir, fs::perms::owner_all, fs::perm_options::replace);
  const std::string create_file = private_dir + "/" + name + ".json";
  write_file_atomically(create_file, manifest.dump(1) + "\n");
  kubectl.check({"create", "-n", namespace_name, "-f", create_file, "-o", "name"});
  return name;
}

SidecarCall sidecar_debug_call(const SidecarRequest& request) {
  SidecarCall call;
  std::string profile = request.profile;
  if (profile == "sysadmin" && request.client_minor < 30) {
    // kubectl learnt the sysadmin profile in 1.30.
    call.notes.push_back(
        fmt::format("kubectl 1.{} has no --profile sysadmin (1.30+): using general, so ncu can "
                    "read counters only where the node allows it to all users "
                    "(RmProfilingAdminOnly: 0)",
                    request.client_minor));
    profile = "general";
  }
  call.argv = {"debug",       "-n",       request.namespace_name,   request.pod,   "--image",
               request.image, "--target", request.target_container, "--container", request.name,
               "--profile",   profile};
  if (request.client_minor >= kCustomMinimumMinor) {
    json custom = ephemeral_custom_spec();
    std::vector<std::string> problems = check_ephemeral_custom(custom);
    if (!problems.empty()) throw std::logic_error(problems.front());
    fs::path custom_file = fs::path(request.custom_dir) / (request.name + "-custom.json");
    write_file_atomically(custom_file.string(), custom.dump() + "\n");
    call.argv.insert(call.argv.end(), {"--custom", custom_file.string()});
  } else {
    call.notes.push_back(
        fmt::format("kubectl 1.{} has no `debug --custom` (1.{}+): the profiler container gets its "
                    "capabilities from --profile {} only",
                    request.client_minor, kCustomMinimumMinor, request.profile));
  }
  call.argv.insert(call.argv.end(), {"--", "sleep", std::to_string(request.lifetime_s)});
  return call;
}

namespace {

OperationEndReport delete_listed(Kubectl& kubectl, CleanupReceipt& receipt) {
  kubectl.cleaning();
  OperationEndReport report;
  report.steps = clean_up(kubectl, receipt);
  for (const CleanupStep& step : report.steps) {
    if (step.result == CleanupStep::Result::kRefused || step.result == CleanupStep::Result::kFailed)
      report.clean = false;
  }
  return report;
}

}  // namespace

OperationEndReport end_operation(Kubectl& kubectl, CleanupReceipt& receipt, std::string status) {
  OperationEndReport report = delete_listed(kubectl, receipt);
  if (!report.clean && status == "ok") status = "failed";
  receipt.finish(status);
  report.status = status;
  return report;
}

OperationEndReport clean_up_receipt(Kubectl& kubectl, CleanupReceipt& receipt) {
  OperationEndReport report = delete_listed(kubectl, receipt);
  report.status = report.clean ? "cleaned" : "cleanup-failed";
  receipt.finish(report.status);
  return report;
}

}  // namespace kprof::k8s
