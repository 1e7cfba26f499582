#include "timeline/rank_comparison.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace kprof::timeline {

Spread spread_of(std::vector<double> per_rank) {
  Spread spread;
  spread.per_rank = std::move(per_rank);
  if (spread.per_rank.empty()) return spread;
  auto low = std::min_element(spread.per_rank.begin(), spread.per_rank.end());
  auto high = std::max_element(spread.per_rank.begin(), spread.per_rank.end());  // the first max
  spread.min = *low;
  spread.max = *high;
  spread.max_rank = static_cast<std::size_t>(high - spread.per_rank.begin());
  spread.mean = std::accumulate(spread.per_rank.begin(), spread.per_rank.end(), 0.0) /
                static_cast<double>(spread.per_rank.size());
  return spread;
}

namespace {

std::vector<NamedSpread> by_mean(
    std::map<std::string, std::pair<std::string, std::vector<double>>> rows) {
  std::vector<NamedSpread> out;
  for (auto& [name, row] : rows) out.push_back({name, row.first, spread_of(std::move(row.second))});
  std::stable_sort(out.begin(), out.end(), [](const NamedSpread& a, const NamedSpread& b) {
    return a.total_us.mean > b.total_us.mean;
  });
  return out;
}

}  // namespace

RankComparison compare_rankings(const std::vector<Ranking>& ranks) {
  RankComparison out;
  std::map<std::string, std::pair<std::string, std::vector<double>>> kernels, stages;
  std::vector<double> gpu_time, busy, exposed;
  for (std::size_t r = 0; r < ranks.size(); ++r) {
    for (const KernelStats& k : ranks[r].kernels) {
      auto& row = kernels[k.name];
      row.first = k.stage;
      row.second.resize(ranks.size(), 0.0);
      row.second[r] += k.total_us;
    }
    for (const StageStats& s : ranks[r].stages) {
      auto& row = stages[s.stage];
      row.second.resize(ranks.size(), 0.0);
      row.second[r] += s.total_us;
    }
    double rank_busy = 0, rank_exposed = 0;
    for (const DeviceStats& d : ranks[r].devices) {
      rank_busy += d.busy_us;
      rank_exposed += d.exposed_communication_us;
    }
    gpu_time.push_back(ranks[r].gpu_time_us);
    busy.push_back(rank_busy);
    exposed.push_back(rank_exposed);
  }
  out.kernels = by_mean(std::move(kernels));
  out.stages = by_mean(std::move(stages));
  out.gpu_time_us = spread_of(std::move(gpu_time));
  out.busy_us = spread_of(std::move(busy));
  out.exposed_communication_us = spread_of(std::move(exposed));
  return out;
}

std::vector<StepComparison> compare_budgets(const std::vector<Budget>& ranks) {
  std::vector<StepComparison> out;
  if (ranks.empty()) return out;
  std::size_t steps = ranks.front().steps.size();
  for (const Budget& b : ranks) steps = std::min(steps, b.steps.size());
  for (std::size_t i = 0; i < steps; ++i) {
    StepComparison step;
    step.index = i;
    step.name = ranks.front().steps[i].name;
    std::vector<double> span, busy, host, exposed;
    for (const Budget& b : ranks) {
      span.push_back(b.steps[i].gpu_span_us);
      busy.push_back(b.steps[i].gpu_busy_us);
      host.push_back(b.steps[i].host_gap_us);
      exposed.push_back(b.steps[i].exposed_communication_us);
    }
    step.gpu_span_us = spread_of(std::move(span));
    step.gpu_busy_us = spread_of(std::move(busy));
    step.host_gap_us = spread_of(std::move(host));
    step.exposed_communication_us = spread_of(std::move(exposed));
    out.push_back(std::move(step));
  }
  return out;
}

}  // namespace kprof::timeline
