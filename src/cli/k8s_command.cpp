// kprof k8s preflight|sister|sidecar|cleanup: capture from a live Kubernetes deployment through
// the user's kubectl, without rebuilding its image, leaving a cleanup receipt whatever happens.
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <unistd.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>
#include <thread>

#include "capture/evidence_bundle.h"
#include "capture/ncu_command.h"
#include "capture/ncu_diagnosis.h"
#include "capture/ncu_locator.h"
#include "cli/analyze_command.h"
#include "cli/capture_support.h"
#include "cli/command.h"
#include "cli/rank_command.h"
#include "common/child_process.h"
#include "common/file_bytes.h"
#include "common/sha256.h"
#include "common/text.h"
#include "k8s/cleanup.h"
#include "k8s/cleanup_receipt.h"
#include "k8s/copy_out.h"
#include "k8s/kubectl.h"
#include "k8s/trace_window.h"
#include "k8s/workload.h"

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

std::string hint_for(const std::string& kind) {
  if (kind == "not_found") return "check the namespace (-n) and the name";
  if (kind == "forbidden")
    return "your RBAC role lacks this verb; ask for it or use a context that has it";
  if (kind == "ephemeral_disabled")
    return "this cluster has ephemeral containers disabled: use `kprof k8s sister`";
  if (kind == "unknown_flag") return "this kubectl is too old for the option; upgrade kubectl";
  if (kind == "unreachable") return "check the context and that the API server is reachable";
  return "see kubectl's message";
}

// How a sister or sidecar operation went: a Kubernetes failure ends its steps (never the cleanup
// after them) and is reported once.
struct Outcome {
  bool all_ok = true;
  bool kubernetes_failed = false;
  void kubernetes_failure(const std::string& message, Output& output) {
    all_ok = false;
    kubernetes_failed = true;
    output.stderr_text += "kprof: " + message + "\n";
  }
};

std::string describe(const k8s::KubectlError& error) {
  return fmt::format("{} [{}] → {}", error.what(), error.kind, hint_for(error.kind));
}

std::string run_id() {
  std::random_device device;
  std::mt19937 generator(device());
  static const char* kAlphabet = "abcdefghijklmnopqrstuvwxyz0123456789";
  std::string id;
  for (int i = 0; i < 5; ++i) id += kAlphabet[generator() % 36];
  return id;
}

// Names kprof passes to kubectl must be names Kubernetes can have: a value such as "--all" is
// refused here rather than risk kubectl reading it as a flag (get and delete also take names
// after `--`).
constexpr const char* kLabelRule =
    "a DNS-1123 label: at most 63 characters of a-z, 0-9 and '-', starting and ending with a "
    "letter or digit";
constexpr const char* kSubdomainRule =
    "a DNS-1123 subdomain: at most 253 characters of a-z, 0-9, '-' and '.', each part starting "
    "and ending with a letter or digit";

void check_names(const K8sOptions& options) {
  auto refuse = [](const char* option, const std::string& value, const char* what,
                   const char* rule) {
    throw UsageError(
        fmt::format("{} {}: is not a valid {} ({})", option, quoted_command({value}), what, rule));
  };
  if (!k8s::is_dns_label(options.namespace_name))
    refuse("-n", options.namespace_name, "Kubernetes namespace", kLabelRule);
  if (!options.deployment.empty() && !k8s::is_dns_subdomain(options.deployment))
    refuse("DEPLOYMENT", options.deployment, "Deployment name", kSubdomainRule);
  if (!options.pod.empty() && !k8s::is_dns_subdomain(options.pod))
    refuse("--pod", options.pod, "pod name", kSubdomainRule);
  if (!options.container.empty() && !k8s::is_dns_label(options.container))
    refuse("--container", options.container, "container name", kLabelRule);
}

std::string selector_text(const std::map<std::string, std::string>& labels) {
  std::string text;
  for (const auto& [key, value] : labels) text += (text.empty() ? "" : ",") + key + "=" + value;
  return text;
}

struct Cluster {
  k8s::Kubectl kubectl;
  k8s::KubectlVersions versions;
  k8s::TargetInfo target;
};

Cluster read_cluster(const K8sOptions& options) {
  check_names(options);
  Cluster cluster{
      k8s::Kubectl(kubectl_path(options.kubectl), options.context, options.kubeconfig), {}, {}};
  try {
    k8s::KubectlResult version = cluster.kubectl.run({"version", "-o", "json"});
    try {
      cluster.versions = k8s::parse_versions(json::parse(version.out));
    } catch (const json::exception&) {
    }
    json deployment;
    if (!options.deployment.empty()) {
      deployment = cluster.kubectl.get_json({"get", "deployment", "-n", options.namespace_name,
                                             "-o", "json", "--", options.deployment});
    }
    json pods = json{{"items", json::array()}};
    if (!options.pod.empty()) {
      pods["items"].push_back(cluster.kubectl.get_json(
          {"get", "pod", "-n", options.namespace_name, "-o", "json", "--", options.pod}));
      if (deployment.is_null()) {
        // A pod alone: its own spec stands for the template.
        const json& pod = pods["items"][0];
        deployment = {{"metadata",
                       {{"name", k8s::string_at(pod, {"metadata", "name"})},
                        {"namespace", options.namespace_name}}},
                      {"spec",
                       {{"replicas", 1},
                        {"template",
                         {{"metadata", k8s::value_at(pod, {"metadata"})},
                          {"spec", k8s::value_at(pod, {"spec"})}}}}}};
      }
    } else {
      std::string selector =
          selector_text(k8s::parse_target(deployment, json::object(), json::object()).match_labels);
      pods = cluster.kubectl.get_json(
          {"get", "pods", "-n", options.namespace_name, "-l", selector, "-o", "json"});
    }
    json services =
        cluster.kubectl.get_json({"get", "services", "-n", options.namespace_name, "-o", "json"});
    cluster.target = k8s::parse_target(deployment, pods, services);
  } catch (const k8s::KubectlError& error) {
    throw K8sFailed(describe(error));
  }
  return cluster;
}

const k8s::ContainerInfo& server_container(const Cluster& cluster, const std::string& name) {
  const k8s::ContainerInfo* container = cluster.target.container(name);
  if (!container) {
    throw UsageError(fmt::format("no container \"{}\" in {}", name, cluster.target.deployment));
  }
  return *container;
}

// Strings double-quoted (so "8", "on" or "0.92" stay strings), numbers and booleans bare.
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

std::string yaml_text(const json& value) {
  YAML::Emitter emitter;
  emit_yaml(emitter, value);
  return std::string(emitter.c_str()) + "\n";
}

// ---------------------------------------------------------------------------------------------
ExitCode run_preflight(const K8sOptions& options, Output& output) {
  Cluster cluster = read_cluster(options);
  const k8s::ContainerInfo& container = server_container(cluster, options.container);
  k8s::Assessment assessment =
      k8s::assess(cluster.target, container, cluster.versions.client_minor);
  const k8s::TargetInfo& t = cluster.target;
  if (options.json_output) {
    json pods = json::array();
    for (const auto& p : t.pods)
      pods.push_back(
          {{"name", p.name}, {"node", p.node}, {"phase", p.phase}, {"image_ids", p.image_ids}});
    json env = json::object();
    for (const auto& [k, v] : container.env) env[k] = v;
    json services = json::array();
    for (const auto& s : t.services) services.push_back(s.name);
    output.stdout_text =
        json{{"schema", "kprof.k8s-preflight/1"},
             {"kubectl",
              {{"client", cluster.versions.client_text},
               {"server", cluster.versions.server_text},
               {"debug_custom_supported",
                cluster.versions.client_minor >= k8s::kCustomMinimumMinor}}},
             {"namespace", t.namespace_name},
             {"deployment", t.deployment},
             {"revision", t.revision},
             {"replicas", t.replicas},
             {"pods", pods},
             {"services", services},
             {"container",
              {{"name", container.name},
               {"image", container.image},
               {"command", container.command},
               {"args", container.args},
               {"env", env},
               {"gpus", container.gpus},
               {"gpu_memory_utilization", container.gpu_memory_utilization
                                              ? json(*container.gpu_memory_utilization)
                                              : json(nullptr)},
               {"under_ncu_launch", container.under_ncu_launch}}},
             {"recommendation",
              {{"method", assessment.method},
               {"safety", assessment.safety},
               {"reasons", assessment.reasons},
               {"warnings", assessment.warnings}}}}
            .dump(1) +
        "\n";
    return ExitCode::kOk;
  }
  std::string text = fmt::format(
      "deployment {}/{} (revision {}): {} replica{}, services {}\n", t.namespace_name, t.deployment,
      t.revision.empty() ? "?" : t.revision, t.replicas, t.replicas == 1 ? "" : "s",
      t.services.empty() ? "none" : [&] {
        std::string s;
        for (const auto& x : t.services) s += (s.empty() ? "" : ", ") + x.name;
        return s;
      }());
  for (const auto& p : t.pods)
    text += fmt::format("  pod {} on {} ({})\n", p.name, p.node.empty() ? "?" : p.node, p.phase);
  text += fmt::format(
      "container {}: {}\n  command: {}\n  gpus: {}{}\n", container.name, container.image,
      quoted_command([&] {
        auto v = container.command;
        v.insert(v.end(), container.args.begin(), container.args.end());
        return v;
      }()),
      container.gpus.empty() ? "none" : container.gpus,
      container.gpu_memory_utilization
          ? fmt::format(", GPU memory fraction {:.2f}", *container.gpu_memory_utilization)
          : "");
  text += fmt::format(
      "kubectl: client {}, server {}; `kubectl debug --custom`: {}\n", cluster.versions.client_text,
      cluster.versions.server_text.empty() ? "?" : cluster.versions.server_text,
      cluster.versions.client_minor >= k8s::kCustomMinimumMinor ? "yes" : "no (kubectl < 1.31)");
  text += fmt::format("recommended: kprof k8s {} with --safety {}\n", assessment.method,
                      assessment.safety);
  for (const auto& r : assessment.reasons) text += "  because " + r + "\n";
  for (const auto& w : assessment.warnings) text += "  warning: " + w + "\n";
  output.stdout_text = text;
  return ExitCode::kOk;
}

// ---------------------------------------------------------------------------------------------
// The attach client, run inside the pod: ncu stays attached until the target exits, so the
// script detaches it (SIGINT) once the report file is written. User values arrive as "$@" —
// positional parameters, never parsed as shell code.
constexpr const char* kAttachScript =
    "report=$1; shift; \"$@\" & pid=$!; "
    "while kill -0 \"$pid\" 2>/dev/null; do "
    "if [ -s \"$report.ncu-rep\" ]; then sleep 1; kill -INT \"$pid\"; wait \"$pid\"; exit $?; fi; "
    "sleep 0.5; done; wait \"$pid\"";

struct PodTarget {
  std::string pod, container, node, image, image_id;
  fs::path out_dir;  // where the bundles go (checked by prepare_output before anything is created)
};

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

// One attach capture in the pod, copied out with its digest checked, into one bundle.
// Returns false when the capture failed (the bundle says why).
bool capture_in_pod(const K8sOptions& options, const Cluster& cluster, const PodTarget& where,
                    capture::CaptureSpec spec, int index, const std::string& method,
                    const k8s::CleanupReceipt& receipt, std::vector<std::string>& bundles) {
  const std::string& ns = options.namespace_name;
  std::string in_pod = fmt::format("/tmp/kprof-{}-capture-{}", getpid(), index);
  spec.export_path = in_pod;
  capture::NcuCommand command = build_or_refuse(spec);
  capture::EvidenceBundle bundle((where.out_dir / fmt::format("capture-{}", index)).string());
  std::vector<std::string> exec = {"exec",          "-n",  ns,   where.pod, "-c",
                                   where.container, "--",  "sh", "-c",      kAttachScript,
                                   "kprof-attach",  in_pod};
  exec.insert(exec.end(), command.argv.begin(), command.argv.end());
  note(fmt::format("capture {}: attaching in {}/{} ({}): {}", index, where.pod, where.container,
                   method, quoted_command(command.argv)));
  std::string started = utc_time();
  k8s::KubectlResult attached = cluster.kubectl.run(
      exec, std::chrono::milliseconds(static_cast<long long>(options.timeout_s * 1000)));
  bundle.write("ncu-stdout.txt", attached.out);
  bundle.write("ncu-stderr.txt", attached.err);
  // kAttachScript detaches the attach client with SIGINT once the report is written (ncu then
  // exits 130, as a timeout's SIGINT also ends it): kprof's doing, not an ncu failure.
  bool stopped_by_kprof = attached.interrupted || attached.exit_code == 130;
  std::vector<capture::Diagnosis> diagnoses = capture::diagnose(
      {command.argv, attached.out + attached.err, attached.exit_code, stopped_by_kprof});
  capture::NcuProgress progress = capture::parse_progress(attached.out);
  for (size_t i = 0; i < progress.kernels_profiled; ++i)
    note(fmt::format("capture {}: kernel {} profiled", index, i + 1));
  bool failed =
      std::any_of(diagnoses.begin(), diagnoses.end(), [](const auto& d) { return d.failure; });

  // Copy-out, verified: the digest inside the pod must equal the copy's.
  std::string report = bundle.path_of("report.ncu-rep");
  std::string inside, outside;
  if (!failed && !attached.interrupted) {
    k8s::VerifiedCopy copy =
        k8s::copy_verified(cluster.kubectl, {ns, where.pod, where.container}, in_pod + ".ncu-rep",
                           report, "report", fmt::format("capture {}", index), note);
    inside = copy.sha256_in_pod;
    outside = copy.sha256_copied;
    if (copy.failure) diagnoses.push_back(*copy.failure);
  }
  if (attached.interrupted) {
    diagnoses.push_back({"interrupted", true, "kprof was interrupted during the capture",
                         "the receipt lists what to clean up"});
  }
  std::string analysis_table;
  if (fs::exists(report) && outside == inside) {
    // ncu's own CSV exports when this machine has an ncu (the report is read locally).
    capture::NcuLocation local_ncu = capture::locate_ncu("");
    if (!local_ncu.path.empty()) write_ncu_exports(bundle, local_ncu.path, report);
    try {
      BundleAnalysis analysis = analyze_for_bundle(report);
      bundle.write("analysis.json", bundle.with_final_paths(analysis.json, false));
      analysis_table = bundle.with_final_paths(analysis.table, false);
    } catch (const InputError& error) {
      diagnoses.push_back({"report_unreadable", true, error.what(),
                           "keep the bundle and compare with ncu --import"});
    }
  }
  failed = std::any_of(diagnoses.begin(), diagnoses.end(), [](const auto& d) { return d.failure; });
  json manifest = {
      {"schema", "kprof.bundle/1"},
      {"status", attached.interrupted ? "incomplete"
                 : failed             ? "failed"
                                      : "ok"},
      {"tool", {{"name", "kprof"}, {"version", KPROF_VERSION}}},
      {"ncu",
       {{"path", spec.ncu},
        {"argv", command.argv},
        {"exit_code", attached.exit_code},
        {"detached_by_kprof", attached.exit_code == 130}}},
      {"attach", {{"host", "127.0.0.1"}, {"port", 49152}}},
      {"campaign", options.campaign},
      {"cell_id", options.cell},
      {"deployment_revision", cluster.target.revision},
      {"kubernetes",
       {{"method", method},
        {"namespace", ns},
        {"deployment", cluster.target.deployment},
        {"pod", where.pod},
        {"container", where.container},
        {"node", where.node},
        {"image", where.image},
        {"image_digest", where.image_id},
        {"report_in_pod", in_pod + ".ncu-rep"},
        {"sha256_in_pod", inside},
        {"sha256_copied", outside},
        {"cleanup_receipt", fs::absolute(receipt.path()).string()},
        {"kubectl", cluster.kubectl.path()},
        {"kubectl_exec", exec}}},
      {"started_at", started},
      {"ended_at", utc_time()},
      {"progress",
       {{"kernels_profiled", progress.kernels_profiled},
        {"passes_per_kernel",
         progress.passes_per_kernel ? json(*progress.passes_per_kernel) : json(nullptr)}}},
      {"warnings", command.warnings},
      {"diagnoses", diagnoses_json(diagnoses)},
  };
  manifest.update(capture_scope_json(spec));
  std::string written = attached.interrupted ? bundle.abandon(manifest) : bundle.commit(manifest);
  bundles.push_back(written);
  std::fputs(render_diagnoses(diagnoses).c_str(), stderr);
  note(fmt::format("capture {} {}: {} kernel{} profiled; bundle {}", index,
                   failed ? "failed" : "done", progress.kernels_profiled,
                   progress.kernels_profiled == 1 ? "" : "s", written));
  if (!analysis_table.empty()) std::fputs(analysis_table.c_str(), stdout);
  std::fflush(stdout);
  return !failed;
}

template <typename Predicate>
bool wait_for(double timeout_s, Predicate ready) {
  auto deadline = std::chrono::steady_clock::now() +
                  std::chrono::milliseconds(static_cast<long long>(timeout_s * 1000));
  while (std::chrono::steady_clock::now() < deadline) {
    if (interrupt_received()) return false;
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::seconds(1));
  }
  return false;
}

// The local side of a sister or sidecar operation, checked before anything is created in the
// cluster (a local failure after creating would leave it running): the output folder can be
// made, no bundle folder capture-1..N is already there, and the receipt path is free (the
// receipt's constructor refuses to overwrite one, and writes it: a receipt that cannot be written
// fails here too).
struct LocalPlan {
  fs::path out_dir;
  std::string receipt;
};

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

LocalPlan prepare_output(const K8sOptions& options, const std::string& kind,
                         const std::string& run) {
  LocalPlan plan;
  fs::path dir = options.output.empty() ? fs::path(".") : fs::path(options.output);
  if (options.receipt.empty()) {
    plan.receipt =
        (dir / fmt::format("kprof-{}-receipt-{}-{}.json", kind, utc_time("%Y%m%dT%H%M%SZ"), run))
            .string();
  } else {
    plan.receipt = options.receipt;
  }
  // Without -o the bundles go beside the receipt, as before.
  plan.out_dir = options.output.empty() ? fs::path(plan.receipt).parent_path() : dir;
  if (plan.out_dir.empty()) plan.out_dir = ".";
  make_folder(plan.out_dir);
  fs::path receipt_dir = fs::path(plan.receipt).parent_path();
  if (!receipt_dir.empty()) make_folder(receipt_dir);
  // A traced sister writes one bundle, trace-1; ncu captures capture-1..N.
  int bundles = options.trace ? 1 : options.captures;
  for (int i = 1; i <= bundles; ++i) {
    fs::path bundle = plan.out_dir / fmt::format("{}-{}", options.trace ? "trace" : "capture", i);
    std::error_code error;
    if (fs::symlink_status(bundle, error).type() != fs::file_type::not_found) {
      throw InputError(ExitCode::kInputUnreadable, bundle.string(), InputPosition::none(),
                       "already exists; choose another --output (kprof never overwrites a bundle)");
    }
  }
  return plan;
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
    return outcome.all_ok ? ExitCode::kOk : ExitCode::kCaptureFailed;
  }

 private:
  // Cleans up; `clean` false when something removable is left. The status becomes "failed" then.
  std::string end(std::string status, bool& clean) {
    kubectl_.cleaning();  // from now on calls run to completion, also after SIGINT/SIGTERM
    std::string text;
    std::vector<k8s::CleanupStep> steps = k8s::clean_up(kubectl_, receipt_);
    for (const k8s::CleanupStep& step : steps) {
      std::string line = describe_step(step, receipt_.path());
      if (step.result == k8s::CleanupStep::Result::kDeleted ||
          step.result == k8s::CleanupStep::Result::kGone) {
        note(line);
      } else if (step.result != k8s::CleanupStep::Result::kCannotRemove) {
        clean = false;
        text += "kprof: " + line + "\n";
      }
    }
    if (!clean && status == "ok") status = "failed";
    receipt_.finish(status);
    text += fmt::format("kprof: cleanup receipt {} ({}; {} leftover{})\n", receipt_.path(), status,
                        receipt_.leftovers().size(), receipt_.leftovers().size() == 1 ? "" : "s");
    for (const k8s::ReceiptObject& object : receipt_.leftovers()) {
      text += fmt::format("  left: {} — {}\n", object.describe(), how_to_remove(object));
    }
    for (const k8s::CleanupStep& step : steps) {
      if (step.result == k8s::CleanupStep::Result::kCannotRemove)
        text += fmt::format("  stays: {} — {}\n", step.object.describe(), step.detail);
    }
    return text;
  }

  std::string how_to_remove(const k8s::ReceiptObject& object) const {
    if (object.left_because && object.left_because->rfind("kprof refused", 0) == 0) {
      return fmt::format("{}; if it is yours to remove: `{}`", *object.left_because,
                         quoted_command({"kubectl", "delete", "deployment", "-n",
                                         object.namespace_name, "--", object.name}));
    }
    return fmt::format("remove with `{}`",
                       quoted_command({"kprof", "k8s", "cleanup", "--receipt", receipt_.path()}));
  }

 public:
  static std::string describe_step(const k8s::CleanupStep& step, const std::string& receipt) {
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
        return fmt::format("could not delete {}: {} [{}] → {}", what, step.detail,
                           step.failure_kind, hint_for(step.failure_kind));
      case Result::kCannotRemove:
        return fmt::format("cannot remove {}: {}", what, step.detail);
    }
    return what;
  }

 private:
  k8s::Kubectl& kubectl_;
  k8s::CleanupReceipt& receipt_;
  bool finished_ = false;
};

// One trace window in the traced sister (k8s::run_trace_window), into the bundle trace-1: the
// traces copied out verified, a manifest, and each trace ranked as `kprof rank` does. Returns
// false when no whole trace came out (the diagnoses say why).
bool trace_in_pod(const K8sOptions& options, const Cluster& cluster, const PodTarget& where,
                  const k8s::CleanupReceipt& receipt, Output& output) {
  const std::string& ns = options.namespace_name;
  capture::EvidenceBundle bundle((where.out_dir / "trace-1").string());
  k8s::TraceWindowOptions window;
  window.duration_s = options.trace_duration_s;
  window.finish_timeout_s = options.timeout_s;
  k8s::TraceWindowResult traced = k8s::run_trace_window(
      cluster.kubectl, {ns, where.pod, where.container}, window, bundle.staging_path(), note);
  if (!traced.tracer_lines.empty()) {
    std::string lines;
    for (const std::string& line : traced.tracer_lines) lines += line + "\n";
    bundle.write("tracer-lines.txt", lines);
  }
  json files = json::array();
  for (const k8s::TracedFile& file : traced.files) {
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
  bool failed = traced.failed();
  json manifest = {
      {"schema", "kprof.bundle/1"},
      {"status", traced.interrupted ? "incomplete"
                 : failed           ? "failed"
                                    : "ok"},
      {"tool", {{"name", "kprof"}, {"version", KPROF_VERSION}}},
      {"trace",
       {{"duration_s", options.trace_duration_s},
        {"started_at", traced.started_at},
        {"stopped_at", traced.stopped_at},
        {"files", files},
        {"unfinished_in_pod", traced.unfinished},
        {"windows", windows}}},
      {"campaign", options.campaign},
      {"cell_id", options.cell},
      {"deployment_revision", cluster.target.revision},
      {"kubernetes",
       {{"method", "sister-trace"},
        {"namespace", ns},
        {"deployment", cluster.target.deployment},
        {"pod", where.pod},
        {"container", where.container},
        {"node", where.node},
        {"image", where.image},
        {"image_digest", where.image_id},
        {"tracer_image", options.tracer_image},
        {"cleanup_receipt", fs::absolute(receipt.path()).string()},
        {"kubectl", cluster.kubectl.path()},
        {"kubectl_exec", traced.control_calls}}},
      {"diagnoses", diagnoses_json(traced.diagnoses)},
  };
  std::string written = traced.interrupted ? bundle.abandon(manifest) : bundle.commit(manifest);
  output.stderr_text += render_diagnoses(traced.diagnoses);
  std::string result = fmt::format("{} trace file{} from {}/{} in {}:\n", traced.files.size(),
                                   traced.files.size() == 1 ? "" : "s", ns, where.pod, written);
  for (const k8s::TracedFile& file : traced.files) {
    std::string name = fs::path(file.local_path).filename().string();
    std::string line = "  " + (fs::path(written) / name).string();
    for (const capture::TraceWindowLine& w : traced.windows) {
      if (fs::path(w.path).filename() == name)
        line += fmt::format("  pid {} window {}, {} events, stopped by {}", w.pid, w.window,
                            w.events, w.stop_reason);
    }
    result += line + "\n";
  }
  for (const k8s::TracedFile& file : traced.files) {
    std::string path = (fs::path(written) / fs::path(file.local_path).filename()).string();
    try {
      RankText ranked = rank_trace_text(path, output.argv, options.top, options.name_width);
      result += "\n" + ranked.table;
      output.stderr_text += ranked.warnings;
    } catch (const InputError& error) {
      output.stderr_text += fmt::format("kprof: {}: not ranked: {}\n", path, error.message());
    }
  }
  output.stdout_text += result;
  note(fmt::format("trace {}: {} file{}; bundle {}", failed ? "failed" : "done",
                   traced.files.size(), traced.files.size() == 1 ? "" : "s", written));
  return !failed;
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
  } else if (options.ncu_image.empty())
    throw UsageError(
        "--ncu-image is required: an image holding Nsight Compute (e.g. "
        "nvcr.io/nvidia/cuda:13.0.0-devel-ubuntu24.04)");
  Cluster cluster = read_cluster(options);
  const k8s::ContainerInfo& container = server_container(cluster, options.container);
  k8s::Assessment assessment =
      k8s::assess(cluster.target, container, cluster.versions.client_minor);
  k8s::SisterOptions sister{container.name, options.ncu_image, options.ncu_dir, run_id()};
  sister.trace = options.trace;
  sister.tracer_image = options.tracer_image;
  sister.tracer_dir = options.tracer_dir;
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
    output.stdout_text = options.json_output ? manifest.dump(1) + "\n" : yaml_text(manifest);
    return ExitCode::kOk;
  }
  // Refusals of the capture itself and local problems come before anything is created.
  if (!options.trace)
    build_or_refuse(
        pod_capture_spec(options, std::string(k8s::kNcuMount) + "/ncu", assessment.safety));
  LocalPlan plan = prepare_output(options, "sister", sister.run_id);
  keep_interrupts();
  const std::string& ns = options.namespace_name;
  std::string name = k8s::string_at(manifest, {"metadata", "name"});
  k8s::CleanupReceipt receipt(plan.receipt, "sister", options.context);
  OperationEnd end(cluster.kubectl, receipt);  // deletes what was created, on every exit path
  fs::path manifest_file = fs::path(receipt.path()).parent_path() / (name + ".json");
  write_file_atomically(manifest_file.string(), manifest.dump(1) + "\n");
  Outcome outcome;
  std::vector<std::string> bundles;
  try {
    // Recorded before creating: a kprof killed right after the create still leaves a receipt.
    receipt.created("Deployment", ns, name, true, "sister of " + cluster.target.deployment,
                    sister.run_id);
    note(fmt::format("creating Deployment {}/{} (the server under {}, outside the Service)", ns,
                     name, options.trace ? "kprof's tracer" : "`ncu --mode launch`"));
    cluster.kubectl.check({"create", "-n", ns, "-f", manifest_file.string(), "-o", "name"});
    std::string selector = std::string(k8s::kRunLabel) + "=" + sister.run_id;
    PodTarget where{"", container.name, "", container.image, "", plan.out_dir};
    bool running = wait_for(options.ready_timeout_s, [&] {
      json pods = cluster.kubectl.get_json({"get", "pods", "-n", ns, "-l", selector, "-o", "json"});
      const json& items = k8s::value_at(pods, {"items"});
      for (const auto& p : items.is_array() ? items : json::array()) {
        std::string pod_name = k8s::string_at(p, {"metadata", "name"});
        if (k8s::string_at(p, {"status", "phase"}) != "Running" || !k8s::is_dns_subdomain(pod_name))
          continue;
        const json& statuses = k8s::value_at(p, {"status", "containerStatuses"});
        bool server_ready = false;
        for (const auto& st : statuses.is_array() ? statuses : json::array()) {
          if (k8s::string_at(st, {"name"}) != container.name) continue;
          where.image_id = k8s::string_at(st, {"imageID"});
          server_ready = k8s::value_at(st, {"ready"}) == true;
        }
        // A traced server keeps its probes: ready means it serves (CUDA initialised, tracer
        // loaded). Under ncu it waits for the attach, which the log says (below).
        if (options.trace && !server_ready) continue;
        where.pod = pod_name;
        where.node = k8s::string_at(p, {"spec", "nodeName"});
        return true;
      }
      return false;
    });
    if (!running)
      throw K8sFailed(interrupt_received() ? "interrupted while waiting for the sister pod"
                      : options.trace
                          ? "the sister pod's server was not ready in time (--ready-timeout)"
                          : "the sister pod did not reach Running in time (--ready-timeout)");
    if (options.trace) {
      note(fmt::format("pod {} ready on {}", where.pod, where.node));
      if (!trace_in_pod(options, cluster, where, receipt, output)) outcome.all_ok = false;
      return end.finish(outcome, output);
    }
    note(fmt::format("pod {} running on {}; waiting for the server to wait for ncu", where.pod,
                     where.node));
    bool waiting = wait_for(options.ready_timeout_s, [&] {
      k8s::KubectlResult logs = cluster.kubectl.run(
          {"logs", "-n", ns, "-c", container.name, "--tail", "200", "--", where.pod});
      return logs.exit_code == 0 &&
             logs.out.find("Waiting for profiler to attach") != std::string::npos;
    });
    if (!waiting)
      throw K8sFailed(interrupt_received() ? "interrupted while waiting for the server"
                                           : "the server never printed ncu's \"Waiting "
                                             "for profiler to attach\" (--ready-timeout)");
    for (int i = 1; i <= options.captures && !interrupt_received(); ++i) {
      capture::CaptureSpec spec =
          pod_capture_spec(options, std::string(k8s::kNcuMount) + "/ncu", assessment.safety);
      if (!capture_in_pod(options, cluster, where, spec, i, "sister", receipt, bundles))
        outcome.all_ok = false;
    }
  } catch (const k8s::KubectlError& error) {
    outcome.kubernetes_failure(describe(error), output);
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
  Cluster cluster = read_cluster(options);
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
  std::string run = run_id();
  LocalPlan plan = prepare_output(options, "sidecar", run);
  keep_interrupts();
  const std::string& ns = options.namespace_name;
  std::string name = "kprof-ncu-" + run;  // a fresh name each time: ephemeral containers stay
  k8s::CleanupReceipt receipt(plan.receipt, "sidecar", options.context);
  OperationEnd end(cluster.kubectl, receipt);
  std::string profile = options.profile;
  if (profile == "sysadmin" && cluster.versions.client_minor < 30) {
    // kubectl learnt the sysadmin profile in 1.30.
    note(
        fmt::format("kubectl 1.{} has no --profile sysadmin (1.30+): using general, so ncu can "
                    "read counters only "
                    "where the node allows it to all users (RmProfilingAdminOnly: 0)",
                    cluster.versions.client_minor));
    profile = "general";
  }
  std::vector<std::string> debug = {"debug",       "-n",          ns,          pod.name,
                                    "--image",     options.image, "--target",  container.name,
                                    "--container", name,          "--profile", profile};
  if (cluster.versions.client_minor >= k8s::kCustomMinimumMinor) {
    json custom = k8s::ephemeral_custom_spec();
    std::vector<std::string> problems = k8s::check_ephemeral_custom(custom);
    if (!problems.empty()) throw std::logic_error(problems.front());
    fs::path custom_file = fs::path(receipt.path()).parent_path() / (name + "-custom.json");
    write_file_atomically(custom_file.string(), custom.dump() + "\n");
    debug.insert(debug.end(), {"--custom", custom_file.string()});
  } else {
    note(
        fmt::format("kubectl 1.{} has no `debug --custom` (1.{}+): the profiler container gets its "
                    "capabilities from --profile {} only",
                    cluster.versions.client_minor, k8s::kCustomMinimumMinor, options.profile));
  }
  debug.insert(debug.end(), {"--", "sleep", std::to_string(options.lifetime_s)});
  Outcome outcome;
  std::vector<std::string> bundles;
  try {
    note(fmt::format("adding profiler container {} to pod {}/{} (kubectl debug --profile {})", name,
                     ns, pod.name, options.profile));
    cluster.kubectl.check(debug);
    // Recorded once added: it cannot be removed, so the receipt is its record, not a to-do.
    receipt.created("EphemeralContainer", ns, pod.name + "/" + name, false,
                    fmt::format("ephemeral containers cannot be removed from a pod; its process "
                                "(sleep {}) ends by itself",
                                options.lifetime_s),
                    run);
    bool running = wait_for(options.ready_timeout_s, [&] {
      json p = cluster.kubectl.get_json({"get", "pod", "-n", ns, "-o", "json", "--", pod.name});
      const json& statuses = k8s::value_at(p, {"status", "ephemeralContainerStatuses"});
      for (const auto& st : statuses.is_array() ? statuses : json::array()) {
        if (k8s::string_at(st, {"name"}) == name &&
            k8s::value_at(st, {"state", "running"}).is_object())
          return true;
      }
      return false;
    });
    if (!running) throw K8sFailed("the profiler container did not start in time (--ready-timeout)");
    PodTarget where{pod.name, name, pod.node, options.image, "", plan.out_dir};
    auto image = pod.image_ids.find(container.name);
    if (image != pod.image_ids.end()) where.image_id = image->second;
    where.image = container.image;
    for (int i = 1; i <= options.captures && !interrupt_received(); ++i) {
      capture::CaptureSpec spec = pod_capture_spec(options, options.ncu_path, assessment.safety);
      if (!capture_in_pod(options, cluster, where, spec, i, "sidecar", receipt, bundles))
        outcome.all_ok = false;
    }
  } catch (const k8s::KubectlError& error) {
    outcome.kubernetes_failure(describe(error), output);
  } catch (const K8sFailed& error) {
    outcome.kubernetes_failure(error.what(), output);
  }
  return end.finish(outcome, output);
}

ExitCode run_cleanup(const K8sOptions& options, Output& output) {
  k8s::CleanupReceipt receipt = k8s::CleanupReceipt::load(options.receipt);
  k8s::Kubectl kubectl(kubectl_path(options.kubectl), options.context, options.kubeconfig);
  kubectl.cleaning();
  std::vector<std::string> lines;
  bool all_ok = true;
  for (const k8s::CleanupStep& step : k8s::clean_up(kubectl, receipt)) {
    using Result = k8s::CleanupStep::Result;
    if (step.result == Result::kRefused || step.result == Result::kFailed) all_ok = false;
    lines.push_back(OperationEnd::describe_step(step, receipt.path()));
  }
  receipt.finish(all_ok ? "cleaned" : "cleanup-failed");
  size_t left = receipt.leftovers().size();
  lines.push_back(fmt::format("{} leftover{} in {}", left, left == 1 ? "" : "s", receipt.path()));
  // On failure nothing goes to stdout: every line is on stderr, each a `kprof:` line.
  for (const std::string& line : lines) {
    if (all_ok) {
      output.stdout_text += line + "\n";
    } else {
      output.stderr_text += "kprof: " + line + "\n";
    }
  }
  return all_ok ? ExitCode::kOk : ExitCode::kK8sFailed;
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
                   "Seconds to wait for the pod/container to be ready")
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
      "           server under `ncu --mode launch`); kprof attaches, captures, detaches (the "
      "server\n"
      "           keeps running), repeats --captures times, then deletes it.\n"
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
      "valid receipt; 7 a capture failed; 8 interrupted (cleanup done, receipt written); 9 "
      "kubectl\n"
      "not found; 10 a Kubernetes call failed (not found, forbidden, ephemeral containers\n"
      "disabled, …: the message says which and what to do) or something created is left.\n\n"
      "Examples:\n"
      "  kprof k8s preflight -n serving llama-70b\n"
      "  kprof k8s sister -n serving llama-70b --ncu-image "
      "nvcr.io/nvidia/cuda:13.0.0-devel-ubuntu24.04 --dry-run\n"
      "  kprof k8s sister -n serving llama-70b --ncu-image IMAGE -k 'gemm|attention' --captures 3 "
      "-o llama-run\n"
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
  c->add_option("--trace-duration", sister->trace_duration_s, "Seconds the trace window is open")
      ->capture_default_str();
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
