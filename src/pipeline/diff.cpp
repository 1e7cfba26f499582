#include "pipeline/diff.h"

#include <fmt/format.h>

#include <algorithm>
#include <optional>

#include "analysis/analysis_tables.h"
#include "common/file_bytes.h"
#include "common/text.h"
#include "common/utf8.h"
#include "importers/common/read_trace.h"
#include "pipeline/reports.h"
#include "pipeline/trace_files.h"
#include "render/diff_render.h"
#include "render/report_json.h"
#include "render/trace_diff_render.h"
#include "store/findings_db.h"
#include "timeline/prediction_check.h"
#include "timeline/trace_diff.h"

namespace kprof::pipeline {
namespace {

timeline::TraceProfile read_profile(const std::string& path, const analysis::StageTable& stages,
                                    const std::string& step_regex,
                                    importers::TraceReadStats* stats) {
  timeline::TraceProfileBuilder builder(stages);
  *stats = read_trace_file(path, builder);
  try {
    timeline::TraceProfile profile = builder.finish(step_regex);
    if (profile.gpu_events == 0) {
      throw InputError(ExitCode::kInputInvalid, path, InputPosition::none(),
                       stats->not_a_timeline.empty()
                           ? "no GPU events (kernel, gpu_memcpy, gpu_memset): was the profiler "
                             "run with CUDA activities?"
                           : "no GPU activity kprof can account: " + stats->not_a_timeline);
    }
    return profile;
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
}

// "2 × NVIDIA H200", "NVIDIA A100-SXM4-40GB, Tesla V100": the GPUs a trace names, by kind.
std::string gpu_names(const importers::TraceReadStats& stats) {
  std::vector<std::pair<std::string, int>> kinds;
  for (const auto& device : stats.device_names) {
    const std::string& name = device.second;
    auto found = std::find_if(kinds.begin(), kinds.end(),
                              [&](const auto& kind) { return kind.first == name; });
    if (found == kinds.end())
      kinds.emplace_back(name, 1);
    else
      ++found->second;
  }
  std::string text;
  for (const auto& [name, count] : kinds) {
    if (!text.empty()) text += ", ";
    text += count > 1 ? fmt::format("{} × {}", count, escape_for_terminal(name))
                      : escape_for_terminal(name);
  }
  return text;
}

std::vector<store::PredictionOutcomeRow> outcome_rows(const timeline::PredictionCheck& check,
                                                      const DiffOptions& options) {
  std::vector<store::PredictionOutcomeRow> rows;
  std::string now = utc_time();
  auto row = [&]() {
    store::PredictionOutcomeRow r;
    r.checked_at = now;
    r.prediction = options.predicted_path;
    r.before_trace = options.baseline;
    r.after_trace = options.candidate;
    return r;
  };
  for (const timeline::GroupOutcome& g : check.groups) {
    store::PredictionOutcomeRow r = row();
    r.kernel = g.predicted.kernel;
    r.grid = g.predicted.grid;
    r.block = g.predicted.block;
    r.bound_by = g.predicted.bound_by;
    r.predicted_us_per_step = g.predicted.saving_us_per_step;
    r.before_us_per_step = g.before_us_per_step;
    r.after_us_per_step = g.after_us_per_step;
    r.realised_us_per_step = g.realised_us_per_step();
    r.improved_step_did_not = g.improved_step_did_not;
    rows.push_back(std::move(r));
  }
  store::PredictionOutcomeRow step = row();
  step.kernel = "(step)";
  step.predicted_us_per_step = check.predicted_step_saving_us;
  step.before_us_per_step = check.before_step_us;
  step.after_us_per_step = check.after_step_us;
  step.realised_us_per_step = check.realised_step_saving_us();
  step.improved_step_did_not = check.kernels_improved_step_did_not;
  rows.push_back(std::move(step));
  return rows;
}

ExitCode trace_diff(const DiffOptions& options, const std::vector<std::string>& argv,
                    Answer& output) {
  // The prediction and the database first: a wrong file fails before two traces are read.
  std::optional<timeline::Prediction> prediction;
  if (!options.predicted_path.empty()) {
    prediction = timeline::parse_prediction(options.predicted_path,
                                            read_input_file(options.predicted_path).bytes);
  }
  std::optional<store::FindingsDb> outcomes;
  if (!options.outcomes_db.empty()) {
    if (!prediction) throw UsageError("--outcomes-db stores what --predicted checks: give both");
    outcomes.emplace(options.outcomes_db, store::FindingsDb::Access::kWrite, options.db_schema);
  }
  analysis::StageTable stages = analysis::load_stage_table();
  importers::TraceReadStats before_stats, after_stats;
  timeline::TraceProfile before =
      read_profile(options.baseline, stages, options.step_regex, &before_stats);
  timeline::TraceProfile after =
      read_profile(options.candidate, stages, options.step_regex, &after_stats);
  timeline::TraceDiffOptions diff_options{options.alpha, options.diff.threshold_pct,
                                          options.step_regex};
  timeline::TraceDiff diff = timeline::diff_traces(before, after, diff_options);
  ExitCode code = diff.regressed() && !options.no_fail ? ExitCode::kRegression : ExitCode::kOk;
  std::optional<timeline::PredictionCheck> check;
  // A prediction applies to the trace it was made from: scored against another program's trace
  // it read "882 % of the prediction realised". None of its groups in BEFORE: refused; some
  // missing: said, and no outcome stored.
  bool prediction_matches = true;
  if (prediction) {
    check = timeline::check_prediction(*prediction, before, after, diff);
    std::size_t missing = 0;
    std::string first_missing;
    for (const timeline::GroupOutcome& g : check->groups) {
      if (g.in_before) continue;
      if (missing++ == 0) first_missing = g.predicted.kernel;
    }
    if (!check->groups.empty() && missing == check->groups.size()) {
      throw NothingSelected(fmt::format(
          "--predicted {}: not one of its kernel groups ({}) ran in {}: a prediction applies to "
          "the trace it was made from (give that trace, or a trace of the same program, as "
          "BEFORE)",
          escape_for_terminal(options.predicted_path), check->groups.size(),
          escape_for_terminal(options.baseline)));
    }
    if (missing > 0) {
      prediction_matches = false;
      output.notes += fmt::format(
          "kprof: warning: --predicted {}: {} of its {} kernel groups did not run in {} (first "
          "\"{}\"): it may come from another trace{}\n",
          escape_for_terminal(options.predicted_path), missing, check->groups.size(),
          escape_for_terminal(options.baseline), escape_for_terminal(first_missing),
          outcomes ? "; no outcome stored in --outcomes-db" : "");
    }
  }
  put_answer(
      output, options.json, options.text_too,
      [&] {
        nlohmann::json answer =
            render::trace_diff_json(diff, options.baseline, options.candidate, diff_options, argv);
        if (check) answer["predicted"] = render::prediction_json(*check, *prediction);
        return render::json_text(answer);
      },
      [&] {
        std::string text = render::trace_diff_text(diff, options.baseline, options.candidate,
                                                   diff_options, options.top, options.name_width);
        if (check) {
          text +=
              "\n" + render::prediction_text(*check, *prediction, options.top, options.name_width);
        }
        return text;
      });
  if (outcomes && prediction_matches) {
    std::size_t stored = outcomes->store_prediction_outcomes(outcome_rows(*check, options));
    output.notes += fmt::format("kprof: stored {} outcomes in {}\n", stored,
                                escape_for_terminal(options.outcomes_db));
  }
  // Two traces of different GPUs (HTA's trace-diff sample: an A100 baseline, a V100 test) differ
  // by the hardware as much as by any change; said, not refused, as comparing GPUs is a use.
  std::string gpus_before = gpu_names(before_stats), gpus_after = gpu_names(after_stats);
  if (!gpus_before.empty() && !gpus_after.empty() && gpus_before != gpus_after) {
    output.notes += fmt::format(
        "kprof: warning: the traces ran on different GPUs ({}: {}; {}: {}): their differences "
        "include the hardware's\n",
        options.baseline, gpus_before, options.candidate, gpus_after);
  }
  if (code == ExitCode::kRegression && (!options.json || options.text_too)) {
    output.notes += fmt::format("kprof: the step regressed by {:.1f}% (exit {})\n",
                                *diff.step.change_pct, static_cast<int>(code));
  }
  return code;
}

// "A=B" → {A, B}: exactly one '=' with something on each side.
analysis::DiffOptions::Pair parse_pair(const std::string& text) {
  size_t equals = text.find('=');
  if (equals == std::string::npos || equals == 0 || equals + 1 == text.size() ||
      text.find('=', equals + 1) != std::string::npos) {
    throw UsageError(fmt::format(
        "--pair '{}': expected BASELINE=CANDIDATE, a kernel's name or regex for each side "
        "joined by one '=' (in a regex, write '=' as \\x3d)",
        text));
  }
  return {text.substr(0, equals), text.substr(equals + 1)};
}

}  // namespace

Answer diff(const DiffOptions& options, const std::vector<std::string>& argv) {
  Answer output;
  analysis::DiffOptions capture_options = options.diff;
  for (const std::string& text : options.pairs) capture_options.pairs.push_back(parse_pair(text));
  if (options.no_auto_pair) capture_options.auto_pair = false;
  if (options.db_path.empty()) {
    bool before_trace = looks_like_trace(options.baseline);
    bool after_trace = looks_like_trace(options.candidate);
    if (before_trace && after_trace) {
      if (!options.pairs.empty()) {
        throw UsageError(
            "--pair pairs kernels of two captures; two traces compare kernels by "
            "name");
      }
      output.code = trace_diff(options, argv, output);
      return output;
    }
    if (before_trace != after_trace) {
      throw UsageError(
          fmt::format("{} is a {} and {} a {}: diff compares two captures or two traces",
                      options.baseline, before_trace ? "trace" : "capture", options.candidate,
                      after_trace ? "trace" : "capture"));
    }
  }
  if (!options.predicted_path.empty() || !options.outcomes_db.empty()) {
    throw UsageError(
        "--predicted and --outcomes-db compare two traces (BEFORE AFTER) with a fix list, not "
        "two captures");
  }
  std::vector<model::Report> reports;
  if (options.db_path.empty()) {
    reports = load_reports({options.baseline, options.candidate}, for_analysis());
    output.notes += reading_notes(reports);
  } else {
    store::FindingsDb db(options.db_path, store::FindingsDb::Access::kRead, options.db_schema);
    for (const std::string& run : {options.baseline, options.candidate}) {
      auto id = parse_uint(run);
      if (!id)
        throw UsageError("with --db, BASELINE and CANDIDATE are run ids, not \"" + run + "\"");
      reports.push_back(db.load_run(static_cast<std::int64_t>(*id)));
    }
  }
  analysis::AnalysisTables tables = analysis::load_analysis_tables();
  analysis::AnalysisConfig config = tables.config();
  analysis::CaptureDiff diff;
  try {
    diff = analysis::diff_captures(reports[0], reports[1], capture_options, config);
  } catch (const analysis::PairError& error) {
    if (error.kind == analysis::PairError::Kind::kNoKernel) throw NothingSelected(error.what());
    throw UsageError(error.what());
  }
  std::string baseline_name =
      options.db_path.empty() ? options.baseline : "run " + options.baseline;
  std::string candidate_name =
      options.db_path.empty() ? options.candidate : "run " + options.candidate;
  if (diff.in_both == 0) {
    throw NothingSelected(render::nothing_in_common(diff, baseline_name, candidate_name));
  }
  // A regression is a finding on the kernels compared whatever else was left out: it wins over
  // too little coverage, which is said on its own line as well.
  ExitCode code = ExitCode::kOk;
  if (!options.no_fail && diff.regressed()) {
    code = ExitCode::kRegression;
  } else if (!options.no_fail && !diff.coverage.sufficient()) {
    code = ExitCode::kCoverageLow;
  }
  put_answer(
      output, options.json, options.text_too,
      [&] {
        return render::json_text(
            render::diff_json(diff, options.baseline, options.candidate, capture_options, argv));
      },
      [&] {
        return render::diff_text(diff, options.baseline, options.candidate, capture_options,
                                 options.name_width);
      });
  if (code == ExitCode::kRegression && (!options.json || options.text_too)) {
    output.notes +=
        diff.regressions > 0
            ? fmt::format("kprof: {} kernel{} regressed (exit {})\n", diff.regressions,
                          diff.regressions == 1 ? "" : "s", static_cast<int>(code))
            : fmt::format("kprof: the time-weighted total regressed by {:.1f}% (exit {})\n",
                          *diff.overall.change_pct, static_cast<int>(code));
  }
  // Said in JSON mode too: exit 13 needs its reason on standard error.
  if (!diff.coverage.sufficient()) {
    output.notes += render::coverage_note(diff, baseline_name, candidate_name, code);
  }
  output.code = code;
  return output;
}

}  // namespace kprof::pipeline
