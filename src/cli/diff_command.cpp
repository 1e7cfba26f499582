// kprof diff BASELINE CANDIDATE: per-kernel changes between two captures, or per kernel, stage
// and step between two traces, and an exit code for CI.
#include <fmt/format.h>

#include <memory>

#include "analysis/analysis_tables.h"
#include "analysis/capture_diff.h"
#include "cli/command.h"
#include "cli/selection.h"
#include "common/text.h"
#include "importers/common/read_trace.h"
#include "render/diff_render.h"
#include "render/report_json.h"
#include "render/trace_diff_render.h"
#include "store/findings_db.h"
#include "timeline/trace_diff.h"

namespace kprof::cli {
namespace {

struct DiffCommandOptions {
  std::string baseline, candidate;
  std::string db_path;  // with --db, BASELINE and CANDIDATE are run ids
  analysis::DiffOptions diff;
  bool json = false;
  bool no_fail = false;
  size_t name_width = 48;
  double alpha = 0.01;     // traces: significance level of Welch's t-test
  std::string step_regex;  // traces: as kprof budget --step
  size_t top = 20;         // traces: kernels listed
};

timeline::TraceProfile read_profile(const std::string& path, const analysis::StageTable& stages,
                                    const std::string& step_regex) {
  timeline::TraceProfileBuilder builder(stages);
  importers::read_trace(path, builder);
  try {
    timeline::TraceProfile profile = builder.finish(step_regex);
    if (profile.gpu_events == 0) {
      throw InputError(ExitCode::kInputInvalid, path, InputPosition::none(),
                       "no GPU events (kernel, gpu_memcpy, gpu_memset): was the profiler run "
                       "with CUDA activities?");
    }
    return profile;
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
}

ExitCode run_trace_diff(const DiffCommandOptions& options, Output& output) {
  analysis::StageTable stages = analysis::load_stage_table();
  timeline::TraceProfile before = read_profile(options.baseline, stages, options.step_regex);
  timeline::TraceProfile after = read_profile(options.candidate, stages, options.step_regex);
  timeline::TraceDiffOptions diff_options{options.alpha, options.diff.threshold_pct,
                                          options.step_regex};
  timeline::TraceDiff diff = timeline::diff_traces(before, after, diff_options);
  ExitCode code = diff.regressed() && !options.no_fail ? ExitCode::kRegression : ExitCode::kOk;
  output.stdout_text =
      options.json ? render::json_text(render::trace_diff_json(
                         diff, options.baseline, options.candidate, diff_options, output.argv))
                   : render::trace_diff_text(diff, options.baseline, options.candidate,
                                             diff_options, options.top, options.name_width);
  if (code == ExitCode::kRegression && !options.json) {
    output.stderr_text = fmt::format("kprof: the step regressed by {:.1f}% (exit {})\n",
                                     *diff.step.change_pct, static_cast<int>(code));
  }
  return code;
}

ExitCode run_diff(const DiffCommandOptions& options, Output& output) {
  if (options.db_path.empty()) {
    bool before_trace = importers::looks_like_trace_file(options.baseline);
    bool after_trace = importers::looks_like_trace_file(options.candidate);
    if (before_trace && after_trace) return run_trace_diff(options, output);
    if (before_trace != after_trace) {
      throw UsageError(
          fmt::format("{} is a {} and {} a {}: diff compares two captures or two traces",
                      options.baseline, before_trace ? "trace" : "capture", options.candidate,
                      after_trace ? "trace" : "capture"));
    }
  }
  std::vector<model::Report> reports;
  if (options.db_path.empty()) {
    reports = load_reports({options.baseline, options.candidate}, for_analysis());
  } else {
    store::FindingsDb db(options.db_path);
    for (const std::string& run : {options.baseline, options.candidate}) {
      auto id = parse_uint(run);
      if (!id)
        throw UsageError("with --db, BASELINE and CANDIDATE are run ids, not \"" + run + "\"");
      reports.push_back(db.load_run(static_cast<std::int64_t>(*id)));
    }
  }
  analysis::AnalysisTables tables = analysis::load_analysis_tables();
  analysis::AnalysisConfig config = tables.config();
  analysis::CaptureDiff diff =
      analysis::diff_captures(reports[0], reports[1], options.diff, config);
  if (diff.in_both == 0) {
    throw NothingSelected(render::nothing_in_common(
        diff, options.db_path.empty() ? options.baseline : "run " + options.baseline,
        options.db_path.empty() ? options.candidate : "run " + options.candidate));
  }
  ExitCode code = diff.regressed() && !options.no_fail ? ExitCode::kRegression : ExitCode::kOk;
  output.stdout_text =
      options.json ? render::json_text(render::diff_json(diff, options.baseline, options.candidate,
                                                         options.diff, output.argv))
                   : render::diff_text(diff, options.baseline, options.candidate, options.diff,
                                       options.name_width);
  if (code == ExitCode::kRegression && !options.json) {
    output.stderr_text =
        diff.regressions > 0
            ? fmt::format("kprof: {} kernel{} regressed (exit {})\n", diff.regressions,
                          diff.regressions == 1 ? "" : "s", static_cast<int>(code))
            : fmt::format("kprof: the time-weighted total regressed by {:.1f}% (exit {})\n",
                          *diff.overall.change_pct, static_cast<int>(code));
  }
  return code;
}

}  // namespace

void define_diff(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<DiffCommandOptions>();
  CLI::App* command = parent.add_subcommand(
      "diff",
      "Per-kernel changes between two captures, or per kernel, stage and step between two "
      "traces; exits 6 on a regression (for CI)");
  command->footer(
      "Matches the kernels of two captures by name and launch configuration and compares median\n"
      "durations, SM and memory throughput and the verdict. A kernel regresses when it slows by\n"
      "more than --threshold percent, or by more than --noise-factor times the run-to-run noise\n"
      "its repeated launches show (capture with --launch-count covering several launches of each\n"
      "kernel to measure it). A kernel launched once on a side has no noise estimate: it must\n"
      "also move by more than --single-sample-floor microseconds, else it is reported as\n"
      "\"not enough samples to judge\" and does not fail the gate. The time-weighted total (each\n"
      "kernel's median times its baseline launches, summed over the kernels in both) is judged\n"
      "against --threshold too, and must also move by more than --single-sample-floor.\n"
      "Exit 6 when a kernel or the time-weighted total regressed, 5 when\n"
      "the captures have no kernel in common (nothing was compared: a wrong file, renamed\n"
      "kernels), 0 otherwise.\n\n"
      "Two traces (PyTorch/Chrome trace JSON or Nsight Systems SQLite exports, told apart from\n"
      "captures by content) are compared per kernel name and per stage (launch counts, totals,\n"
      "medians) and per step (steps as kprof budget finds them, --step; a step's time is the\n"
      "GPU span of its work). A kernel, stage or the step changed when its mean moved by more\n"
      "than --threshold percent and Welch's t-test over its repeated launches (steps) gives\n"
      "p < --alpha; with fewer than two on a side it is \"not enough samples to judge\". Exit 6\n"
      "when the step regressed (JSON kprof.trace-diff/1).\n\n"
      "Examples:\n"
      "  kprof diff before.ncu-rep after.ncu-rep\n"
      "  kprof diff eager.json.gz graph.json.gz   # two traces\n"
      "  kprof diff before.ncu-rep after.ncu-rep --threshold 3 --json > diff.json\n"
      "  kprof diff --db kprof-findings.db 12 17     # two imported runs");
  command->add_option("BASELINE", options->baseline, "Capture (or trace) before the change")
      ->required();
  command->add_option("CANDIDATE", options->candidate, "Capture (or trace) after the change")
      ->required();
  command
      ->add_option("--threshold", options->diff.threshold_pct,
                   "Smallest duration change (%) that counts")
      ->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str();
  command
      ->add_option("--noise-factor", options->diff.noise_factor,
                   "A change must also exceed this many times the measured noise")
      ->check(CLI::Range(0.0, 100.0))
      ->capture_default_str();
  command
      ->add_option("--single-sample-floor", options->diff.single_sample_floor_us,
                   "A kernel launched once on a side must also change by more than this many "
                   "microseconds")
      ->check(CLI::Range(0.0, 1e9))
      ->capture_default_str();
  command->add_option("--db", options->db_path,
                      "Compare two runs of a findings database (kprof db): BASELINE and CANDIDATE "
                      "are run ids");
  command
      ->add_option("--alpha", options->alpha,
                   "Traces: significance level of Welch's t-test (two-sided)")
      ->check(CLI::Range(1e-9, 0.5))
      ->capture_default_str();
  command->add_option("--step", options->step_regex,
                      "Traces: regex over annotation names that delimit steps (as kprof budget)");
  command->add_option("-n,--top", options->top, "Traces: kernels to list")->capture_default_str();
  command->add_flag("--json", options->json,
                    "Print JSON (schema kprof.diff/1; kprof.trace-diff/1 for traces)");
  command->add_flag("--no-fail", options->no_fail, "Exit 0 even when something regressed");
  command->add_option("--name-width", options->name_width, "Kernel name column width")
      ->capture_default_str();
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_diff(*options, output); };
  });
}

}  // namespace kprof::cli
