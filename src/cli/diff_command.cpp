// kprof diff BASELINE CANDIDATE: per-kernel changes between two captures, and an exit code for CI.
#include <fmt/format.h>

#include <memory>

#include "analysis/analysis_tables.h"
#include "analysis/capture_diff.h"
#include "cli/command.h"
#include "cli/selection.h"
#include "common/text.h"
#include "render/diff_render.h"
#include "render/report_json.h"
#include "store/findings_db.h"

namespace kprof::cli {
namespace {

struct DiffCommandOptions {
  std::string baseline, candidate;
  std::string db_path;  // with --db, BASELINE and CANDIDATE are run ids
  analysis::DiffOptions diff;
  bool json = false;
  bool no_fail = false;
  size_t name_width = 48;
};

ExitCode run_diff(const DiffCommandOptions& options, Output& output) {
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
  ExitCode code = diff.regressions > 0 && !options.no_fail ? ExitCode::kRegression : ExitCode::kOk;
  output.stdout_text =
      options.json ? render::json_text(render::diff_json(diff, options.baseline, options.candidate,
                                                         options.diff, output.argv))
                   : render::diff_text(diff, options.baseline, options.candidate, options.diff,
                                       options.name_width);
  if (code == ExitCode::kRegression && !options.json) {
    output.stderr_text = fmt::format("kprof: {} kernel{} regressed (exit {})\n", diff.regressions,
                                     diff.regressions == 1 ? "" : "s", static_cast<int>(code));
  }
  return code;
}

}  // namespace

void define_diff(CLI::App& parent, Runner& runner) {
  auto options = std::make_shared<DiffCommandOptions>();
  CLI::App* command = parent.add_subcommand(
      "diff", "Per-kernel changes between two captures; exits 6 on a regression (for CI)");
  command->footer(
      "Matches the kernels of two captures by name and launch configuration and compares median\n"
      "durations, SM and memory throughput and the verdict. A kernel regresses when it slows by\n"
      "more than --threshold percent, or by more than --noise-factor times the run-to-run noise\n"
      "its repeated launches show (capture with --launch-count covering several launches of each\n"
      "kernel to measure it). Exit 6 when something regressed, 5 when the captures have no\n"
      "kernel in common (nothing was compared: a wrong file, renamed kernels), 0 otherwise.\n\n"
      "Examples:\n"
      "  kprof diff before.ncu-rep after.ncu-rep\n"
      "  kprof diff before.ncu-rep after.ncu-rep --threshold 3 --json > diff.json\n"
      "  kprof diff --db kprof-findings.db 12 17     # two imported runs");
  command->add_option("BASELINE", options->baseline, "Report before the change")->required();
  command->add_option("CANDIDATE", options->candidate, "Report after the change")->required();
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
  command->add_option("--db", options->db_path,
                      "Compare two runs of a findings database (kprof db): BASELINE and CANDIDATE "
                      "are run ids");
  command->add_flag("--json", options->json, "Print JSON (schema kprof.diff/1)");
  command->add_flag("--no-fail", options->no_fail, "Exit 0 even when something regressed");
  command->add_option("--name-width", options->name_width, "Kernel name column width")
      ->capture_default_str();
  command->callback([&runner, options] {
    runner = [options](Output& output) { return run_diff(*options, output); };
  });
}

}  // namespace kprof::cli
