// kprof rank and kprof budget given several traces, one per tensor-parallel rank: each trace read
// and analysed on its own, one after the other (what is kept between files is each rank's finished
// ranking or budget, bounded by kernel names and steps), then compared across ranks.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "cli/command.h"
#include "timeline/step_budget.h"

namespace kprof::cli {

struct RanksRankOptions {
  std::vector<std::string> paths;
  std::string stages_path;
  bool raw_names = false;
  bool json = false;
  std::size_t top = 20;
  std::size_t name_width = 70;
};
ExitCode run_rank_over_ranks(const RanksRankOptions& options, Output& output);

struct RanksBudgetOptions {
  std::vector<std::string> paths;
  std::string step_regex;
  timeline::BudgetThresholds thresholds;
  bool json = false;
};
// A trace whose step count differs from the first's is an input error naming it (exit 4).
ExitCode run_budget_over_ranks(const RanksBudgetOptions& options, Output& output);

}  // namespace kprof::cli
