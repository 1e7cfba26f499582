// kprof capture [options] -- CMD... | --attach HOST[:PORT]: runs ncu with capture hygiene,
// shows progress, diagnoses what went wrong, and writes an evidence bundle with the analysis.
#include <fmt/format.h>
#include <netdb.h>
#include <re2/re2.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <memory>
#include <nlohmann/json.hpp>

#include "capture/evidence_bundle.h"
#include "capture/ncu_command.h"
#include "capture/ncu_diagnosis.h"
#include "capture/ncu_locator.h"
#include "cli/analyze_command.h"
#include "cli/capture_support.h"
#include "cli/command.h"
#include "cli/selection.h"
#include "common/child_process.h"
#include "common/text.h"

namespace kprof::cli {
namespace {
namespace fs = std::filesystem;

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
  std::string safety = "none";
  bool force = false;
  std::string ncu;
  std::vector<std::string> ncu_args;
  std::string output;
  double timeout_s = 0;
  std::string campaign, cell, revision;
  std::string attach;
  bool json = false;
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

// An ncu launch-mode target listens on the base port while it runs; a successful TCP connect
// after detaching says it is still there.
bool endpoint_reachable(const capture::AttachEndpoint& endpoint) {
  addrinfo hints{};
  hints.ai_socktype = SOCK_STREAM;
  addrinfo* found = nullptr;
  std::string port = std::to_string(endpoint.port.value_or(49152));
  if (getaddrinfo(endpoint.host.c_str(), port.c_str(), &hints, &found) != 0) return false;
  bool ok = false;
  for (addrinfo* a = found; a && !ok; a = a->ai_next) {
    int fd = socket(a->ai_family, a->ai_socktype | SOCK_CLOEXEC, a->ai_protocol);
    if (fd < 0) continue;
    ok = connect(fd, a->ai_addr, a->ai_addrlen) == 0;
    close(fd);
  }
  freeaddrinfo(found);
  return ok;
}

std::string passes_summary(const std::vector<int>& passes) {
  if (passes.empty()) return "";
  auto [low, high] = std::minmax_element(passes.begin(), passes.end());
  return *low == *high ? fmt::format(" at {} passes each", *low)
                       : fmt::format(" at {}-{} passes each", *low, *high);
}

// ncu collects nothing for a metric name it does not know and says nothing (seen on the H200:
// one pass, exit 0): compare the plain names asked for with what the report holds.
std::vector<std::string> metrics_not_collected(const std::string& metric_list,
                                               const model::Report& report) {
  std::vector<std::string> missing;
  if (report.kernels.empty()) return missing;
  size_t start = 0;
  while (start <= metric_list.size()) {
    size_t end = metric_list.find(',', start);
    if (end == std::string::npos) end = metric_list.size();
    std::string name = metric_list.substr(start, end - start);
    start = end + 1;
    if (name.empty() || name.find(':') != std::string::npos) continue;  // regex:, group:, …
    bool anywhere = false;
    for (const model::Kernel& kernel : report.kernels) {
      if (report.find(kernel, name)) anywhere = true;
    }
    if (!anywhere) missing.push_back(name);
  }
  return missing;
}

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
  std::vector<std::pair<std::string, std::string>> env = parse_env(options.env);
  std::string output_path =
      options.output.empty() ? "kprof-capture-" + utc_time("%Y%m%d-%H%M%S") : options.output;
  spec.export_path = "report";  // placeholder; checked for refusal only
  build_or_refuse(spec);
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

  capture::EvidenceBundle bundle(output_path);
  spec.export_path = bundle.path_of("report");
  capture::NcuCommand command = capture::build_ncu_command(spec);
  std::string started_at = utc_time();
  std::string ncu_version = capture::ncu_version_line(ncu.path);

  note(fmt::format("capturing with {} ({}), preset {}, into {}", ncu.path,
                   ncu_version.empty() ? "version unknown" : ncu_version,
                   capture::preset_name(spec.preset), bundle.final_path()));
  for (const std::string& warning : command.warnings) note("warning: " + warning);
  note("running: " + quoted_command(command.argv));

  std::optional<std::int64_t> expected = capture::effective_launch_count(spec);
  size_t profiled = 0;
  std::vector<int> passes;  // per profiled kernel, in order
  ChildRequest request;
  request.argv = command.argv;
  request.env = env;
  if (options.timeout_s > 0) {
    request.timeout = std::chrono::milliseconds(static_cast<long long>(options.timeout_s * 1000));
  }
  request.on_line = [&](const std::string& line, bool) {
    static const RE2 kProfiling("^==PROF== Profiling \"(.*)\".*- (\\d+) pass(?:es)?\\s*$");
    std::string name;
    int line_passes = 0;
    if (RE2::FullMatch(line, kProfiling, &name, &line_passes)) {
      ++profiled;
      passes.push_back(line_passes);
      note(fmt::format("kernel {}{}: {} ({} passes)", profiled,
                       expected ? fmt::format(" of {}", *expected) : "", name, line_passes));
    } else if (line.rfind("==ERROR==", 0) == 0 || line.rfind("==PROF== Connected", 0) == 0) {
      note(line);
    }
    return false;
  };
  // An attach client stays connected until the target exits: detach once the launches asked
  // for are profiled and the report is on disk (its size steady for half a second).
  std::string report_file = spec.export_path + ".ncu-rep";
  std::uintmax_t last_size = 0;
  int steady_ticks = 0;
  if (spec.attach) {
    request.on_tick = [&] {
      if (!expected || profiled < static_cast<size_t>(*expected)) return false;
      std::error_code error;
      std::uintmax_t size = fs::file_size(report_file, error);
      if (error || size == 0) return false;
      steady_ticks = size == last_size ? steady_ticks + 1 : 0;
      last_size = size;
      if (steady_ticks < 5) return false;
      note("report written; detaching from the target (SIGINT to the attach client)");
      return true;
    };
  }
  ChildResult result = run_child(request);
  std::string ended_at = utc_time();

  std::vector<capture::Diagnosis> diagnoses;
  bool detached = spec.attach && result.stop_requested;
  if (!result.started) {
    diagnoses.push_back({"ncu_not_started", true,
                         fmt::format("{} could not be started: {}", ncu.path, result.start_error),
                         "check the path and permissions, or pass --ncu PATH"});
  } else {
    bundle.write("ncu-stdout.txt", result.out);
    bundle.write("ncu-stderr.txt", result.err);
    bundle.write("ncu.log", result.combined);
    // The classification `kprof explain` gives the same log. ncu exits 130 when kprof detaches
    // it with SIGINT, and dies of what kprof sent it on a timeout or Ctrl-C: kprof's doing,
    // diagnosed below, not ncu's failure.
    bool stopped_by_kprof = detached || result.timed_out || result.interrupted;
    diagnoses =
        capture::diagnose({command.argv, result.combined, result.exit_code, stopped_by_kprof});
  }
  if (result.timed_out) {
    diagnoses.push_back(
        {"timeout", true,
         fmt::format("the capture ran past --timeout {} s; ncu and its target were "
                     "stopped (SIGINT to the process group, SIGKILL after 5 s)",
                     options.timeout_s),
         "scope the capture (-k, --launch-count, --preset triage) or allow more time"});
  }
  if (result.interrupted) {
    diagnoses.push_back({"interrupted", true,
                         "kprof was interrupted (SIGINT/SIGTERM); ncu and its target were stopped",
                         "run the capture again; the incomplete bundle keeps what was recorded"});
  }
  bool report_written = fs::exists(report_file);
  if (spec.attach && detached) {
    if (endpoint_reachable(*spec.attach)) {
      note("detached; the target still runs and accepts another attach");
    } else {
      diagnoses.push_back({"target_gone", false,
                           "after detaching, nothing listens on the attach port any more: the "
                           "target exited or stopped accepting profilers",
                           "check the target; start it again under `ncu --mode launch`"});
    }
  }
  std::string analysis_text, analysis_json;
  if (report_written) {
    write_ncu_exports(bundle, ncu.path, report_file);
    try {
      BundleAnalysis analysis = analyze_for_bundle(report_file);
      analysis_json = analysis.json;
      analysis_text = analysis.table;
      // A metric list of the user's own that yields nothing is a failed capture; a preset
      // metric this GPU lacks (another architecture) only thins out the verdicts.
      std::string asked = spec.metrics;
      bool own_list = !asked.empty();
      std::vector<std::string> preset_args = capture::preset_arguments(spec.preset);
      for (size_t i = 0; i + 1 < preset_args.size(); ++i) {
        if (preset_args[i] == "--metrics") asked += (asked.empty() ? "" : ",") + preset_args[i + 1];
      }
      std::vector<std::string> missing = metrics_not_collected(asked, analysis.report);
      if (!missing.empty()) {
        std::string names;
        for (const std::string& name : missing) names += (names.empty() ? "" : ", ") + name;
        diagnoses.push_back({"unknown_metric", own_list,
                             fmt::format("ncu collected nothing for {} (and still exited 0): "
                                         "not a metric of this ncu and GPU",
                                         names),
                             "`ncu --query-metrics` lists the metric names this GPU has"});
      }
    } catch (const InputError& error) {
      diagnoses.push_back({"report_unreadable", true,
                           fmt::format("the report ncu wrote cannot be read: {}", error.what()),
                           "keep the bundle and report it; run `ncu --import` on it to compare"});
    } catch (const NothingSelected&) {
    }
  }

  bool failed = std::any_of(diagnoses.begin(), diagnoses.end(),
                            [](const capture::Diagnosis& d) { return d.failure; });
  bool incomplete = result.timed_out || result.interrupted || interrupt_received();
  nlohmann::json manifest = {
      {"schema", "kprof.bundle/1"},
      {"status", incomplete ? "incomplete"
                 : failed   ? "failed"
                            : "ok"},
      {"tool", {{"name", "kprof"}, {"version", KPROF_VERSION}, {"argv", output.argv}}},
      {"ncu",
       {{"path", ncu.path},
        {"version", ncu_version},
        {"argv", command.argv},
        {"exit_code", result.started ? nlohmann::json(result.exit_code) : nlohmann::json(nullptr)},
        {"signal", result.signal},
        {"detached_by_kprof", detached}}},
      {"campaign", options.campaign},
      {"cell_id", options.cell},
      {"deployment_revision", options.revision},
      {"started_at", started_at},
      {"ended_at", ended_at},
      {"elapsed_s", result.elapsed.count() / 1000.0},
      {"progress",
       {{"kernels_profiled", profiled},
        {"passes_per_kernel", passes},
        {"passes_min", passes.empty()
                           ? nlohmann::json(nullptr)
                           : nlohmann::json(*std::min_element(passes.begin(), passes.end()))},
        {"passes_max", passes.empty()
                           ? nlohmann::json(nullptr)
                           : nlohmann::json(*std::max_element(passes.begin(), passes.end()))}}},
      {"warnings", command.warnings},
      {"diagnoses", diagnoses_json(diagnoses)},
  };
  manifest.update(capture_scope_json(spec));
  if (spec.attach) {
    manifest["attach"] = {{"host", spec.attach->host}, {"port", spec.attach->port.value_or(49152)}};
  } else {
    nlohmann::json env_json = nlohmann::json::object();
    for (const auto& [name, value] : env) env_json[name] = value;
    manifest["target"] = {{"argv", spec.target}, {"env", env_json}};
  }
  if (incomplete) {
    manifest["incomplete_reason"] = result.timed_out ? "timeout" : "interrupted";
  }
  // The analysis read the report in the temporary folder: name it where it will be.
  if (!analysis_json.empty())
    bundle.write("analysis.json", bundle.with_final_paths(analysis_json, incomplete));
  std::string written = incomplete ? bundle.abandon(manifest) : bundle.commit(manifest);

  std::string text =
      options.json ? manifest.dump(1) + "\n" : bundle.with_final_paths(analysis_text, incomplete);
  output.stderr_text += render_diagnoses(diagnoses);
  output.stderr_text +=
      fmt::format("kprof: {} {}: {} kernel{} profiled{}; bundle {}\n",
                  incomplete ? "capture incomplete"
                  : failed   ? "capture failed"
                             : "captured",
                  fmt::format("in {:.1f} s", result.elapsed.count() / 1000.0), profiled,
                  profiled == 1 ? "" : "s", passes_summary(passes), written);
  output.stdout_text = text;
  if (incomplete) return ExitCode::kIncomplete;
  return failed ? ExitCode::kCaptureFailed : ExitCode::kOk;
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
      "stopped by --timeout or Ctrl-C is renamed NAME.incomplete instead.\n\n"
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
      "Exit codes: 0 captured; 7 the capture failed or profiled nothing (diagnoses say why and\n"
      "what to do); 8 timed out or interrupted (bundle NAME.incomplete); 9 ncu not found.\n\n"
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
                   "none (default: leave clocks alone) or base")
      ->check(CLI::IsMember({"none", "base"}))
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
  command->add_flag("--json", options->json,
                    "Print the manifest (JSON) instead of the verdict table");
  command->add_option("COMMAND", options->target, "The program and its arguments, after --");
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_capture(*options, output); };
  });
}

}  // namespace kprof::cli
