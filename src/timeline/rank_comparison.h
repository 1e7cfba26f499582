// Several tensor-parallel ranks, one trace each (as vLLM and SGLang write them): each rank's
// ranking or budget, computed file by file, compared — per kernel and per stage the spread of GPU
// time across ranks, per step the slowest rank. Inputs are finished analyses, so what is held is
// bounded by kernel names and steps, never by events.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include "timeline/kernel_ranking.h"
#include "timeline/step_budget.h"

namespace kprof::timeline {

// One figure across ranks: its value on each rank (0 where the rank has none), mean, min, max,
// and the rank with the max (the first such).
struct Spread {
  std::vector<double> per_rank;
  double mean = 0, min = 0, max = 0;
  std::size_t max_rank = 0;
};
Spread spread_of(std::vector<double> per_rank);

struct NamedSpread {
  std::string name;
  std::string stage;  // for kernels; empty for stages
  Spread total_us;
};

struct RankComparison {
  std::vector<NamedSpread> kernels;                       // by mean total, largest first
  std::vector<NamedSpread> stages;                        // likewise
  Spread gpu_time_us, busy_us, exposed_communication_us;  // per rank, summed over its devices
};
RankComparison compare_rankings(const std::vector<Ranking>& ranks);

struct StepComparison {
  std::size_t index = 0;
  std::string name;  // rank 0's name for the step
  Spread gpu_span_us, gpu_busy_us, host_gap_us, exposed_communication_us;
};
// Steps are aligned by position: the i-th step of every rank. The caller checks that every rank
// has as many steps.
std::vector<StepComparison> compare_budgets(const std::vector<Budget>& ranks);

}  // namespace kprof::timeline
