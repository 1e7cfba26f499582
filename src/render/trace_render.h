// Presenting trace analyses: `kprof rank` (per name and stage, or per step) and `kprof budget`
// as terminal text and JSON (kprof.rank/1, kprof.rank-steps/1, kprof.budget/1). Inputs are
// finished analyses; nothing here decides anything. Names are shown literally in text.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "importers/common/trace_sink.h"
#include "timeline/kernel_ranking.h"
#include "timeline/rank_comparison.h"
#include "timeline/step_budget.h"

namespace kprof::render {

// Where the analysis came from, for the headers and JSON envelopes.
struct TraceSource {
  std::string path;
  std::vector<std::string> argv;
  importers::TraceReadStats stats;
};

// The lines kprof prints on stderr about the reading (events skipped for an impossible time,
// records the producer says it lost, and with `records` launch calls without a GPU record), each
// "kprof: warning: …\n"; "" when there is nothing to say.
std::string trace_warnings(const TraceSource& source,
                           const timeline::LaunchRecords* records = nullptr);

// The warning line about launch calls without a GPU record where they are too many to ignore
// (LaunchRecords::incomplete), else "".
std::string launch_records_warning(const std::string& path, const timeline::LaunchRecords& records);

// kprof.rank/1's and kprof.budget/1's "records": the launch calls, those without a GPU record,
// what the producer said it lost, and whether the figures rest on complete records.
nlohmann::json records_json(const timeline::LaunchRecords& records, const TraceSource& source);

// The "devices" list of kprof.rank/1: one object per device of the ranking.
nlohmann::json ranking_devices_json(const timeline::Ranking& ranking);

nlohmann::json ranking_json(const timeline::Ranking& ranking, const TraceSource& source);
std::string ranking_text(const timeline::Ranking& ranking, const TraceSource& source, size_t top,
                         size_t name_width);

nlohmann::json step_ranking_json(const timeline::Budget& budget, const TraceSource& source);
std::string step_ranking_text(const timeline::Budget& budget, const TraceSource& source, size_t top,
                              size_t name_width);

nlohmann::json budget_json(const timeline::Budget& budget,
                           const timeline::BudgetThresholds& thresholds, const TraceSource& source);
std::string budget_text(const timeline::Budget& budget,
                        const timeline::BudgetThresholds& thresholds, const TraceSource& source);

}  // namespace kprof::render

namespace kprof::render {

// Several ranks, one trace each (`kprof rank`/`kprof budget` given several traces): each rank's
// own figures and their spread across ranks (kprof.rank-ranks/1, kprof.budget-ranks/1).
nlohmann::json ranks_ranking_json(const std::vector<TraceSource>& sources,
                                  const std::vector<timeline::Ranking>& rankings,
                                  const timeline::RankComparison& comparison);
std::string ranks_ranking_text(const std::vector<TraceSource>& sources,
                               const std::vector<timeline::Ranking>& rankings,
                               const timeline::RankComparison& comparison, size_t top,
                               size_t name_width);
nlohmann::json ranks_budget_json(const std::vector<TraceSource>& sources,
                                 const std::vector<timeline::Budget>& budgets,
                                 const std::vector<timeline::StepComparison>& steps,
                                 const timeline::BudgetThresholds& thresholds);
std::string ranks_budget_text(const std::vector<TraceSource>& sources,
                              const std::vector<timeline::Budget>& budgets,
                              const std::vector<timeline::StepComparison>& steps,
                              const timeline::BudgetThresholds& thresholds);

}  // namespace kprof::render
