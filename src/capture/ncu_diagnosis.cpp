#include "capture/ncu_diagnosis.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <csignal>
#include <cstring>

#include "common/text.h"
#include "importers/ncu_rep/profiler_command_line.h"

namespace kprof::capture {
namespace {

bool contains(std::string_view text, std::string_view what) {
  return text.find(what) != std::string_view::npos;
}

std::vector<std::string_view> lines_of(std::string_view text) {
  std::vector<std::string_view> lines;
  size_t start = 0;
  while (start < text.size()) {
    size_t end = text.find('\n', start);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(start, end - start);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    lines.push_back(line);
    start = end + 1;
  }
  return lines;
}

bool has_option(const std::vector<std::string>& argv, std::string_view option) {
  return std::any_of(argv.begin(), argv.end(), [&](const std::string& arg) {
    return arg == option || arg.rfind(std::string(option) + "=", 0) == 0;
  });
}

const char* signal_meaning(int signal) {
  switch (signal) {
    case SIGSEGV:
      return "SIGSEGV: a segmentation fault";
    case SIGABRT:
      return "SIGABRT: an abort, e.g. a failed assertion";
    case SIGKILL:
      return "SIGKILL: killed, e.g. out of memory";
    case SIGBUS:
      return "SIGBUS";
    case SIGFPE:
      return "SIGFPE";
    case SIGILL:
      return "SIGILL";
    case SIGINT:
      return "SIGINT: interrupted, e.g. Ctrl-C";
    case SIGTERM:
      return "SIGTERM: terminated";
    case SIGHUP:
      return "SIGHUP: the terminal went away";
    case SIGPIPE:
      return "SIGPIPE: its output was closed";
    default:
      return nullptr;
  }
}

std::string signal_name(int code) {
  // ncu reports a target killed by signal N as "error code (N)".
  switch (code) {
    case SIGSEGV:
    case SIGABRT:
    case SIGKILL:
    case SIGBUS:
    case SIGFPE:
      return fmt::format(" ({})", signal_meaning(code));
    default:
      return "";
  }
}

// The last line ncu printed that is not blank, shortened for one line of diagnosis.
std::string last_line_of(std::string_view output) {
  std::vector<std::string_view> lines = lines_of(output);
  for (auto it = lines.rbegin(); it != lines.rend(); ++it) {
    std::string_view line = trim(*it);
    if (line.empty()) continue;
    constexpr size_t kLongest = 300;
    if (line.size() <= kLongest) return std::string(line);
    size_t cut = kLongest;  // on a UTF-8 character boundary
    while (cut > 0 && (static_cast<unsigned char>(line[cut]) & 0xC0) == 0x80) --cut;
    return std::string(line.substr(0, cut)) + " …";
  }
  return "";
}

// ncu ended non-zero and no rule says why: still a failure, with what can be said.
Diagnosis unexplained_exit(const NcuRun& run) {
  int signal = run.exit_code > 128 && run.exit_code < 128 + 65 ? run.exit_code - 128 : 0;
  const char* meaning = signal ? signal_meaning(signal) : nullptr;
  std::string status =
      signal ? fmt::format("{}, which is how a shell reports a process killed by signal {} ({})",
                           run.exit_code, signal, meaning ? meaning : "see `kill -l`")
             : std::to_string(run.exit_code);
  std::string last = last_line_of(run.output);
  std::string what =
      fmt::format("ncu exited {} without a known cause; {}", status,
                  last.empty() ? "it printed nothing" : fmt::format("its last line: {}", last));
  std::string next =
      signal == SIGSEGV || signal == SIGABRT || signal == SIGBUS || signal == SIGILL
          ? "run the application without ncu to see whether it crashes alone; if it does not, "
            "ncu crashed: compare ncu's version with the driver (`kprof doctor`) and keep the "
            "log for a report"
      : signal == SIGKILL
          ? "look for the out-of-memory killer (`dmesg`); scope the capture (-k, --launch-count) "
            "so that fewer passes are kept"
      : signal == SIGINT || signal == SIGTERM || signal == SIGHUP
          ? "the run was stopped from outside: run it again to the end"
          : "read ncu's whole output (the lines before the last) and `ncu --help` for this "
            "version";
  return {"ncu_failed", true, what, next};
}

}  // namespace

std::vector<std::string> closest_kernel_names(const std::string& filter,
                                              std::vector<std::string> names, size_t count) {
  std::string wanted = filter.rfind("regex:", 0) == 0 ? filter.substr(6) : filter;
  auto lower = [](std::string text) {
    for (char& c : text) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    return text;
  };
  wanted = lower(wanted);
  // Longest common substring, O(|a|·|b|) with one row: names and filters are short.
  auto common = [&](const std::string& name) {
    std::string text = lower(name);
    std::vector<size_t> row(wanted.size() + 1, 0);
    size_t best = 0;
    for (size_t i = 1; i <= text.size(); ++i) {
      size_t diagonal = 0;
      for (size_t j = 1; j <= wanted.size(); ++j) {
        size_t above = row[j];
        row[j] = text[i - 1] == wanted[j - 1] ? diagonal + 1 : 0;
        best = std::max(best, row[j]);
        diagonal = above;
      }
    }
    return best;
  };
  std::vector<std::pair<size_t, std::string>> scored;
  for (std::string& name : names) scored.emplace_back(common(name), std::move(name));
  std::stable_sort(scored.begin(), scored.end(), [](const auto& a, const auto& b) {
    return a.first != b.first ? a.first > b.first : a.second < b.second;
  });
  std::vector<std::string> out;
  for (size_t i = 0; i < scored.size() && i < count; ++i) out.push_back(scored[i].second);
  return out;
}

namespace {

// What every family of rules reads of a run: its output, progress, the settings its command
// line gives, the application's name; the injection a refusal names, for the rules after it.
struct RunFacts {
  const NcuRun& run;
  const std::string& out;
  NcuProgress progress;
  model::ProfilerSettings settings;
  std::string app;
  std::string injection;
};

// An option this ncu does not know (--attach above all).
void option_rules(RunFacts& facts, std::vector<Diagnosis>& found) {
  const std::string& out = facts.out;
  std::string option;
  if (RE2::PartialMatch(out, "unrecognised option '(--[^']+)'", &option)) {
    if (option == "--attach") {
      found.push_back({"attach_option", true,
                       "ncu has no --attach option: it attaches only to a process it started "
                       "itself in launch mode",
                       "start the target as `ncu --mode launch … APP`, then attach with `ncu "
                       "--mode attach --hostname HOST`"});
    } else {
      found.push_back({"unrecognised_option", true,
                       fmt::format("this ncu does not know the option {}", option),
                       "check `ncu --version` and `ncu --help`: options differ between versions"});
    }
  }
}

// The counters or the injection refused: permission, another tool's CUDA_INJECTION64_PATH.
void permission_rules(RunFacts& facts, std::vector<Diagnosis>& found) {
  const std::string& out = facts.out;
  std::string& injection = facts.injection;
  if (contains(out, "ERR_NVGPUCTRPERM")) {
    found.push_back({"counter_permission", true,
                     "ERR_NVGPUCTRPERM: this user may not read the GPU performance counters "
                     "(the driver restricts them to administrators)",
                     "run as root or with CAP_SYS_ADMIN (in a container: --cap-add SYS_ADMIN), or "
                     "load the driver with NVreg_RestrictProfilingToAdminUsers=0; `kprof doctor` "
                     "checks this"});
  }
  // ncu refuses to run when CUDA_INJECTION64_PATH is already set in its own environment (a pod
  // or shell set up for another tool, kprof's tracer included): recorded on the H200.
  if (RE2::PartialMatch(out,
                        "Another tool/injection might be loaded since CUDA_INJECTION64_PATH "
                        "is set to ([^\\n]*?)\\.? To run Nsight Compute",
                        &injection)) {
    found.push_back({"injection_env_set", true,
                     fmt::format("ncu refused to profile: CUDA_INJECTION64_PATH is already set to "
                                 "{} (another tool's injection library, e.g. kprof's tracer)",
                                 injection),
                     "unset CUDA_INJECTION64_PATH for the capture (`env -u CUDA_INJECTION64_PATH "
                     "kprof capture …`), or stop the tool that set it; `kprof doctor` shows it"});
  }
}

// The profiler library did not start in the application, or the CUDA versions cannot work.
void profiler_library_rules(RunFacts& facts, std::vector<Diagnosis>& found) {
  const std::string& out = facts.out;
  // CUPTI / the injection library failing to start, often a driver older than the CUDA the
  // application or ncu was built for. Not provoked on the lent H200 (one CUDA 13 toolkit on a
  // CUDA 13 driver): matched loosely, and the versions are quoted from ncu's own lines.
  static const RE2 kDriverVersion("(?i)driver[^0-9\\n]{0,40}?(\\d+)\\.(\\d+)");
  static const RE2 kRuntimeVersion("(?i)runtime[^0-9\\n]{0,40}?(\\d+)\\.(\\d+)");
  bool library_failed =
      RE2::PartialMatch(out,
                        "(?i)(failed to (load|initialize|initialise)[^\\n]*(profil|inject|cupti))|"
                        "(cupti[^\\n]*(error|fail))");
  int driver_major = 0, driver_minor = 0, runtime_major = 0, runtime_minor = 0;
  bool versions = false;
  for (std::string_view line : lines_of(out)) {
    if (line.find("CUDA") == std::string_view::npos) continue;
    if (RE2::PartialMatch(line, kDriverVersion, &driver_major, &driver_minor)) versions = true;
    RE2::PartialMatch(line, kRuntimeVersion, &runtime_major, &runtime_minor);
  }
  if (versions && runtime_major > driver_major) {
    found.push_back({"cuda_version_skew", true,
                     fmt::format("the CUDA runtime/toolkit ({}.{}) is a newer major version than "
                                 "the driver supports ({}.{}): the profiler cannot initialise",
                                 runtime_major, runtime_minor, driver_major, driver_minor),
                     "use an ncu and application built for the driver's CUDA major, or upgrade "
                     "the driver; `kprof doctor` compares them"});
  } else if (library_failed) {
    found.push_back(
        {"profiler_library_failed", true,
         "ncu's profiler library (CUPTI injection) did not load or initialise in the "
         "application",
         "run `kprof doctor` (driver vs CUDA versions, sandbox, CUDA_INJECTION64_PATH)"});
  }
}

// What the command asked for that does not exist or cannot be done: a section, a set, the
// application, an attachable process, a deterministic replay; the application's own failure.
void scope_rules(RunFacts& facts, std::vector<Diagnosis>& found) {
  const std::string& out = facts.out;
  const NcuProgress& progress = facts.progress;
  const model::ProfilerSettings& settings = facts.settings;
  std::string& injection = facts.injection;
  std::string section;
  if (RE2::PartialMatch(out, "Option '--section ([^']+)' did not match any section", &section)) {
    found.push_back({"unknown_section", true, fmt::format("no section is called \"{}\"", section),
                     "`ncu --list-sections` lists the section identifiers"});
  }
  if (contains(out, "No metrics to collect found in sections.")) {
    found.push_back({"unknown_set", true,
                     "the --set names no known set: ncu profiled with no metrics (1 pass) and "
                     "still exited 0",
                     "`ncu --list-sets` lists the sets (basic, detailed, full, …)"});
  }
  if (contains(out, "does not exist or is not an executable")) {
    found.push_back({"missing_application", true,
                     fmt::format("the application \"{}\" does not exist or is not executable",
                                 settings.application.empty() ? "" : settings.application.front()),
                     "give an absolute path, or check the working directory"});
  }
  if (contains(out, "No attachable process found")) {
    found.push_back({"no_attachable_process", true,
                     "no process waiting for a profiler was found on the host's ports",
                     "start the target under `ncu --mode launch` first; check --hostname and "
                     "--port match it"});
  }
  if (contains(out, "Unexpected number of profiled kernels")) {
    found.push_back({"application_replay_inconsistent", true,
                     "application replay saw different kernels in different runs of the "
                     "application (it is not deterministic)",
                     "profile an isolated single-op harness, or use kernel replay "
                     "(--replay-mode kernel); more flags will not make the program deterministic"});
  }
  int code = 0;
  // The application's failure is the refused injection's doing when ncu says so: one cause.
  if (injection.empty() &&
      RE2::PartialMatch(out, "The application returned an error code \\((\\d+)\\)", &code)) {
    found.push_back({"target_failed", true,
                     fmt::format("the application exited with code {}{}{}", code, signal_name(code),
                                 progress.report_paths.empty()
                                     ? ""
                                     : fmt::format("; {} kernel{} were profiled and the report "
                                                   "was still written",
                                                   progress.kernels_profiled,
                                                   progress.kernels_profiled == 1 ? "" : "s")),
                     "run the application without ncu to see whether it fails alone; the "
                     "report holds what was profiled before the failure"});
  }
}

// ncu profiled nothing and exited 0: why, from what it printed and the command line.
void nothing_profiled_rules(RunFacts& facts, std::vector<Diagnosis>& found) {
  const std::string& out = facts.out;
  const NcuRun& run = facts.run;
  const NcuProgress& progress = facts.progress;
  const model::ProfilerSettings& settings = facts.settings;
  const std::string& app = facts.app;
  if (contains(out, "No kernels were profiled.")) {
    bool all_processes = settings.target_processes == "all";
    // ncu lists the kernels it saw but did not match: then the filter, not the process, is the
    // cause (it prints the --target-processes hint as well whenever application-only is given).
    if (!progress.available_kernels.empty()) {
      std::string names;
      for (const std::string& name :
           closest_kernel_names(settings.kernel_name, progress.available_kernels, 5)) {
        names += (names.empty() ? "" : ", ") + name;
      }
      found.push_back({"no_kernel_matched", true,
                       fmt::format("the kernel filter \"{}\" matched none of the {} kernels the "
                                   "application launched; closest: {}",
                                   settings.kernel_name, progress.available_kernels.size(), names),
                       "use --kernel-name regex:PART of one of those names (matched against "
                       "the function name unless --kernel-name-base says otherwise)"});
    } else if (app == "env" && !all_processes) {
      found.push_back({"env_wrapper", true,
                       "the command ran under `env`: with --target-processes application-only "
                       "ncu profiled env, which launches no kernel",
                       "set the variables on ncu itself (`FOO=1 ncu … app`, kprof capture "
                       "--env FOO=1) instead of `ncu … env FOO=1 app`"});
    } else if ((app == "bash" || app == "sh" || app == "dash" || app == "zsh") && !all_processes) {
      found.push_back({"shell_wrapper", true,
                       "the command ran through a shell: with --target-processes "
                       "application-only ncu profiled the shell, not its child",
                       "run the application directly, or pass --target-processes all "
                       "(kprof capture --children)"});
    } else if (settings.profile_from_start == "off" || settings.profile_from_start == "0" ||
               settings.profile_from_start == "no") {
      found.push_back({"profiling_never_started", true,
                       "--profile-from-start off (kprof capture --range cuda-profiler-api) "
                       "waits for cudaProfilerStart, which the application never called: the "
                       "profiling window never opened",
                       "open it while ncu runs (e.g. vLLM with its CUDA profiler enabled: POST "
                       "/start_profile then /stop_profile; TensorRT-LLM: "
                       "TLLM_PROFILE_START_STOP), or profile from the start (--range from-start) "
                       "and skip warm-up with --launch-skip"});
    } else if (progress.processes_connected == 0) {
      // Seen on the H200: a program without CUDA and a Python launcher whose child runs the
      // kernels print exactly the same; only the user knows which it is.
      found.push_back(
          {"no_cuda", true,
           all_processes
               ? "no process of this command made a CUDA call that ncu saw"
               : "the process made no CUDA call that ncu saw: it runs no GPU work itself, or "
                 "leaves it to child processes that --target-processes application-only does "
                 "not follow",
           all_processes ? "check that this command runs GPU work on this machine"
                         : "if it starts other processes, pass --target-processes all (kprof "
                           "capture --children); otherwise check that it runs GPU work"});
    } else if (contains(out, "NVTX include expressions match only push/pop ranges")) {
      // Recorded on the H200 (--nvtx-include nosuchrange/): ncu's only hint is this note.
      std::string expressions;
      for (size_t i = 1; i + 1 < run.argv.size(); ++i) {
        if (run.argv[i] == "--nvtx-include") {
          expressions += (expressions.empty() ? "" : ", ") + run.argv[i + 1];
        }
      }
      found.push_back(
          {"nvtx_filter_matched_nothing", true,
           fmt::format("no kernel ran inside the NVTX range{} the capture was limited to ({})",
                       expressions.find(',') == std::string::npos ? "" : "s", expressions),
           "check the range names (a trailing / names a push/pop range: decode/; a start/end "
           "range has none; domain@range/ for a named domain; names are case-sensitive), e.g. "
           "in a kprof trace or Nsight Systems timeline of the same program"});
    } else {
      found.push_back({"nothing_profiled", true, "ncu profiled no kernel and still exited 0",
                       "check the filters (--kernel-name, --launch-skip, NVTX) against the "
                       "kernels the application runs"});
    }
  }
}

// What worked, but with a cost or a risk: fewer launches than asked, a collective replayed,
// memory backed up to the host or not saved, clocks left to ncu's default.
void warning_rules(RunFacts& facts, std::vector<Diagnosis>& found) {
  const std::string& out = facts.out;
  const NcuRun& run = facts.run;
  const NcuProgress& progress = facts.progress;
  const model::ProfilerSettings& settings = facts.settings;
  const bool failed =
      std::any_of(found.begin(), found.end(), [](const Diagnosis& d) { return d.failure; });
  if (!failed && settings.launch_count && progress.kernels_profiled < *settings.launch_count &&
      !settings.disable_profiler_start_stop && progress.processes_connected > 0) {
    found.push_back({"fewer_kernels_than_requested", false,
                     fmt::format("ncu profiled {} of the {} launches asked for: the application "
                                 "ended first, or stopped the profiler (cudaProfilerStop)",
                                 progress.kernels_profiled, *settings.launch_count),
                     "add --disable-profiler-start-stop so the application's start/stop calls "
                     "cannot end profiling"});
  }
  // ncu replays one kernel at a time and holds the other processes meanwhile: an NCCL collective
  // waits for peers that never arrive. Recorded on two H200s (tp2_nccl_hang): a warning about
  // the launch taking long, "Failed to profile ncclDevKernel_…", then a hang until killed.
  if (RE2::PartialMatch(out, "(?:Profiling|Failed to profile) \"[^\"]*nccl") &&
      (contains(out, "Launching the workload is taking more time than expected") ||
       RE2::PartialMatch(out, "Failed to profile \"[^\"]*nccl"))) {
    // ncu 2026.1 lists a multi-process communicator for exactly this (ncu_versions.h): offered
    // first where the ncu that ran has it, named as what a newer one does otherwise.
    const NcuFeatureFact& communicator = ncu_feature_fact(NcuFeature::kCommunicator);
    std::string next =
        ncu_has(run.ncu_version, NcuFeature::kCommunicator)
            ? fmt::format(
                  "this ncu ({}) replays collectives with their peers: kprof capture --children "
                  "--communicator shmem -k nccl -- LAUNCHER … (one ncu over the ranks of one "
                  "process tree, kernel replay), or one ncu per rank with --communicator tcp "
                  "--communicator-peers N --lockstep; otherwise leave NCCL kernels out "
                  "(--children does unless --include-collectives)",
                  run.ncu_version->text())
            : fmt::format(
                  "leave NCCL kernels out (kprof capture --children does unless "
                  "--include-collectives; or a -k that does not match nccl), profile one rank "
                  "only (run the others without ncu), or --replay-mode application; ncu {} and "
                  "newer replay collectives with their peers (kprof capture --communicator "
                  "shmem|tcp)",
                  communicator.since.text());
    found.push_back(
        {"collective_replay_hang", true,
         "ncu replayed an NCCL collective kernel while the other ranks were held: the collective "
         "waits for its peers, and the capture hangs",
         std::move(next)});
  }
  // ncu prints this inside a progress line when the device memory a replay must save does not
  // fit beside what the process holds. Measured on the H200 (bench/capture-cost.sh): 33-41 s
  // per kernel with 100 GB resident against 1.3-3.7 s with 5-40 GB, for any preset.
  if (contains(out, "Backing up device memory in system memory")) {
    found.push_back(
        {"memory_backed_up_to_host", false,
         "ncu saved the device memory for kernel replay in system memory (the process holds more "
         "than the GPU has free beside it): each profiled kernel takes tens of seconds (H200, 100 "
         "GB resident: 33-41 s per kernel, against 1-4 s with 5-40 GB)",
         "profile fewer kernels (-k, --launch-count), hold less device memory while capturing "
         "(e.g. vLLM --gpu-memory-utilization, SGLang --mem-fraction-static, a smaller batch), or "
         "--replay-mode application (no save/restore; the program runs once per pass and must "
         "repeat the same kernels)"});
  }
  if (RE2::PartialMatch(out, "Failed to save (?:memory for replay|context state)")) {
    found.push_back(
        {"replay_memory_save_failed", true,
         "ncu could not save the device memory a kernel replay needs (ContextSaveFailed: too "
         "much memory resident, or memory it cannot copy such as NCCL's NVLS/IPC buffers)",
         "use --replay-mode application with the fewest metrics (--preset basic or --metrics), "
         "hold less device memory while capturing, or for NCCL kernels set NCCL_NVLS_ENABLE=0"});
  }
  if (settings.clock_control.empty() && !has_option(run.argv, "--clock-control") &&
      run.argv.size() > 1) {
    found.push_back({"clock_control_default", false,
                     "--clock-control was not given: ncu 2025.x locks the GPU clocks to base "
                     "frequency by default, so durations differ from production",
                     "pass --clock-control none (leave clocks alone) or base, explicitly"});
  }
}

// A non-zero exit no rule above explains is a failure of its own.
void exit_status_rules(RunFacts& facts, std::vector<Diagnosis>& found) {
  const NcuRun& run = facts.run;
  const bool failed =
      std::any_of(found.begin(), found.end(), [](const Diagnosis& d) { return d.failure; });
  if (run.exit_code != 0 && !run.stopped_by_kprof && !failed) {
    found.push_back(unexplained_exit(run));
  }
}

}  // namespace

std::vector<Diagnosis> diagnose(const NcuRun& run) {
  RunFacts facts{run, run.output, parse_progress(run.output), {}, {}, {}};
  std::string command = "ncu";
  for (size_t i = 1; i < run.argv.size(); ++i) command += " " + run.argv[i];
  facts.settings = importers::settings_from_command_line(command);
  facts.app = facts.settings.application.empty()
                  ? ""
                  : std::string(path_basename(facts.settings.application.front()));
  // In this order: a later family reads what an earlier one found (the refused injection
  // explains the application's failure; a warning is given only when nothing failed).
  std::vector<Diagnosis> found;
  for (auto rules : {option_rules, permission_rules, profiler_library_rules, scope_rules,
                     nothing_profiled_rules, warning_rules, exit_status_rules}) {
    rules(facts, found);
  }
  return found;
}

}  // namespace kprof::capture
