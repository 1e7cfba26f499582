// kprof diff BASELINE CANDIDATE: per-kernel changes between two captures, and an exit code for CI.
#include <fmt/format.h>

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>

#include "analysis/analysis_tables.h"
#include "analysis/capture_diff.h"
#include "cli/command.h"
#include "cli/selection.h"
#include "common/text.h"
#include "render/report_json.h"
#include "render/table.h"
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

std::string signed_pct(const std::optional<double>& value) {
  return value ? fmt::format("{:+.1f}", *value) : "—";
}

// A gate that compared nothing must not pass: say what each side holds, so that a wrong file or
// a renamed kernel shows at once.
std::string nothing_in_common(const DiffCommandOptions& options,
                              const analysis::CaptureDiff& diff) {
  auto side = [&](analysis::Change only, const std::string& what) {
    std::vector<std::string> names;
    for (const auto& d : diff.kernels) {
      if (d.change == only && std::find(names.begin(), names.end(), d.name) == names.end()) {
        names.push_back(d.name);
      }
    }
    std::sort(names.begin(), names.end());
    std::string shown;
    for (size_t i = 0; i < names.size() && i < 3; ++i) {
      shown += (i ? ", " : "") + render::ellipsize(names[i], 60);
    }
    if (names.size() > 3) shown += fmt::format(", … ({} names)", names.size());
    return fmt::format("{} has {}", what, names.empty() ? "no kernel" : shown);
  };
  std::string baseline = options.db_path.empty() ? options.baseline : "run " + options.baseline;
  std::string candidate = options.db_path.empty() ? options.candidate : "run " + options.candidate;
  return fmt::format(
      "nothing in common: no kernel of {} has the same name, grid and block in {}, so nothing "
      "was compared; {}; {}",
      baseline, candidate, side(analysis::Change::kOnlyInBaseline, baseline),
      side(analysis::Change::kOnlyInCandidate, candidate));
}

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
  if (diff.in_both == 0) throw NothingSelected(nothing_in_common(options, diff));
  ExitCode code = diff.regressions > 0 && !options.no_fail ? ExitCode::kRegression : ExitCode::kOk;
  if (options.json) {
    nlohmann::json kernels = nlohmann::json::array();
    for (const auto& d : diff.kernels) {
      kernels.push_back(
          {{"name", d.name},
           {"grid", {d.grid.x, d.grid.y, d.grid.z}},
           {"block", {d.block.x, d.block.y, d.block.z}},
           {"change", analysis::change_name(d.change)},
           {"baseline_launches", d.baseline_launches},
           {"candidate_launches", d.candidate_launches},
           {"baseline_duration_ns", render::optional_json(d.baseline_ns)},
           {"candidate_duration_ns", render::optional_json(d.candidate_ns)},
           {"change_pct", render::optional_json(d.change_pct)},
           {"noise_pct", render::optional_json(d.noise_pct)},
           {"threshold_pct", d.threshold_pct},
           {"baseline_verdict", d.baseline_verdict},
           {"candidate_verdict", d.candidate_verdict},
           {"baseline_sm_throughput_pct", render::optional_json(d.baseline_sm_pct)},
           {"candidate_sm_throughput_pct", render::optional_json(d.candidate_sm_pct)},
           {"baseline_memory_throughput_pct", render::optional_json(d.baseline_memory_pct)},
           {"candidate_memory_throughput_pct", render::optional_json(d.candidate_memory_pct)},
           {"baseline_sm_occupancy", render::optional_json(d.baseline_occupancy)},
           {"candidate_sm_occupancy", render::optional_json(d.candidate_occupancy)}});
    }
    output.stdout_text =
        nlohmann::json{
            {"schema", "kprof.diff/1"},
            {"tool", {{"name", "kprof"}, {"version", KPROF_VERSION}, {"argv", output.argv}}},
            {"baseline", options.baseline},
            {"candidate", options.candidate},
            {"threshold_pct", options.diff.threshold_pct},
            {"noise_factor", options.diff.noise_factor},
            {"regressions", diff.regressions},
            {"improvements", diff.improvements},
            {"kernels", kernels}}
            .dump(1) +
        "\n";
    return code;
  }
  using render::TextTable;
  TextTable table({{"kernel"},
                   {"grid"},
                   {"block"},
                   {"n", TextTable::Align::kRight},
                   {"base us", TextTable::Align::kRight},
                   {"cand us", TextTable::Align::kRight},
                   {"Δ %", TextTable::Align::kRight},
                   {"noise %", TextTable::Align::kRight},
                   {"judged at %", TextTable::Align::kRight},
                   {"verdict"},
                   {"change"}});
  for (const auto& d : diff.kernels) {
    std::string verdict =
        d.baseline_verdict == d.candidate_verdict || d.candidate_verdict.empty() ||
                d.baseline_verdict.empty()
            ? (d.candidate_verdict.empty() ? d.baseline_verdict : d.candidate_verdict)
            : d.baseline_verdict + " → " + d.candidate_verdict;
    table.add_row(
        {render::ellipsize(d.name, options.name_width), d.grid.to_string(), d.block.to_string(),
         fmt::format("{}/{}", d.baseline_launches, d.candidate_launches),
         d.baseline_ns ? format_number(*d.baseline_ns / 1000) : "—",
         d.candidate_ns ? format_number(*d.candidate_ns / 1000) : "—", signed_pct(d.change_pct),
         d.noise_pct ? fmt::format("{:.1f}", *d.noise_pct) : "—",
         fmt::format("{:.1f}", d.threshold_pct), verdict, analysis::change_name(d.change)});
  }
  std::string out = fmt::format("{} → {}: {} kernel groups, {} regression{}, {} improvement{}\n",
                                options.baseline, options.candidate, diff.kernels.size(),
                                diff.regressions, diff.regressions == 1 ? "" : "s",
                                diff.improvements, diff.improvements == 1 ? "" : "s");
  out += table.to_string();
  out += fmt::format(
      "A kernel (same name, grid and block) regresses when its median duration grows by more than "
      "{}% or than {}× the noise its repeated launches show, whichever is larger.\n",
      format_number(options.diff.threshold_pct), format_number(options.diff.noise_factor));
  output.stdout_text = std::move(out);
  if (code == ExitCode::kRegression) {
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
