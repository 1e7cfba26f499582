// kprof capture [options] -- CMD... | --attach HOST[:PORT]: runs ncu with capture hygiene,
// shows progress, diagnoses what went wrong, and writes an evidence bundle with the analysis.
#include <fmt/format.h>
#include <re2/re2.h>

#include <csignal>
#include <memory>

#include "capture/attach_route.h"
#include "capture/attach_targets.h"
#include "capture/capture_render.h"
#include "capture/capture_session.h"
#include "capture/evidence_bundle.h"
#include "capture/latency_guard.h"
#include "capture/ncu_locator.h"
#include "capture/warm_capture.h"
#include "cli/capture_support.h"
#include "cli/command.h"
#include "common/child_process.h"
#include "common/text.h"
#include "load/request_driver.h"
#include "render/envelope.h"
#include "render/load_render.h"

namespace kprof::cli {
namespace {

struct CaptureOptions {
  std::string preset = "triage";
  std::vector<std::string> sections;
  std::string metrics;
  std::string kernel_regex, kernel_name_base;
  std::optional<std::int64_t> launch_skip, launch_count;
  std::string clock_control = "none";
  std::vector<std::string> env;
  bool children = false;
  std::string replay_mode;
  bool honor_start_stop = false;
  std::string range = "from-start";
  std::vector<std::string> nvtx_include, nvtx_exclude;
  std::string graph_profiling;
  bool include_collectives = false;
  std::string communicator;
  std::optional<int> communicator_peers;
  bool lockstep = false;
  std::string safety = "none";
  bool force = false;
  std::string ncu;
  std::vector<std::string> ncu_args;
  std::string output;
  double timeout_s = 0;
  std::string campaign, cell, revision;
  std::string attach;
  // The warm sequence (issue 20); warm also holds --attach-process, used without it too.
  WarmOptions warm;
  std::string load_url, ready_url, ready_log_file;
  double ready_timeout_s = 600;
  int captures = 1;
  bool json = false;
  // The plan (issue 41): --plan prints it and runs nothing; --trace without --plan plans the
  // capture first (refused over a limit unless --budget chose one that fits) and records the
  // plan in the bundle.
  bool plan_only = false;
  PlanCliOptions plan;
  GuardCliOptions guard;  // the latency guard (issue 41)
  std::vector<std::string> target;
};

capture::CaptureSpec to_spec(const CaptureOptions& options, const std::string& ncu) {
  capture::CaptureSpec spec;
  spec.ncu = ncu;
  if (!options.sections.empty() || !options.metrics.empty()) {
    spec.preset = capture::Preset::kCustom;
  } else if (auto preset = capture::parse_preset(options.preset)) {
    spec.preset = *preset;
  } else {
    throw UsageError(fmt::format("--preset {}: expected triage, basic or full", options.preset));
  }
  spec.sections = options.sections;
  spec.metrics = options.metrics;
  spec.kernel_regex = options.kernel_regex;
  if (!spec.kernel_regex.empty()) {
    RE2 check(spec.kernel_regex, RE2::Quiet);
    if (!check.ok())
      throw UsageError(fmt::format("-k \"{}\": {}", spec.kernel_regex, check.error()));
  }
  spec.kernel_name_base = options.kernel_name_base;
  spec.launch_skip = options.launch_skip;
  spec.launch_count = options.launch_count;
  spec.clock_control = options.clock_control;
  spec.children = options.children;
  spec.replay_mode = options.replay_mode;
  spec.honor_profiler_start_stop = options.honor_start_stop;
  spec.range = options.range == "cuda-profiler-api" ? capture::Range::kCudaProfilerApi
                                                    : capture::Range::kFromStart;
  spec.nvtx_include = options.nvtx_include;
  spec.nvtx_exclude = options.nvtx_exclude;
  spec.graph_profiling = options.graph_profiling;
  spec.include_collectives = options.include_collectives;
  spec.communicator = options.communicator;
  spec.communicator_peers = options.communicator_peers;
  spec.lockstep = options.lockstep;
  if (options.safety == "single-replica") {
    spec.safety = capture::Safety::kSingleReplica;
  } else if (options.safety == "multi-replica") {
    spec.safety = capture::Safety::kMultiReplica;
  } else if (options.safety != "none") {
    throw UsageError(
        fmt::format("--safety {}: expected none, single-replica or multi-replica", options.safety));
  }
  spec.force = options.force;
  spec.extra_ncu_args = options.ncu_args;
  spec.target = options.target;
  try {
    if (!options.attach.empty()) spec.attach = capture::parse_endpoint(options.attach);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  return spec;
}

// Progress on stderr while ncu runs, each line at once.
class TerminalObserver : public capture::CaptureObserver {
 public:
  TerminalObserver(std::string ncu_path, std::string ncu_version, capture::Preset preset)
      : ncu_path_(std::move(ncu_path)), ncu_version_(std::move(ncu_version)), preset_(preset) {}
  void started(const capture::NcuCommand& command, const std::string& bundle_path) override {
    note(fmt::format("capturing with {} ({}), preset {}, into {}", ncu_path_,
                     ncu_version_.empty() ? "version unknown" : ncu_version_,
                     capture::preset_name(preset_), bundle_path));
    for (const std::string& warning : command.warnings) note("warning: " + warning);
    note("running: " + quoted_command(command.argv));
  }
  void process_connected(const std::string& line) override { note(line); }
  void kernel_profiled(size_t index, std::optional<std::int64_t> expected, const std::string& name,
                       std::optional<int> passes) override {
    note(fmt::format("kernel {}{}: {} ({})", index,
                     expected ? fmt::format(" of {}", *expected) : "", name,
                     passes ? fmt::format("{} passes", *passes) : "application replay"));
  }
  void ncu_message(const std::string& line) override {
    if (line.rfind("==ERROR==", 0) == 0) note(line);
  }
  void detaching() override {
    note("report written; detaching from the target (SIGINT to the attach client)");
  }
  void detached(std::optional<bool> still_there) override {
    if (still_there == true) note("detached; the target still runs and accepts another attach");
  }
  void note(const std::string& text) override { cli::note(text); }

 private:
  std::string ncu_path_, ncu_version_;
  capture::Preset preset_;
};

ExitCode run_capture(const CaptureOptions& options, Output& output) {
  // Progress goes to stderr while ncu runs; a closed reader must not kill the capture.
  std::signal(SIGPIPE, SIG_IGN);
  // Ctrl-C at any moment (also between ncu and its exports) ends in an .incomplete bundle,
  // never in a .partial folder left behind.
  keep_interrupts();
  // What the user can fix in the command line comes first (exit 2), then the bundle path
  // (exit 3), then ncu (exit 9): a missing ncu must not hide a wrong option, and nothing is
  // created or run before all three hold.
  capture::CaptureSpec spec = to_spec(options, "ncu");
  if (options.plan_only) {
    return answer(capture::plan(to_plan_options(options.plan, spec, options.json), output.argv),
                  output);
  }
  capture::SessionOptions session;
  if (!options.plan.trace.empty()) {
    capture::CapturePlan planned =
        capture::make_plan(to_plan_options(options.plan, spec, false), output.argv);
    if (planned.over && !planned.chosen) {
      output.stderr_text += capture::plan_text(planned) +
                            "kprof: the capture is over a limit (the plan above): nothing was "
                            "run; run the one proposed, give --budget to let kprof choose it, or "
                            "drop --trace to capture unplanned\n";
      return ExitCode::kPlanOverLimit;
    }
    if (planned.chosen && planned.proposal) {
      const capture::CaptureSpec& chosen = planned.proposal->spec;
      spec.preset = chosen.preset;
      spec.sections = chosen.sections;
      spec.metrics = chosen.metrics;
      spec.kernel_regex = chosen.kernel_regex;
      spec.kernel_name_base = chosen.kernel_name_base;
      spec.launch_count = chosen.launch_count;
      if (planned.proposal->sister) {
        output.stderr_text += capture::plan_text(planned) +
                              "kprof: only the sister deployment fits the limits (kprof k8s "
                              "sister): nothing was run\n";
        return ExitCode::kPlanOverLimit;
      }
      note(fmt::format("plan: over a limit; --budget chose {} ({})",
                       capture::capture_options_text(*planned.proposal, planned.trace),
                       planned.proposal_kind));
    }
    session.plan = capture::plan_for_bundle(planned);
  } else if (options.plan.budget_s) {
    throw UsageError("--budget needs --trace: the plan that chooses the capture reads it");
  }
  session.env = parse_env(options.env);
  std::string output_path = options.output.empty()
                                ? capture::EvidenceBundle::default_path("kprof-capture-")
                                : options.output;
  std::optional<capture::ProcessSelector> selector = check_warm_options(options.warm);
  // --attach-process PID without --attach: a process of this machine, reached by the route it
  // allows (capture/attach_route.h), told once ncu's version is known; until then an attach by
  // its id, the in-process route's command line, is what the usage checks see.
  std::optional<int> route_pid;
  if (selector && !spec.attach) {
    if (!selector->pid) {
      throw UsageError(fmt::format(
          "--attach-process {} needs --attach HOST (a process tree started under `ncu --mode "
          "launch`); a process id alone (--attach-process PID) is a process of this machine, "
          "reached by the route it allows",
          selector->name));
    }
    route_pid = selector->pid;
    spec.attach = capture::AttachEndpoint{"127.0.0.1", std::nullopt};
    spec.attach_process_id = route_pid;
  }
  bool warm = !options.load_url.empty();
  if (!warm && (!options.ready_url.empty() || !options.warm.ready_log_line.empty() ||
                options.captures != 1)) {
    throw UsageError(
        "--ready-url, --ready-log-line and --captures belong to the warm sequence: "
        "give --load-url too");
  }
  if (warm) {
    if (!spec.attach || route_pid)
      throw UsageError("--load-url (the warm sequence) needs --attach HOST");
    if (options.captures < 1) throw UsageError("--captures must be at least 1");
    if (!(options.ready_timeout_s > 0 && options.ready_timeout_s <= 1e6))
      throw UsageError("--ready-timeout is seconds between 0 and 1000000");
    try {
      load::normalize_base_url(options.load_url);
      if (!options.ready_url.empty()) load::normalize_base_url(options.ready_url);
    } catch (const load::LoadError& error) {
      throw UsageError(std::string("--load-url/--ready-url: ") + error.what());
    }
    if (options.warm.ready_log_line.empty() != options.ready_log_file.empty())
      throw UsageError("--ready-log-line REGEX and --ready-log-file FILE go together");
  }
  load::LoadSpec request_shape;
  request_shape.api = options.warm.load_api;
  request_shape.model = options.warm.model;
  request_shape.prompt_tokens = options.warm.prompt_len;
  request_shape.output_tokens = options.warm.output_len;
  request_shape.api_key = api_key_from_environment();
  std::optional<capture::GuardSpec> guard =
      guard_spec(options.guard, !options.load_url.empty(), request_shape);
  spec.export_path = "report";  // placeholder; checked for refusal only
  {
    // What does not depend on the ncu first, as if it were the newest (ncu is not asked yet);
    // what this ncu lacks is refused once its version is known, below.
    capture::CaptureSpec early = spec;
    early.ncu_version = capture::NcuVersion{2099, 0, 0};
    build_or_refuse(early);
  }
  // Checked without following links: a dangling link there would fail the rename at the end.
  capture::EvidenceBundle::require_free(output_path);
  capture::NcuLocation ncu = capture::locate_ncu(options.ncu);
  if (ncu.path.empty()) {
    throw NotReady(
        fmt::format("ncu not found ({}); install Nsight Compute, put ncu on PATH, or "
                    "pass --ncu PATH — `kprof doctor` checks the whole setup",
                    ncu.searched));
  }
  spec.ncu = ncu.path;
  session.ncu_version = capture::ncu_version_line(ncu.path);
  spec.ncu_version = capture::parse_ncu_version(session.ncu_version);
  std::optional<capture::RouteTarget> route_target;
  if (route_pid) {
    route_target = capture::inspect_process(*route_pid);
    if (!route_target) {
      throw NotReady(fmt::format(
          "--attach-process {}: no such process on this machine (or not readable by this user)",
          *route_pid));
    }
    capture::RouteChoice route = capture::choose_attach_route(spec.ncu_version, *route_target);
    if (route.route == capture::AttachRoute::kSisterOnly) {
      throw NotReady(fmt::format("no route to process {} with {}: {}; {}", *route_pid,
                                 capture::describe_ncu(spec.ncu_version), route.why, route.next));
    }
    note(fmt::format("route to process {}: {} — {}", *route_pid, capture::route_title(route.route),
                     route.why));
    switch (route.route) {
      case capture::AttachRoute::kSisterOnly:
        break;
      case capture::AttachRoute::kLaunchAttachTcp:
        // Today's route: the launched tree on this machine, the process steered to by its id.
        spec.attach_process_id.reset();
        break;
      case capture::AttachRoute::kInProcessLibrary:
        // ncu finds the process itself: no tree to steer.
        selector.reset();
        session.expected_pid = route_pid;
        session.attach_details = [pid = *route_pid,
                                  library = route_target->injection_library_path] {
          return nlohmann::json{
              {"route", capture::route_id(capture::AttachRoute::kInProcessLibrary)},
              {"port", nullptr},
              {"process",
               {{"selector", std::to_string(pid)}, {"pid", pid}, {"injection_library", library}}}};
        };
        break;
    }
  }
  build_or_refuse(spec);  // the options this ncu lists (capture/ncu_versions.h)
  session.timeout_s = options.timeout_s;
  session.export_ncu = ncu.path;
  session.argv = output.argv;
  session.campaign = options.campaign;
  session.cell_id = options.cell;
  session.revision = options.revision;

  capture::LocalNcuRunner runner;
  TerminalObserver observer(ncu.path, session.ncu_version, spec.preset);
  // Where an attached tree runs (only with --attach).
  capture::TreeHost host;
  if (spec.attach) host = capture::local_tree_host(*spec.attach);
  if (warm) {
    capture::WarmCaptureSpec warm_spec;
    warm_spec.capture = spec;
    apply_warm_options(options.warm, warm_spec);
    // The OpenAI base URL users give ends in /v1; the health endpoint is beside it.
    std::string base = load::normalize_base_url(options.load_url);
    warm_spec.ready_url = options.ready_url.empty() ? base + "/health" : options.ready_url;
    warm_spec.ready_log_file = options.ready_log_file;
    warm_spec.ready_timeout_s = options.ready_timeout_s;
    warm_spec.load.base_url = base;
    warm_spec.captures = options.captures;
    warm_spec.host = host;
    warm_spec.guard = guard;
    // N captures go into one folder (made with the first bundle), capture-1 … capture-N.
    std::vector<std::string> bundle_paths = {output_path};
    if (options.captures > 1) {
      bundle_paths.clear();
      for (int i = 1; i <= options.captures; ++i)
        bundle_paths.push_back(output_path + fmt::format("/capture-{}", i));
    }
    capture::WarmCaptureResult warm_result =
        capture::run_warm_capture(warm_spec, session, observer, bundle_paths);
    nlohmann::json manifests = nlohmann::json::array();
    for (const capture::CaptureResult& one : warm_result.captures) {
      output.stdout_text += options.json ? "" : one.analysis_table;
      manifests.push_back(one.manifest);
      output.stderr_text += capture::diagnoses_text(one.diagnoses);
      output.stderr_text += "kprof: " + capture::capture_summary(one) + "\n";
    }
    if (warm_result.stopped) manifests.push_back(warm_result.stopped->manifest);
    if (options.json)
      output.stdout_text =
          (options.captures == 1 && manifests.size() == 1 ? manifests[0] : manifests).dump(1) +
          "\n";
    output.stderr_text += capture::diagnoses_text(warm_result.diagnoses);
    if (warm_result.stopped)
      output.stderr_text +=
          "kprof: " + capture::stopped_sequence_summary(*warm_result.stopped) + "\n";
    if (warm_result.incomplete || interrupt_received()) return ExitCode::kIncomplete;
    return warm_result.failed ? ExitCode::kCaptureFailed : ExitCode::kOk;
  }
  // A named process of a tree: every other process is held unprofiled, so that the capture's
  // attach can only find the named one; all are let go when the capture ends (destructor).
  std::unique_ptr<capture::ProcessTreeAttacher> tree;
  if (selector) {
    tree = std::make_unique<capture::ProcessTreeAttacher>(
        ncu.path, *spec.attach, selector, [](const std::string& text) { note(text); }, host);
    note(fmt::format("attach: looking for the process \"{}\" among those waiting for a profiler",
                     selector->text()));
    std::optional<int> pid = tree->find_target(options.warm.attach_timeout_s);
    if (!pid) {
      tree->release_all();
      output.stderr_text += capture::diagnoses_text(
          {capture::process_not_found(*selector, *tree, options.warm.attach_timeout_s)});
      return interrupt_received() ? ExitCode::kIncomplete : ExitCode::kCaptureFailed;
    }
    tree->release_target();
    session.expected_pid = pid;
    session.attach_details = [&tree, &selector] {
      return capture::attach_details(*tree, selector);
    };
  }
  // The guard (or the bill alone, without a limit) of a capture without the warm sequence: its
  // baseline now, before ncu starts.
  std::unique_ptr<capture::LatencyGuard> latency_guard;
  if (guard) {
    latency_guard = std::make_unique<capture::LatencyGuard>(
        *guard, [](const std::string& text) { note(text); });
    std::optional<std::string> unguardable;
    try {
      unguardable = latency_guard->measure_baseline();
    } catch (const load::LoadError& error) {
      if (guard->armed()) {
        if (tree) tree->release_all();
        throw NotReady(std::string("the latency guard could not measure its baseline: ") +
                       error.what());
      }
      // The bill alone is no reason to give up the capture: it goes without one.
      note(std::string("no bill: its baseline could not be measured: ") + error.what());
      latency_guard.reset();
    }
    if (unguardable) {
      if (tree) tree->release_all();
      throw NotReady(*unguardable + " (set --guard-p99-ms above it, or give --guard-factor)");
    }
  }
  if (latency_guard) {
    latency_guard->start_watching();
    if (guard->armed()) session.guard = [&latency_guard] { return latency_guard->check(); };
    session.service_cost = [&latency_guard] {
      latency_guard->stop_watching();
      latency_guard->measure_after();
      return latency_guard->bill(std::nullopt);
    };
  }
  capture::CaptureResult result =
      capture::CaptureSession(spec, session, runner, observer).run(output_path);
  if (tree) tree->release_all();

  output.stdout_text = options.json ? result.manifest.dump(1) + "\n" : result.analysis_table;
  output.stderr_text += capture::diagnoses_text(result.diagnoses);
  output.stderr_text += "kprof: " + capture::capture_summary(result) + "\n";
  if (result.incomplete) return ExitCode::kIncomplete;
  return result.failed ? ExitCode::kCaptureFailed : ExitCode::kOk;
}

}  // namespace

void define_capture(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<CaptureOptions>();
  CLI::App* command = parent.add_subcommand(
      "capture", "Run ncu with capture hygiene; write an evidence bundle and its verdicts");
  command->footer(
      "Runs the command under Nsight Compute (or attaches to a process started with `ncu --mode\n"
      "launch`), printing each kernel as it is profiled, then writes one bundle folder:\n"
      "report.ncu-rep, raw.csv and speed_of_light.csv (ncu's exports), analysis.json, ncu's\n"
      "output, and manifest.json (command lines, versions, preset, scope, times, diagnoses,\n"
      "sha256 of every file). The folder appears under its name only when complete; a capture\n"
      "stopped by --timeout or Ctrl-C is renamed NAME.incomplete instead; a warm sequence\n"
      "(--load-url) that stops before its first capture writes manifest.json alone.\n\n"
      "Hygiene kprof applies: profile from the start and skip warm-up with --launch-skip; the\n"
      "application's cudaProfilerStart/Stop ignored (--disable-profiler-start-stop); clocks left\n"
      "alone (--clock-control none); no config file; the target's environment set on ncu with\n"
      "--env (a command starting with `env` or a shell is refused: ncu would profile that);\n"
      "child processes only with --children.\n\n"
      "Presets (passes per kernel measured on an H200, ncu 2025.3.1):\n"
      "  triage  SpeedOfLight, Occupancy, LaunchStats + DRAM peak, FP32/64/16 and tensor\n"
      "          FLOP rates, PC-sampled warp stalls: every verdict field (default)\n"
      "  basic   --set basic (10 passes): no FLOP/s, no stalls\n"
      "  full    --set full (38 passes): refused unscoped (no -k, no --launch-count) unless "
      "--force\n"
      "  --section/--metrics replace the preset with your own list.\n\n"
      "Safety presets for servers: --safety single-replica needs -k, allows --launch-count <= 3\n"
      "and triage/basic only; --safety multi-replica allows full with --launch-count <= 5.\n\n"
      "Warm sequence (--attach … --load-url URL): start-up held unprofiled, readiness, warm-up\n"
      "requests, then each capture while --load-concurrency requests are in flight; a server\n"
      "started with --api-key needs KPROF_API_KEY=KEY in the environment.\n\n"
      "A running process of this machine by its id (--attach-process PID, no --attach): started\n"
      "under `ncu --mode launch`, it is attached by TCP as above; one that loaded ncu's injection\n"
      "library itself (README, \"Engine-side setup\") is attached with `ncu --mode attach\n"
      "--process-id PID` where ncu is 2026.2.1 or newer; otherwise kprof says why not (exit 9).\n"
      "`kprof doctor --attach-process PID` prints the route without capturing.\n\n"
      "Plan and guard (issue 41): --plan --trace TRACE prints what the capture will cost and runs\n"
      "nothing (kprof plan); --trace alone plans first and refuses a capture over a limit unless\n"
      "--budget chose one that fits. --guard-p99-ms/--guard-factor with --guard-url (or\n"
      "--load-url) probe the service before, during and after; ncu is stopped (detached) when it\n"
      "suffers, and the bundle's service block says what the capture cost. A serving URL\n"
      "without a limit gets the same bill, and nothing stops the capture.\n\n"
      "Exit codes: 0 captured; 7 the capture failed or profiled nothing (diagnoses say why and\n"
      "what to do); 8 timed out, interrupted or stopped by the latency guard (bundle\n"
      "NAME.incomplete); 9 ncu not found; 14 (--trace) over a limit, nothing run.\n\n"
      "Examples:\n"
      "  kprof capture -k 'gemm|nvjet' --launch-skip 50 --launch-count 5 -- python3 serve_step.py\n"
      "  kprof capture --preset full -k flash --launch-count 2 --env CUDA_VISIBLE_DEVICES=1 -- "
      "./app\n"
      "  ncu --mode launch ./server &   # then, once per capture:\n"
      "  kprof capture --attach 127.0.0.1 -k attention --launch-count 3 -o att1");
  command->add_option("--preset", options->preset, "triage (default), basic or full")
      ->capture_default_str();
  command->add_option("--section", options->sections,
                      "ncu section (repeatable); replaces the preset");
  command->add_option("--metrics", options->metrics, "ncu metric list; replaces the preset");
  command->add_option("-k,--kernel-name", options->kernel_regex,
                      "Only kernels whose name matches this regex (ncu --kernel-name regex:…)");
  command
      ->add_option("--kernel-name-base", options->kernel_name_base,
                   "Name the regex matches: function (ncu's default), demangled or mangled")
      ->check(CLI::IsMember({"function", "demangled", "mangled"}));
  command->add_option("--launch-skip", options->launch_skip,
                      "Skip this many matching launches first (warm-up)");
  command->add_option("-c,--launch-count", options->launch_count,
                      "Profile this many matching launches");
  command
      ->add_option("--clock-control", options->clock_control,
                   "none (default: leave clocks alone), base, or with ncu 2025.4+ boost or "
                   "force-boost")
      ->check(CLI::IsMember({"none", "base", "boost", "force-boost"}))
      ->capture_default_str();
  command->add_option("--env", options->env,
                      "NAME=VALUE for the target, set on the ncu process (repeatable)");
  command->add_flag("--children", options->children,
                    "Also profile child processes (--target-processes all); NCCL kernels are "
                    "then left out of the filter (a replayed collective hangs its ranks)");
  command->add_flag("--include-collectives", options->include_collectives,
                    "With --children: profile NCCL kernels too (needs one rank, or "
                    "--replay-mode application)");
  command
      ->add_option("--communicator", options->communicator,
                   "ncu 2026.1+: replay NCCL/NVSHMEM kernels with their peers — shmem (one ncu "
                   "over the ranks of one process tree: with --children, kernel or range "
                   "replay) or tcp (one ncu per rank); NCCL kernels are then profiled")
      ->check(CLI::IsMember({"shmem", "tcp"}));
  command->add_option("--communicator-peers", options->communicator_peers,
                      "With --communicator: the number of processes taking part "
                      "(--communicator-shmem-num-peers / --communicator-tcp-num-peers)");
  command->add_flag("--lockstep", options->lockstep,
                    "With --communicator tcp: launch kernels in lockstep across the ranks' ncu "
                    "instances (--lockstep-kernel-launch)");
  command
      ->add_option("--replay-mode", options->replay_mode,
                   "kernel (ncu's default), application, range, app-range")
      ->check(CLI::IsMember({"kernel", "application", "range", "app-range"}));
  command
      ->add_option("--range", options->range,
                   "from-start (default: profile from process start, the application's "
                   "cudaProfilerStart/Stop ignored) or cuda-profiler-api (only inside the "
                   "windows the application opens: vLLM/SGLang start_profile, TensorRT-LLM "
                   "TLLM_PROFILE_START_STOP); --launch-count then counts inside them")
      ->check(CLI::IsMember({"from-start", "cuda-profiler-api"}))
      ->capture_default_str();
  command->add_flag("--honor-profiler-start-stop", options->honor_start_stop,
                    "Deprecated: the same as --range cuda-profiler-api");
  command->add_option("--nvtx-include", options->nvtx_include,
                      "Only kernels inside this NVTX range (repeatable; ncu's syntax: decode/ "
                      "a push/pop range, domain@range/, range1/range2 nested)");
  command->add_option("--nvtx-exclude", options->nvtx_exclude,
                      "Not kernels inside this NVTX range (repeatable; same syntax)");
  command
      ->add_option("--graph-profiling", options->graph_profiling,
                   "node (ncu's default: each kernel of a CUDA graph is its own result, with "
                   "verdicts) or graph (one result per graph launch, no per-kernel verdicts)")
      ->check(CLI::IsMember({"node", "graph"}));
  command->add_option("--safety", options->safety, "none, single-replica or multi-replica")
      ->capture_default_str();
  command->add_flag("--force", options->force, "Allow an unscoped --preset full");
  command->add_option("--ncu", options->ncu,
                      "ncu to run (default: $KPROF_NCU, PATH, /usr/local/cuda/bin/ncu)");
  command->add_option("--ncu-arg", options->ncu_args,
                      "Extra ncu argument, passed as is (repeatable)");
  command->add_option("-o,--output", options->output,
                      "Bundle folder (default kprof-capture-UTCTIME; never overwritten)");
  command->add_option("--timeout", options->timeout_s,
                      "Stop ncu and its target after this many seconds (0: none)");
  command->add_option("--campaign", options->campaign, "Label recorded in the manifest");
  command->add_option("--cell", options->cell, "Cell id recorded in the manifest");
  command->add_option("--revision", options->revision,
                      "Deployment revision recorded in the manifest");
  command->add_option(
      "--attach", options->attach,
      "Attach to HOST[:PORT] (a process under `ncu --mode launch`) instead of running a command");
  add_warm_options(command, options->warm,
                   "Readiness: a line matching this regex in --ready-log-file");
  command->add_option("--load-url", options->load_url,
                      "With --attach: run the warm sequence against this OpenAI-compatible server "
                      "(e.g. http://127.0.0.1:8000): start-up unprofiled, readiness, warm-up, "
                      "then each capture while requests flow");
  command->add_option("--ready-url", options->ready_url,
                      "Readiness: this URL answers 200 (default LOAD_URL/health)");
  command->add_option("--ready-log-file", options->ready_log_file,
                      "The log --ready-log-line reads");
  command->add_option("--ready-timeout", options->ready_timeout_s, "Seconds (default 600)");
  command->add_option("--captures", options->captures,
                      "Captures in the warm sequence, one bundle each (default 1)");
  command->add_flag("--json", options->json,
                    "Print the manifest (JSON) instead of the verdict table");
  command->add_flag("--plan", options->plan_only,
                    "Print the capture's plan (kprof plan: needs --trace) and run nothing");
  add_plan_options(command, options->plan, true);
  add_guard_options(command, options->guard, "--load-url");
  command->add_option("COMMAND", options->target, "The program and its arguments, after --");
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_capture(*options, output); };
  });
}

}  // namespace kprof::cli
