// kprof trace [options] -- CMD...: runs a program under kprof's own CUPTI tracer, lists the
// per-process trace files it wrote and what the tracer dropped, and ranks each trace.
#include <fmt/format.h>

#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <memory>

#include "capture/tracer_run.h"
#include "cli/capture_support.h"
#include "cli/command.h"
#include "common/text.h"
#include "pipeline/traces.h"

namespace kprof::cli {
namespace {

namespace fs = std::filesystem;

struct TraceOptions {
  std::string output;
  std::string start = "now";
  std::optional<double> delay_s, duration_s;
  std::string control;
  std::optional<std::uint64_t> max_events;
  bool no_api = false;
  std::vector<std::string> env;
  std::string tracer_lib;
  double timeout_s = 0;
  bool no_rank = false;
  size_t top = 10;
  size_t name_width = 70;
  std::vector<std::string> target;
};

// Without a trailing '/': the tracer joins folder and name with one, and the listing matches
// its lines by path.
std::string absolute_path(const std::string& path) {
  fs::path normal = fs::absolute(path).lexically_normal();
  if (!normal.has_filename() && normal.has_parent_path()) normal = normal.parent_path();
  return normal.string();
}

// The folder the tracer writes into: made when absent, reused when it is a folder.
void prepare_output_dir(const std::string& dir) {
  std::error_code error;
  fs::file_status status = fs::symlink_status(dir, error);
  if (fs::exists(status)) {
    if (!fs::is_directory(fs::status(dir, error))) {
      throw InputError(ExitCode::kInputUnreadable, dir, InputPosition::none(),
                       "exists and is not a folder (the traces need a folder)");
    }
    return;
  }
  if (!fs::create_directories(dir, error) || error) {
    throw InputError(ExitCode::kOutputUnwritable, dir, InputPosition::none(),
                     fmt::format("cannot create the trace folder: {}", error.message()));
  }
}

// libcupti.so.13 as the tracer's loader would look for it: LD_LIBRARY_PATH (the program's, --env
// included), the library's own folder, then the loader's cache.
capture::CuptiProbe probe_for(const std::string& tracer_library,
                              const std::vector<std::pair<std::string, std::string>>& env) {
  const char* ours = std::getenv("LD_LIBRARY_PATH");
  std::string ld_library_path = ours ? ours : "";
  for (const auto& [name, value] : env) {
    if (name == "LD_LIBRARY_PATH") ld_library_path = value;
  }
  std::vector<std::string> dirs = capture::library_path_dirs(ld_library_path);
  dirs.push_back(fs::path(tracer_library).parent_path().string());
  return capture::probe_cupti(dirs);
}

ExitCode run_trace(const TraceOptions& options, Output& output) {
  // The program's output is handed on to stderr while it runs; a closed reader must not kill
  // kprof and leave the program running without its process group's stop.
  std::signal(SIGPIPE, SIG_IGN);
  // What the command line gets wrong first (exit 2), then the tracer and CUPTI (exit 9), and
  // only then is anything created or run.
  capture::TraceSpec spec;
  spec.env = parse_env(options.env);
  spec.output_dir = absolute_path(
      options.output.empty() ? "kprof-trace-" + utc_time("%Y%m%d-%H%M%S") : options.output);
  spec.start =
      options.start == "on-control" ? capture::TraceStart::kOnControl : capture::TraceStart::kNow;
  spec.delay_s = options.delay_s;
  spec.duration_s = options.duration_s;
  if (!options.control.empty()) {
    spec.control_path = absolute_path(options.control);
  } else if (spec.start == capture::TraceStart::kOnControl) {
    spec.control_path = spec.output_dir + "/control";
  }
  spec.max_events = options.max_events;
  spec.api_records = !options.no_api;
  spec.target = options.target;
  spec.tracer_library = "libkprof_tracer.so";  // placeholder: checked for refusal only
  try {
    capture::tracer_environment(spec);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  capture::TracerLocation tracer =
      capture::locate_tracer(options.tracer_lib, capture::own_executable());
  if (tracer.path.empty()) {
    throw NotReady(fmt::format(
        "libkprof_tracer.so not found (looked at {}); build it where CUPTI 13 is installed "
        "(build/src/tracer/), install it beside kprof, or pass --tracer-lib PATH",
        tracer.searched));
  }
  spec.tracer_library = tracer.path;
  capture::CuptiProbe cupti = probe_for(tracer.path, spec.env);
  if (!cupti.version) {
    throw NotReady(fmt::format(
        "the tracer needs {} and kprof cannot load it ({}; looked at {}): put CUDA 13's "
        "libcupti beside {}, or name its folder with --env LD_LIBRARY_PATH=DIR (a PyTorch "
        "install has one under nvidia/cuda_cupti/lib) — `kprof doctor` checks it",
        capture::kCuptiSoname, cupti.error, cupti.searched, tracer.path));
  }
  if (*cupti.version < capture::kCuptiMinimumVersion) {
    throw NotReady(fmt::format("{} is CUPTI {}, older than the 13.0 the tracer needs", cupti.path,
                               capture::cupti_version_text(cupti.version)));
  }
  prepare_output_dir(spec.output_dir);

  note(fmt::format("tracing with {} (CUPTI {} at {}) into {}", tracer.path,
                   capture::cupti_version_text(cupti.version), cupti.path, spec.output_dir));
  if (spec.start == capture::TraceStart::kOnControl) {
    note(
        fmt::format("no window until the control file says so: `echo start > {0}` opens one, "
                    "`echo stop > {0}` closes it",
                    spec.control_path));
  }
  note("running: " + quoted_command(spec.target));
  std::optional<std::chrono::milliseconds> timeout;
  if (options.timeout_s > 0) {
    timeout = std::chrono::milliseconds(static_cast<long long>(options.timeout_s * 1000));
  }
  // The program's output goes to stderr as it comes: stdout carries kprof's result alone.
  capture::TraceRun run = capture::run_traced(spec, timeout, [](const std::string& line, bool) {
    std::fprintf(stderr, "%s\n", line.c_str());
    std::fflush(stderr);
  });

  std::string result;
  std::string& notes = output.stderr_text;
  const kprof::ChildResult& child = run.child;
  if (!child.started) {
    notes +=
        fmt::format("kprof: {} could not be started: {}\n", spec.target.front(), child.start_error);
    return ExitCode::kCaptureFailed;
  }
  result += fmt::format("{} trace file{} in {}:\n", run.trace_files.size(),
                        run.trace_files.size() == 1 ? "" : "s", spec.output_dir);
  for (const std::string& file : run.trace_files) {
    const capture::TraceWindowLine* window = nullptr;
    for (const auto& w : run.windows) {
      if (w.path == file) window = &w;
    }
    if (!window) {
      result += fmt::format("  {}\n", file);
      continue;
    }
    result += fmt::format("  {}  pid {} window {}, {} events, stopped by {}{}\n", file, window->pid,
                          window->window, window->events, window->stop_reason,
                          window->dropped.empty() ? "" : "; DROPPED: " + window->dropped);
  }
  for (const auto& window : run.windows) {
    if (!window.dropped.empty()) {
      notes += fmt::format("kprof: warning: the tracer dropped records in pid {} window {}: {}\n",
                           window.pid, window.window, window.dropped);
    }
  }
  for (const std::string& file : run.partial_files) {
    notes += fmt::format(
        "kprof: warning: {} was never finished (the process was killed before its window "
        "closed)\n",
        file);
  }
  if (!options.no_rank) {
    for (const std::string& file : run.trace_files) {
      try {
        pipeline::RankText ranked =
            pipeline::rank_trace_text(file, output.argv, options.top, options.name_width);
        result += "\n" + ranked.table;
        notes += ranked.warnings;
      } catch (const InputError& error) {
        notes += fmt::format("kprof: {}: not ranked: {}\n", file, error.message());
      }
    }
  }
  output.stdout_text = result;

  std::string how = fmt::format("in {:.1f} s", child.elapsed.count() / 1000.0);
  if (child.timed_out || child.interrupted) {
    notes += fmt::format(
        "kprof: trace incomplete {}: {}; the program and its process group were stopped "
        "(SIGINT, SIGKILL after 5 s)\n",
        how,
        child.timed_out ? fmt::format("ran past --timeout {} s", options.timeout_s)
                        : "interrupted");
    return ExitCode::kIncomplete;
  }
  if (run.trace_files.empty()) {
    notes += fmt::format(
        "kprof: nothing traced {}: the program exited {} and no trace file was written{}\n", how,
        child.exit_code,
        run.tracer_lines.empty() ? " (the tracer said nothing: did the program use CUDA?)"
                                 : " (the tracer's lines above say why)");
    return ExitCode::kCaptureFailed;
  }
  if (child.exit_code != 0) {
    notes +=
        fmt::format("kprof: the traced program failed {}: exit status {}\n", how, child.exit_code);
    return ExitCode::kCaptureFailed;
  }
  notes += fmt::format("kprof: traced {}: {} file{}\n", how, run.trace_files.size(),
                       run.trace_files.size() == 1 ? "" : "s");
  return ExitCode::kOk;
}

}  // namespace

void define_trace(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<TraceOptions>();
  CLI::App* command = parent.add_subcommand(
      "trace", "Run a program under kprof's own CUPTI tracer; list and rank its traces");
  command->footer(
      "Runs the command with libkprof_tracer.so injected (CUDA_INJECTION64_PATH for kernels,\n"
      "copies and launch calls, NVTX_INJECTION64_PATH for ranges), argv only, in its own process\n"
      "group: --timeout or Ctrl-C stops the program and everything it started. Each process\n"
      "writes one gzip'd Chrome trace per window (kprof-trace.HOST.PID.WINDOW.json.gz) that\n"
      "kprof rank, budget and report --trace (and Perfetto) read like a PyTorch profiler trace.\n"
      "At the end kprof lists the files, says what the tracer dropped (never silent), and ranks\n"
      "each file's kernels (--no-rank: only the list). The program's own output goes to stderr;\n"
      "stdout carries kprof's result.\n\n"
      "When to use it: trace gives the wall-clock timeline (which kernels carry the time, step\n"
      "budgets); capture gives counters (why one kernel is slow) and replays each kernel many\n"
      "times; a PyTorch profiler trace adds Python and operator context. Cost on an H200 eager\n"
      "decode step (~200 launches, 2.5 ms): tracer 1.23x, --no-api 1.19x, inactive 1.05x,\n"
      "PyTorch profiler (CUDA only) 1.59x; CUPTI's kernel records alone cost 1.14x\n"
      "(docs/tracer.md).\n\n"
      "Windows: from the start (default), after --delay, for --duration; or --start on-control,\n"
      "inactive (nothing recorded) until `echo start > FILE` and closed by `echo stop > FILE` "
      "(FILE is\n"
      "--control, default OUTPUT/control); --max-events caps a window. The library is looked for\n"
      "beside kprof (., ../lib, ../lib/kprof), in the build tree (src/tracer/), or given with\n"
      "--tracer-lib; it needs libcupti.so.13 (CUDA 13): LD_LIBRARY_PATH, its own folder, or the\n"
      "system's. Other KPROF_TRACE_* variables (MEMORY_MB, FLOWS, BASE_NS, DUMP_RAW) pass\n"
      "through from the environment (docs/tracer.md).\n\n"
      "Exit codes: 0 traced; 7 the program failed or could not start, or no trace was written\n"
      "(the tracer's `kprof-tracer:` lines say why); 8 timed out or interrupted (what was\n"
      "written is still listed); 9 the tracer library or libcupti.so.13 not found.\n\n"
      "Examples:\n"
      "  kprof trace -- python3 decode.py --steps 50\n"
      "  kprof trace --delay 30 --duration 5 -o traces -- python3 -m "
      "vllm.entrypoints.openai.api_server …\n"
      "  kprof trace --start on-control -o traces -- ./server &   # later: echo start > "
      "traces/control\n"
      "  kprof budget traces/kprof-trace.HOST.PID.1.json.gz --step '^decode$'");
  command->add_option("-o,--output", options->output,
                      "Folder of the traces, made if absent (default kprof-trace-UTCTIME)");
  command->add_option("--start", options->start, "now (default) or on-control")
      ->check(CLI::IsMember({"now", "on-control"}))
      ->capture_default_str();
  command->add_option("--delay", options->delay_s, "Seconds before the first window (with now)");
  command->add_option("--duration", options->duration_s,
                      "Each window closes after this many seconds (default: at stop or exit)");
  command->add_option("--control", options->control,
                      "Control file the tracer polls: `start` opens a window, `stop` closes it");
  command->add_option("--max-events", options->max_events,
                      "Events per window; reaching it closes the window (tracer default 2000000)");
  command->add_flag("--no-api", options->no_api,
                    "No launch/copy call records (host side): kernels, copies and NVTX ranges "
                    "only, for the lowest overhead; budget then has no launch gaps");
  command->add_option("--env", options->env, "NAME=VALUE for the program (repeatable)");
  command->add_option("--tracer-lib", options->tracer_lib,
                      "libkprof_tracer.so to inject (default: beside kprof or in its build tree)");
  command->add_option("--timeout", options->timeout_s,
                      "Stop the program and its process group after this many seconds (0: none)");
  command->add_flag("--no-rank", options->no_rank, "List the trace files without ranking them");
  command->add_option("-n,--top", options->top, "Kernels listed per trace")->capture_default_str();
  command->add_option("--name-width", options->name_width, "Kernel name column width (at least 8)")
      ->check(CLI::Range(8, 100000))
      ->capture_default_str();
  command->add_option("COMMAND", options->target, "The program and its arguments, after --")
      ->required();
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_trace(*options, output); };
  });
}

}  // namespace kprof::cli
