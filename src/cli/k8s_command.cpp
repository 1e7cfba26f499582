// kprof k8s preflight|sister|sidecar|cleanup: capture from a live Kubernetes deployment through
// the user's kubectl, without rebuilding its image, leaving a cleanup receipt whatever happens.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <memory>

#include "capture/ncu_command.h"
#include "cli/capture_support.h"
#include "cli/command.h"
#include "k8s/operations.h"

namespace kprof::cli {
namespace {

struct K8sOptions {
  std::string kubectl, context, kubeconfig, namespace_name = "default";
  std::string deployment, pod, container;
  bool json_output = false;
  // capture
  std::string preset = "triage";
  std::string kernel_regex;
  std::optional<std::int64_t> launch_skip, launch_count;
  std::string ncu_version;  // the pod's ncu, as its image names it
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
  // plan
  PlanCliOptions plan;
  // sister: the latency guard of each warm capture (issue 41)
  GuardCliOptions guard;
};

// Progress of an operation, each piece at once (redacted, as everything kprof prints).
class TerminalProgress : public k8s::OperationObserver {
 public:
  void note(const std::string& line) override { cli::note(line); }
  void to_stderr(const std::string& text) override { print_now_to_stderr(text); }
  void to_stdout(const std::string& text) override { print_now_to_stdout(text); }
};

// The options into the operations' request (k8s/operations.h); the capture's preset checked.
k8s::OperationRequest request_of(const K8sOptions& options, const std::vector<std::string>& argv) {
  k8s::OperationRequest r;
  r.argv = argv;
  r.kubectl = options.kubectl;
  r.context = options.context;
  r.kubeconfig = options.kubeconfig;
  r.target = {options.namespace_name, options.deployment, options.pod, options.container};
  r.json_output = options.json_output;
  if (auto preset = capture::parse_preset(options.preset)) {
    r.capture.preset = *preset;
  } else {
    throw UsageError(fmt::format("--preset {}: expected triage, basic or full", options.preset));
  }
  r.capture.kernel_regex = options.kernel_regex;
  r.capture.launch_skip = options.launch_skip;
  r.capture.launch_count = options.launch_count;
  r.capture.force = options.force;
  if (!options.ncu_version.empty()) {
    r.capture.ncu_version = capture::parse_ncu_version(options.ncu_version);
    if (!r.capture.ncu_version) {
      throw UsageError(fmt::format("--ncu-version {}: expected YEAR.RELEASE[.PATCH], e.g. 2026.1.1",
                                   options.ncu_version));
    }
  }
  r.captures = options.captures;
  r.timeout_s = options.timeout_s;
  r.ready_timeout_s = options.ready_timeout_s;
  r.output = options.output;
  r.receipt = options.receipt;
  r.campaign = options.campaign;
  r.cell = options.cell;
  r.ncu_image = options.ncu_image;
  r.ncu_dir = options.ncu_dir;
  r.memory_fraction = options.memory_fraction;
  r.dry_run = options.dry_run;
  r.trace = options.trace;
  r.tracer_image = options.tracer_image;
  r.tracer_dir = options.tracer_dir;
  r.trace_duration_s = options.trace_duration_s;
  r.top = options.top;
  r.name_width = options.name_width;
  r.startup = options.startup;
  r.server_port = options.server_port;
  r.ready_path = options.ready_path;
  r.image = options.image;
  r.profile = options.profile;
  r.ncu_path = options.ncu_path;
  r.lifetime_s = options.lifetime_s;
  return r;
}

ExitCode run_preflight(const K8sOptions& options, Output& output) {
  return answer(k8s::run_preflight(request_of(options, output.argv)), output);
}

// What only ncu, only the tracer or only the warm sequence uses is refused elsewhere rather than
// silently ignored; the warm sequence's own options checked; then the sister runs.
ExitCode run_sister(const K8sOptions& options, Output& output) {
  if (options.trace && !options.ncu_only_given.empty()) {
    throw UsageError(fmt::format(
        "{} {} not apply to --trace: the sister runs kprof's tracer, not ncu (it records every "
        "kernel's time; use `kprof k8s sister` without --trace for ncu's counters)",
        fmt::join(options.ncu_only_given, ", "),
        options.ncu_only_given.size() == 1 ? "does" : "do"));
  }
  if (!options.trace && !options.trace_only_given.empty()) {
    throw UsageError(fmt::format("{} appl{} only with --trace",
                                 fmt::join(options.trace_only_given, ", "),
                                 options.trace_only_given.size() == 1 ? "ies" : "y"));
  }
  if (!options.trace && options.startup && !options.warm_only_given.empty()) {
    throw UsageError(fmt::format(
        "{} belong{} to the warm sequence, which --startup leaves out (it captures the first "
        "matching launches of the server's start-up)",
        fmt::join(options.warm_only_given, ", "), options.warm_only_given.size() == 1 ? "s" : ""));
  }
  k8s::OperationRequest request = request_of(options, output.argv);
  if (!options.trace && !options.startup) {
    check_warm_options(options.warm);
    apply_warm_options(options.warm, request.warm);
    // The guard probes the sister's port-forward (the load's URL) unless --guard-url names
    // another (a production Service beside the profiled copy), and reads the sister's pod; without
    // a limit it is the bill alone, which every warm capture carries.
    request.warm.guard = guard_spec(options.guard, true, request.warm.load);
  } else if (options.guard.p99_ms || options.guard.factor || !options.guard.url.empty()) {
    throw UsageError(
        "the latency guard watches the warm sequence's captures: not with --trace "
        "or --startup");
  }
  TerminalProgress progress;
  return answer(k8s::run_sister(request, progress), output);
}

ExitCode run_sidecar(const K8sOptions& options, Output& output) {
  TerminalProgress progress;
  return answer(k8s::run_sidecar(request_of(options, output.argv), progress), output);
}

ExitCode run_cleanup(const K8sOptions& options, Output& output) {
  return answer(k8s::run_cleanup(request_of(options, output.argv)), output);
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
  command->add_option("--ncu-version", options.ncu_version,
                      "The version of the ncu in the pod (its image's, e.g. 2026.1.1): ncu's "
                      "command line is built for it; without it, only options every ncu version "
                      "kprof knows lists");
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
  c->add_option("--ncu-version", preflight->ncu_version,
                "The version of the ncu that would profile (e.g. 2026.2.1): the route line says "
                "what it allows (the in-process library needs 2026.2.1+)");
  c->add_flag("--json", preflight->json_output, "Print JSON (kprof.k8s-preflight/1)");
  c->callback([&runner, preflight] {
    runner = [preflight](Output& o) { return run_preflight(*preflight, o); };
  });

  auto plan = std::make_shared<K8sOptions>();
  c = k8s->add_subcommand(
      "plan", "The capture's plan against the Deployment's probes and memory; nothing created");
  c->footer(std::string(kPlanModelHelp) +
            "The liveness and readiness probes (period x failure threshold, Kubernetes' defaults\n"
            "where a field is absent) and the engine's memory fraction (with --device-memory-gb)\n"
            "are read from the Deployment's server container.\n\n"
            "Example:\n"
            "  kprof k8s plan -n serving llama-70b --trace decode.json.gz -k nvjet --preset full "
            "-c 5 --device-memory-gb 141");
  add_cluster_options(c, *plan);
  c->add_option("DEPLOYMENT", plan->deployment, "Deployment name")->required();
  c->add_option("--container", plan->container, "Server container (default: the first)");
  c->add_option("--preset", plan->preset, "triage (default), basic or full")->capture_default_str();
  c->add_option("-k,--kernel-name", plan->kernel_regex,
                "Only kernels whose name matches this regex");
  c->add_option("--launch-skip", plan->launch_skip, "Skip this many matching launches first");
  c->add_option("-c,--launch-count", plan->launch_count,
                "Profile this many matching launches (default 1: the sister's attach)");
  add_plan_options(c, plan->plan, false);
  c->add_flag("--json", plan->json_output, "Print JSON (kprof.plan/1)");
  c->callback([&runner, plan] {
    runner = [plan](Output& o) {
      capture::CaptureSpec spec;
      auto preset = capture::parse_preset(plan->preset);
      if (!preset)
        throw UsageError(fmt::format("--preset {}: expected triage, basic or full", plan->preset));
      spec.preset = *preset;
      spec.kernel_regex = plan->kernel_regex;
      spec.launch_skip = plan->launch_skip;
      spec.launch_count = plan->launch_count.value_or(1);
      if (*spec.launch_count < 1) throw UsageError("--launch-count must be at least 1");
      return answer(k8s::run_plan(request_of(*plan, o.argv),
                                  to_plan_options(plan->plan, spec, plan->json_output)),
                    o);
    };
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
  add_guard_options(c, sister->guard, "the sister's port-forward");
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
