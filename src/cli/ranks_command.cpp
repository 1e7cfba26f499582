#include "cli/ranks_command.h"

#include <fmt/format.h>

#include "analysis/stages.h"
#include "cli/rank_command.h"
#include "importers/common/read_trace.h"
#include "render/report_json.h"
#include "render/trace_render.h"
#include "timeline/kernel_ranking.h"
#include "timeline/rank_comparison.h"

namespace kprof::cli {

ExitCode run_rank_over_ranks(const RanksRankOptions& options, Output& output) {
  analysis::StageTable stages = analysis::load_stage_table(options.stages_path);
  std::vector<render::TraceSource> sources;
  std::vector<timeline::Ranking> rankings;
  for (const std::string& path : options.paths) {
    RankedTrace ranked = rank_trace(path, output.argv, stages, options.raw_names);
    output.stderr_text += render::trace_warnings(ranked.source);
    sources.push_back(std::move(ranked.source));
    rankings.push_back(std::move(ranked.ranking));
  }
  timeline::RankComparison comparison = timeline::compare_rankings(rankings);
  output.stdout_text =
      options.json ? render::json_text(render::ranks_ranking_json(sources, rankings, comparison))
                   : render::ranks_ranking_text(sources, rankings, comparison, options.top,
                                                options.name_width);
  return ExitCode::kOk;
}

ExitCode run_budget_over_ranks(const RanksBudgetOptions& options, Output& output) {
  analysis::StageTable stages = analysis::load_stage_table("");
  std::vector<render::TraceSource> sources;
  std::vector<timeline::Budget> budgets;
  for (const std::string& path : options.paths) {
    timeline::BudgetBuilder builder(&stages);
    render::TraceSource source{path, output.argv, importers::read_trace(path, builder)};
    timeline::Budget budget;
    try {
      budget = builder.finish(options.step_regex, options.thresholds);
    } catch (const std::invalid_argument& error) {
      throw UsageError(error.what());
    }
    if (budget.total_span_us <= 0) {
      throw InputError(ExitCode::kInputInvalid, path, InputPosition::none(),
                       "no GPU activity in the trace's steps: was the profiler recording CUDA?");
    }
    if (!budgets.empty() && budget.steps.size() != budgets.front().steps.size()) {
      throw InputError(ExitCode::kInputInvalid, path, InputPosition::none(),
                       fmt::format("{} steps ({}) where {} has {}: the ranks' traces must record "
                                   "the same steps",
                                   budget.steps.size(), budget.step_selector, options.paths.front(),
                                   budgets.front().steps.size()));
    }
    for (auto& step : budget.steps) step.kernels.clear();  // not shown; keeps ranks small
    output.stderr_text += render::trace_warnings(source);
    sources.push_back(std::move(source));
    budgets.push_back(std::move(budget));
  }
  std::vector<timeline::StepComparison> steps = timeline::compare_budgets(budgets);
  output.stdout_text = options.json
                           ? render::json_text(render::ranks_budget_json(sources, budgets, steps,
                                                                         options.thresholds))
                           : render::ranks_budget_text(sources, budgets, steps, options.thresholds);
  return ExitCode::kOk;
}

}  // namespace kprof::cli
