#include "pipeline/traces.h"

#include <fmt/format.h>

#include "analysis/stages.h"
#include "importers/common/read_trace.h"
#include "pipeline/trace_files.h"
#include "render/op_render.h"
#include "render/report_json.h"
#include "render/trace_render.h"
#include "timeline/kernel_ranking.h"
#include "timeline/op_attribution.h"
#include "timeline/rank_comparison.h"
#include "timeline/step_budget.h"

namespace kprof::pipeline {
namespace {

// A trace without GPU work to account: what it is where the reader could tell (a conversion, a
// counter trace), else the question of whether CUDA was recorded.
InputError nothing_to_account(const render::TraceSource& source, const std::string& what) {
  return InputError(
      ExitCode::kInputInvalid, source.path, InputPosition::none(),
      source.stats.not_a_timeline.empty()
          ? what
          : fmt::format("no GPU activity kprof can account: {}", source.stats.not_a_timeline));
}

InputError no_gpu_events(const render::TraceSource& source) {
  return nothing_to_account(source,
                            fmt::format("no GPU events (kernel, gpu_memcpy, gpu_memset) among its "
                                        "{} events: was the profiler run with CUDA activities?",
                                        source.stats.events));
}

InputError no_gpu_in_steps(const render::TraceSource& source) {
  return nothing_to_account(
      source, "no GPU activity in the trace's steps: was the profiler recording CUDA?");
}

// Nothing to judge: no GPU work in the steps — unless every step captures a CUDA graph, which is
// an answer (shown: what was captured), not an error.
bool nothing_in_steps(const timeline::Budget& budget) {
  return budget.total_span_us <= 0 && budget.overall != timeline::StepVerdict::kGraphCapture;
}

// The trace's steps budgeted: a --step regex that does not compile is a usage error, steps with
// no GPU work an input error naming what the file is (kprof budget, rank --per-step).
timeline::Budget finished_budget(const timeline::BudgetBuilder& builder,
                                 const render::TraceSource& source, const std::string& step_regex,
                                 const timeline::BudgetThresholds& thresholds) {
  timeline::Budget budget;
  try {
    budget = builder.finish(step_regex, thresholds);
  } catch (const std::invalid_argument& error) {
    throw UsageError(error.what());
  }
  if (nothing_in_steps(budget)) throw no_gpu_in_steps(source);
  budget.launch_records.producer_counts_drops = source.stats.producer_counts_drops;
  return budget;
}

// One trace read and ranked with a stage table; InputError when it is unreadable or has no GPU
// events (kprof rank of one trace, and of each rank's trace).
struct RankedTrace {
  render::TraceSource source;
  timeline::Ranking ranking;
  std::string notes;  // "kprof: note: …" lines about the ranking (stderr)
};

// The captured launches of a trace of graph capture (rank --graph-capture), with its warnings.
timeline::GraphCapture read_graph_capture(const std::string& path,
                                          const std::vector<std::string>& argv,
                                          timeline::AttributeBy by, std::string& notes) {
  timeline::OpAttributionBuilder capture_builder(by);
  render::TraceSource capture{path, argv, read_trace_file(path, capture_builder)};
  notes += render::trace_warnings(capture);
  timeline::GraphCapture graphs = capture_builder.finish_capture();
  if (graphs.launches == 0) {
    throw InputError(ExitCode::kInputInvalid, path, InputPosition::none(),
                     "no captured launches (launch calls whose GPU work never ran): not a trace "
                     "of graph capture — record the profiler around the graphs' capture (vLLM's "
                     "capture_model at start-up, torch.cuda.graph) and give that trace");
  }
  return graphs;
}

// The trace ranked in one streaming pass; then, only where some kernels' names leave their stage
// open (a code generator's name, no rule, attention without the phase) or a graph capture is
// given, read again for the operators and steps that launched those kernels: a kernel's stage is
// then its operator's where the stage table lists the operator, its steps' phase where its name
// gives none, else its name's (timeline::restage_by_launches). The second reading keeps a record
// per CPU op and launch call (as --by op does); a trace whose kernels all name their operation
// is read once, in the memory of its distinct names.
// The share of GPU time the kernels whose names leave their stage open must carry for rank to
// read the trace a second time for their operators.
constexpr double kSecondReadingMinShare = 0.10;

RankedTrace rank_trace(const std::string& path, const std::vector<std::string>& argv,
                       const analysis::StageTable& stages, bool raw_names,
                       std::optional<timeline::GraphCapture> capture = std::nullopt) {
  timeline::RankingBuilder builder(stages, !raw_names);
  render::TraceSource source{path, argv, read_trace_file(path, builder)};
  timeline::Ranking ranking = builder.finish();
  if (ranking.gpu_events == 0) throw no_gpu_events(source);
  ranking.launch_records.producer_counts_drops = source.stats.producer_counts_drops;
  auto open_kernels = timeline::kernels_needing_evidence(ranking);
  // The second reading holds a record per CPU op and launch call: on a 1 GB trace 193 MB and
  // 2.9x the time of the streaming pass alone (bench/README.md). It is worth that only where the
  // kernels it could restage carry a real share of the GPU time (the nvFuser matmul of issue 43:
  // 34%); attention without its phase, 4% of an eager decode step, keeps its name's stage.
  double open_us = 0;
  for (const timeline::KernelStats& row : ranking.kernels) {
    if (row.kind == "kernel" && row.stage_needs_evidence) open_us += row.total_us;
  }
  if (!capture && ranking.gpu_time_us > 0 &&
      open_us < kSecondReadingMinShare * ranking.gpu_time_us) {
    open_kernels.clear();
  }
  std::string notes;
  // Standard input is read once: its kernels keep the stage their names give.
  if (!open_kernels.empty() && path == "-") {
    if (capture) {
      throw UsageError(
          "--graph-capture needs the replay trace as a file: standard input (-) is read once, "
          "and the operators are read in a second pass");
    }
    notes = fmt::format(
        "kprof: note: {} kernel name{} leave{} the stage open (a code generator's name, no rule, "
        "attention without its phase); standard input is read once, so their stage is their "
        "name's: give the trace as a file for the operators that launched them to decide\n",
        open_kernels.size(), open_kernels.size() == 1 ? "" : "s",
        open_kernels.size() == 1 ? "s" : "");
    open_kernels.clear();
  }
  if (!open_kernels.empty()) {
    timeline::OpAttributionBuilder operators(timeline::AttributeBy::kOp);
    operators.use_stage_table(&stages);
    operators.keep_launched_kernels(std::move(open_kernels));
    if (capture) operators.use_graph_capture(std::move(*capture));
    read_trace_file(path, operators);
    timeline::restage_by_launches(ranking, operators.finish().launched_kernels, stages);
  }
  return {std::move(source), std::move(ranking), std::move(notes)};
}

// Per step (as kprof budget finds steps): the kernels that carry each step's GPU time.
ExitCode rank_per_step(const RankOptions& options, const std::string& path,
                       const std::vector<std::string>& argv, Answer& output) {
  timeline::BudgetBuilder builder;
  render::TraceSource source{path, argv, read_trace_file(path, builder)};
  timeline::Budget budget = finished_budget(builder, source, options.step_regex, {});
  output.notes += render::trace_warnings(source, &budget.launch_records);
  put_answer(
      output, options.json, options.text_too,
      [&] { return render::json_text(render::step_ranking_json(budget, source)); },
      [&] { return render::step_ranking_text(budget, source, options.top, options.name_width); });
  return ExitCode::kOk;
}

ExitCode rank_by_op(const RankOptions& options, const std::string& path,
                    const std::vector<std::string>& argv, Answer& output) {
  timeline::AttributeBy by = options.by == "module"  ? timeline::AttributeBy::kModule
                             : options.by == "range" ? timeline::AttributeBy::kRange
                                                     : timeline::AttributeBy::kOp;
  // Names the parts of a graph's inferred layers by their kernels' operation class.
  analysis::StageTable stages = analysis::load_stage_table(options.stages_path);
  timeline::OpAttributionBuilder builder(by);
  builder.use_stage_table(&stages);
  if (!options.graph_capture.empty()) {
    builder.use_graph_capture(read_graph_capture(options.graph_capture, argv, by, output.notes));
  }
  render::TraceSource source{path, argv, read_trace_file(path, builder)};
  timeline::OpAttribution ops = builder.finish();
  if (ops.gpu_events == 0) throw no_gpu_events(source);
  if (ops.replay) ops.replay->capture_trace = options.graph_capture;
  output.notes += render::trace_warnings(source) + render::shared_ids_warning(path, ops.shared_ids);
  put_answer(
      output, options.json, options.text_too,
      [&] { return render::json_text(render::op_attribution_json(ops, source)); },
      [&] { return render::op_attribution_text(ops, source, options.top, options.name_width); });
  return ExitCode::kOk;
}

ExitCode rank_over_ranks(const RankOptions& options, const std::vector<std::string>& argv,
                         Answer& output) {
  analysis::StageTable stages = analysis::load_stage_table(options.stages_path);
  std::vector<render::TraceSource> sources;
  std::vector<timeline::Ranking> rankings;
  for (const std::string& path : options.paths) {
    RankedTrace ranked = rank_trace(path, argv, stages, options.raw_names);
    output.notes +=
        render::trace_warnings(ranked.source, &ranked.ranking.launch_records) + ranked.notes;
    sources.push_back(std::move(ranked.source));
    rankings.push_back(std::move(ranked.ranking));
  }
  timeline::RankComparison comparison = timeline::compare_rankings(rankings);
  put_answer(
      output, options.json, options.text_too,
      [&] { return render::json_text(render::ranks_ranking_json(sources, rankings, comparison)); },
      [&] {
        return render::ranks_ranking_text(sources, rankings, comparison, options.top,
                                          options.name_width);
      });
  return ExitCode::kOk;
}

ExitCode budget_over_ranks(const BudgetOptions& options,
                           const timeline::BudgetThresholds& thresholds,
                           const std::vector<std::string>& argv, Answer& output) {
  analysis::StageTable stages = analysis::load_stage_table("");
  std::vector<render::TraceSource> sources;
  std::vector<timeline::Budget> budgets;
  for (const std::string& path : options.paths) {
    timeline::BudgetBuilder builder(&stages);
    render::TraceSource source{path, argv, read_trace_file(path, builder)};
    timeline::Budget budget = finished_budget(builder, source, options.step_regex, thresholds);
    if (!budgets.empty() && budget.steps.size() != budgets.front().steps.size()) {
      throw InputError(ExitCode::kInputInvalid, path, InputPosition::none(),
                       fmt::format("{} steps ({}) where {} has {}: the ranks' traces must record "
                                   "the same steps",
                                   budget.steps.size(), budget.step_selector, options.paths.front(),
                                   budgets.front().steps.size()));
    }
    for (auto& step : budget.steps) step.kernels.clear();  // not shown; keeps ranks small
    output.notes += render::trace_warnings(source, &budget.launch_records);
    sources.push_back(std::move(source));
    budgets.push_back(std::move(budget));
  }
  std::vector<timeline::StepComparison> steps = timeline::compare_budgets(budgets);
  put_answer(
      output, options.json, options.text_too,
      [&] {
        return render::json_text(render::ranks_budget_json(sources, budgets, steps, thresholds));
      },
      [&] { return render::ranks_budget_text(sources, budgets, steps, thresholds); });
  return ExitCode::kOk;
}

}  // namespace

Answer rank(const RankOptions& options, const std::vector<std::string>& argv) {
  Answer output;
  if (options.per_step && options.by != "kernel") {
    throw UsageError("--per-step ranks kernels within steps; it does not combine with --by " +
                     options.by);
  }
  if (options.per_step && !options.graph_capture.empty()) {
    throw UsageError("--graph-capture does not combine with --per-step");
  }
  if (options.paths.size() > 1) {
    if (options.per_step) throw UsageError("--per-step takes one trace, not several ranks'");
    if (!options.graph_capture.empty()) {
      throw UsageError("--graph-capture takes one trace, not several ranks'");
    }
    if (options.by != "kernel") {
      throw UsageError("--by " + options.by + " takes one trace, not several ranks'");
    }
    output.code = rank_over_ranks(options, argv, output);
    return output;
  }
  const std::string& path = options.paths.front();
  if (options.per_step) {
    output.code = rank_per_step(options, path, argv, output);
    return output;
  }
  if (options.by != "kernel") {
    output.code = rank_by_op(options, path, argv, output);
    return output;
  }
  std::optional<timeline::GraphCapture> capture;
  if (!options.graph_capture.empty()) {
    capture =
        read_graph_capture(options.graph_capture, argv, timeline::AttributeBy::kOp, output.notes);
  }
  RankedTrace ranked = rank_trace(path, argv, analysis::load_stage_table(options.stages_path),
                                  options.raw_names, std::move(capture));
  output.notes +=
      render::trace_warnings(ranked.source, &ranked.ranking.launch_records) + ranked.notes;
  put_answer(
      output, options.json, options.text_too,
      [&] { return render::json_text(render::ranking_json(ranked.ranking, ranked.source)); },
      [&] {
        return render::ranking_text(ranked.ranking, ranked.source, options.top, options.name_width);
      });
  return output;
}

Answer budget(const BudgetOptions& options, const std::vector<std::string>& argv) {
  Answer output;
  if (options.host_bound_below_pct > options.kernel_bound_from_pct) {
    throw UsageError("--host-bound-below must not exceed --kernel-bound-from");
  }
  timeline::BudgetThresholds thresholds{options.host_bound_below_pct / 100,
                                        options.kernel_bound_from_pct / 100};
  if (options.paths.size() > 1) {
    output.code = budget_over_ranks(options, thresholds, argv, output);
    return output;
  }
  const std::string& path = options.paths.front();
  analysis::StageTable stages = analysis::load_stage_table("");
  timeline::BudgetBuilder builder(&stages);
  render::TraceSource source{path, argv, read_trace_file(path, builder)};
  timeline::Budget budget = finished_budget(builder, source, options.step_regex, thresholds);
  output.notes += render::trace_warnings(source, &budget.launch_records);
  put_answer(
      output, options.json, options.text_too,
      [&] { return render::json_text(render::budget_json(budget, thresholds, source)); },
      [&] { return render::budget_text(budget, thresholds, source); });
  return output;
}

RankText rank_trace_text(const std::string& path, const std::vector<std::string>& argv, size_t top,
                         size_t name_width) {
  RankedTrace ranked = rank_trace(path, argv, analysis::load_stage_table(""), false);
  return {render::ranking_text(ranked.ranking, ranked.source, top, name_width),
          render::trace_warnings(ranked.source, &ranked.ranking.launch_records) + ranked.notes};
}

}  // namespace kprof::pipeline
