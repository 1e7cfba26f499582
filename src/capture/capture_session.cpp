#include "capture/capture_session.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "common/error.h"
#include "common/redact.h"
#include "common/text.h"
#include "render/envelope.h"

namespace kprof::capture {
namespace fs = std::filesystem;

ChildResult LocalNcuRunner::run(const ChildRequest& request) { return run_child(request); }

std::string LocalNcuRunner::export_path(const EvidenceBundle& bundle) {
  return bundle.path_of("report");
}

bool process_running(int pid, const std::string& proc_root) {
  if (pid <= 0) return false;
  std::ifstream stat(proc_root + "/" + std::to_string(pid) + "/stat");
  std::string line;
  if (!std::getline(stat, line)) return false;
  // "PID (COMM) STATE …": COMM may hold spaces and parentheses, the state follows the last ')'.
  size_t close = line.rfind(')');
  return close != std::string::npos && close + 2 < line.size() && line[close + 2] != 'Z' &&
         line[close + 2] != 'X';
}

bool is_local_host(const std::string& host) {
  if (host == "127.0.0.1" || host == "localhost" || host == "::1" || host.rfind("127.", 0) == 0)
    return true;
  char name[256] = {};
  return gethostname(name, sizeof name - 1) == 0 && host == name;
}

// Liveness is asked of the processes themselves, not of a port: ncu's attach finds its targets
// through its own discovery (on the H200 the local transport), a target may sit on any port of
// the range, and one that is between two attach clients may not accept a TCP connection at that
// moment. The pids come from ncu's own "Connected to process PID" lines; on another machine
// nothing can be told from here.
std::optional<bool> LocalNcuRunner::target_still_there(const AttachEndpoint& endpoint,
                                                       const std::vector<int>& pids) {
  if (pids.empty() || !is_local_host(endpoint.host)) return std::nullopt;
  return std::all_of(pids.begin(), pids.end(), [](int pid) { return process_running(pid); });
}

void write_ncu_exports(EvidenceBundle& bundle, const std::string& ncu_path,
                       const std::string& report_file,
                       const std::function<void(const std::string&)>& note) {
  const std::vector<std::pair<std::string, std::vector<std::string>>> exports = {
      {"raw.csv", {ncu_path, "--import", report_file, "--csv", "--page", "raw"}},
      {"speed_of_light.csv",
       {ncu_path, "--import", report_file, "--csv", "--page", "details", "--section",
        "SpeedOfLight"}}};
  for (const auto& [file, argv] : exports) {
    ChildRequest request;
    request.argv = argv;
    request.timeout = std::chrono::minutes(10);
    ChildResult exported = run_child(request);
    if (exported.started && exported.exit_code == 0 && !exported.out.empty()) {
      bundle.write(file, exported.out);
    } else {
      note(fmt::format("warning: `{}` failed (exit {}); {} left out", quoted_command(argv),
                       exported.exit_code, file));
    }
  }
}

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

CaptureSession::CaptureSession(CaptureSpec spec, SessionOptions options, NcuRunner& runner,
                               CaptureObserver& observer)
    : spec_(std::move(spec)), options_(std::move(options)), runner_(runner), observer_(observer) {}

// Why ncu stopped when kprof stopped it (a timeout, an interruption, the detach of an attach
// client), and an attach that reached another process than the one meant.
void CaptureSession::add_stop_diagnoses(const CaptureSpec& spec, const ChildResult& result,
                                        bool detached, const std::vector<int>& pids,
                                        std::vector<Diagnosis>& diagnoses) {
  // Attached, kprof stopped only its own attach client: the target was started elsewhere (under
  // `ncu --mode launch`) and keeps running; launched, ncu's process group is the target too.
  std::string stopped =
      spec.attach ? "the ncu attach client was stopped; the target keeps running (kprof did not "
                    "start it) and waits for the next attach"
                  : "ncu and its target were stopped";
  if (result.timed_out) {
    diagnoses.push_back(
        {"timeout", true,
         fmt::format("the capture ran past --timeout {} s; {} (SIGINT to the process group, "
                     "SIGKILL after 5 s)",
                     options_.timeout_s, stopped),
         spec.attach
             ? "check that the attached process runs the kernels asked for (-k, --launch-count; "
               "with a process tree, name it with --attach-process), or allow more time"
             : "scope the capture (-k, --launch-count, --preset triage) or allow more time"});
  }
  if (result.interrupted) {
    diagnoses.push_back(
        {"interrupted", true,
         fmt::format("kprof was interrupted (SIGINT, SIGTERM or SIGHUP); {}", stopped),
         "run the capture again; the incomplete bundle keeps what was recorded"});
  }
  if (detached) {
    std::optional<bool> still_there = runner_.target_still_there(*spec.attach, pids);
    observer_.detached(still_there);
    if (still_there == false) {
      std::string list;
      for (int pid : pids) list += (list.empty() ? "" : ", ") + std::to_string(pid);
      diagnoses.push_back({"target_gone", false,
                           fmt::format("after detaching, the attached process ({}) no longer "
                                       "runs: it exited or was killed",
                                       list),
                           "check the target; start it again under `ncu --mode launch`"});
    }
  }
  if (options_.expected_pid && result.started) {
    if (!pids.empty() &&
        std::find(pids.begin(), pids.end(), *options_.expected_pid) == pids.end()) {
      diagnoses.push_back(
          {"attached_other_process", true,
           fmt::format("ncu attached to process {} instead of {} (the one named with "
                       "--attach-process): a new process of the tree took the attach",
                       pids.front(), *options_.expected_pid),
           "run the capture again; kprof holds the processes it has seen, a process that "
           "appeared since is held on the next run"});
    }
  }
}

// The bundle's analysis (analysis.json and the verdict table), and the capture's metrics
// checked in the report: a metric list of the user's own that yields nothing fails it.
void CaptureSession::analyze_report(const CaptureSpec& spec, const std::string& report_file,
                                    std::string& analysis_text, std::string& analysis_json,
                                    std::vector<Diagnosis>& diagnoses) {
  try {
    if (std::optional<BundleAnalysis> analysis = options_.analyze(report_file)) {
      analysis_json = analysis->json;
      analysis_text = analysis->table;
      // A metric list of the user's own that yields nothing is a failed capture; a preset
      // metric this GPU lacks (another architecture) only thins out the verdicts.
      std::string asked = spec.metrics;
      bool own_list = !asked.empty();
      std::vector<std::string> preset_args = preset_arguments(spec.preset);
      for (size_t i = 0; i + 1 < preset_args.size(); ++i) {
        if (preset_args[i] == "--metrics") asked += (asked.empty() ? "" : ",") + preset_args[i + 1];
      }
      std::vector<std::string> missing = metrics_not_collected(asked, analysis->report);
      if (!missing.empty()) {
        std::string names;
        for (const std::string& name : missing) names += (names.empty() ? "" : ", ") + name;
        diagnoses.push_back({"unknown_metric", own_list,
                             fmt::format("ncu collected nothing for {} (and still exited 0): "
                                         "not a metric of this ncu and GPU",
                                         names),
                             "`ncu --query-metrics` lists the metric names this GPU has"});
      }
    }
  } catch (const InputError& error) {
    diagnoses.push_back({"report_unreadable", true,
                         fmt::format("the report ncu wrote cannot be read: {}", error.what()),
                         "keep the bundle and report it; run `ncu --import` on it to compare"});
  }
}

CaptureResult CaptureSession::run(const std::string& bundle_path) {
  EvidenceBundle bundle(bundle_path);
  CaptureSpec spec = spec_;
  spec.export_path = runner_.export_path(bundle);
  NcuCommand command = build_ncu_command(spec);
  std::string started_at = utc_time();
  observer_.started(command, bundle.final_path());

  std::optional<std::int64_t> expected = effective_launch_count(spec);
  NcuProgressParser parser([&](const NcuProgressEvent& event) {
    switch (event.kind) {
      case NcuProgressEvent::Kind::kProcessConnected:
        observer_.process_connected(event.line);
        break;
      case NcuProgressEvent::Kind::kKernelProfiled:
        observer_.kernel_profiled(event.kernel, expected, event.kernel_name, event.passes);
        break;
      case NcuProgressEvent::Kind::kMessage:
        observer_.ncu_message(event.line);
        break;
    }
  });
  ChildRequest request;
  request.argv = command.argv;
  request.env = options_.env;
  if (options_.timeout_s > 0) {
    request.timeout = std::chrono::milliseconds(static_cast<long long>(options_.timeout_s * 1000));
  }
  request.on_line = [&](const std::string& line, bool) {
    parser.feed_line(line);
    return false;
  };
  // An attach client stays connected until the target exits: detach once the launches asked
  // for are profiled and the report is on disk (its size steady for half a second).
  std::string report_file = bundle.path_of("report.ncu-rep");
  std::uintmax_t last_size = 0;
  int steady_ticks = 0;
  // The latency guard (options_.guard) may stop ncu at any moment: an attach client detaches,
  // a launched target stops with it; what was captured is kept, the bundle incomplete.
  std::optional<std::string> guard_stop;
  auto guard_fired = [&] {
    if (guard_stop || !options_.guard) return guard_stop.has_value();
    guard_stop = options_.guard();
    if (guard_stop)
      observer_.note("guard: " + *guard_stop + "; stopping ncu (SIGINT to its process group)");
    return guard_stop.has_value();
  };
  if (options_.guard && !spec.attach) request.on_tick = guard_fired;
  if (spec.attach) {
    request.on_tick = [&] {
      if (guard_fired()) return true;
      if (!expected || parser.progress().kernels_profiled < static_cast<size_t>(*expected))
        return false;
      std::error_code error;
      std::uintmax_t size = fs::file_size(report_file, error);
      if (error || size == 0) return false;
      steady_ticks = size == last_size ? steady_ticks + 1 : 0;
      last_size = size;
      if (steady_ticks < 5) return false;
      observer_.detaching();
      return true;
    };
  }
  ChildResult result = runner_.run(request);
  parser.finish();
  std::string ended_at = utc_time();

  std::vector<Diagnosis> diagnoses;
  bool detached = spec.attach && result.stop_requested;
  if (!result.started) {
    diagnoses.push_back({"ncu_not_started", true,
                         fmt::format("{} could not be started: {}", spec.ncu, result.start_error),
                         "check the path and permissions, or pass --ncu PATH"});
  } else {
    bundle.write("ncu-stdout.txt", result.out);
    bundle.write("ncu-stderr.txt", result.err);
    bundle.write("ncu.log", result.combined);
    // The classification `kprof explain` gives the same log. ncu exits 130 when kprof detaches
    // it with SIGINT, and dies of what kprof sent it on a timeout or Ctrl-C: kprof's doing,
    // diagnosed below, not ncu's failure.
    bool stopped_by_kprof = detached || result.timed_out || result.interrupted || guard_stop;
    // The diagnoses quote ncu's command line and its console (the program's own output): where
    // a key enters what capture prints, so redacted here (common/redact.h).
    diagnoses =
        diagnose({redact_secrets(command.argv), redact_secrets(result.combined), result.exit_code,
                  stopped_by_kprof, parse_ncu_version(options_.ncu_version)});
  }
  add_stop_diagnoses(spec, result, detached, parser.progress().connected_pids, diagnoses);
  if (guard_stop) {
    std::size_t profiled = parser.progress().kernels_profiled;
    diagnoses.push_back(
        {"guard_fired", false,
         fmt::format("the latency guard stopped the capture: {}; {} kernel{} profiled{} are kept",
                     *guard_stop, profiled, profiled == 1 ? "" : "s",
                     expected ? fmt::format(" of {}", *expected) : ""),
         "the service could not afford this capture: plan a smaller one (kprof plan: fewer "
         "launches, a lighter preset) or use the sister deployment"});
  }
  bool failed =
      std::any_of(diagnoses.begin(), diagnoses.end(), [](const Diagnosis& d) { return d.failure; });
  if (result.started && !failed && !result.interrupted) {
    if (std::optional<Diagnosis> copy =
            runner_.fetch_report(spec.export_path + ".ncu-rep", report_file)) {
      diagnoses.push_back(*copy);
    }
  }

  std::string analysis_text, analysis_json;
  if (fs::exists(report_file)) {
    auto note = [&](const std::string& text) { observer_.note(text); };
    if (!options_.export_ncu.empty())
      write_ncu_exports(bundle, options_.export_ncu, report_file, note);
    if (options_.analyze)
      analyze_report(spec, report_file, analysis_text, analysis_json, diagnoses);
  }

  nlohmann::json load_block = options_.load ? options_.load(diagnoses) : nlohmann::json();
  CaptureResult outcome;
  outcome.progress = parser.progress();
  ManifestBuilder manifest(render::tool_json(options_.argv));
  manifest.labels(options_.campaign, options_.cell_id, options_.revision)
      .times(started_at, ended_at, result.elapsed.count() / 1000.0)
      .ncu({spec.ncu, options_.ncu_version, command.argv,
            result.started ? std::optional<int>(result.exit_code) : std::nullopt, result.signal,
            detached})
      .scope(spec)
      .progress(outcome.progress)
      .warnings(command.warnings)
      .diagnoses(diagnoses);
  if (spec.attach) {
    manifest.attach(*spec.attach,
                    options_.attach_details ? options_.attach_details() : nlohmann::json::object());
  } else {
    manifest.target(spec.target, options_.env);
  }
  if (!load_block.is_null()) manifest.load(std::move(load_block));
  if (!options_.plan.is_null()) manifest.plan(options_.plan, result.elapsed.count() / 1000.0);
  if (options_.service_cost) {
    nlohmann::json service = options_.service_cost();
    service["ncu_held_s"] = result.elapsed.count() / 1000.0;
    manifest.service(std::move(service));
  }
  runner_.describe(manifest);
  if (result.timed_out || result.interrupted || interrupt_received()) {
    manifest.incomplete(result.timed_out ? "timeout" : "interrupted");
  } else if (guard_stop) {
    manifest.incomplete("guard");
  }
  outcome.incomplete = manifest.is_incomplete();
  outcome.failed = manifest.is_failed();
  outcome.status = manifest.status();
  outcome.manifest = manifest.build();
  // The analysis read the report in the temporary folder: name it where it will be.
  if (!analysis_json.empty())
    bundle.write("analysis.json", bundle.with_final_paths(analysis_json, outcome.incomplete));
  if (!analysis_text.empty())
    outcome.analysis_table = bundle.with_final_paths(analysis_text, outcome.incomplete);
  outcome.bundle_path =
      outcome.incomplete ? bundle.abandon(outcome.manifest) : bundle.commit(outcome.manifest);
  outcome.diagnoses = std::move(diagnoses);
  outcome.ncu = std::move(result);
  return outcome;
}

}  // namespace kprof::capture
