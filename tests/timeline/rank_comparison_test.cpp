// Several ranks compared, on the two real processes of tools/tracer/workload.py --processes 2
// (kprof's tracer on the H200) as two ranks: per-kernel totals of each rank summed here from the
// JSON read whole by nlohmann, their spread computed here.
#include "timeline/rank_comparison.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "importers/chrome_trace/chrome_trace_reader.h"
#include "support/test_data.h"

namespace kprof::timeline {
namespace {

using testing::data_path;

const char* const kRanks[] = {"h200/tracer_two_process_a.json.gz",
                              "h200/tracer_two_process_b.json.gz"};

std::map<std::string, double> totals_by_name(const std::string& file) {
  auto document = nlohmann::json::parse(testing::read_gzip_text(data_path(file)));
  std::map<std::string, double> totals;
  for (const auto& e : document["traceEvents"]) {
    std::string cat = e.value("cat", "");
    if (e.value("ph", "") == "X" &&
        (cat == "kernel" || cat == "gpu_memcpy" || cat == "gpu_memset")) {
      totals[e["name"].get<std::string>()] += e["dur"].get<double>();
    }
  }
  return totals;
}

TEST(RankComparison, PerKernelSpreadAcrossRanks) {
  static const analysis::StageTable stages = analysis::load_stage_table();
  std::vector<Ranking> rankings;
  std::vector<std::map<std::string, double>> expected;
  for (const char* file : kRanks) {
    RankingBuilder builder(stages, /*normalize=*/false);
    importers::read_chrome_trace(data_path(file), builder);
    rankings.push_back(builder.finish());
    expected.push_back(totals_by_name(file));
  }
  RankComparison comparison = compare_rankings(rankings);
  std::map<std::string, bool> names;
  for (const auto& totals : expected) {
    for (const auto& [name, us] : totals) names[name] = true;
  }
  ASSERT_EQ(comparison.kernels.size(), names.size());
  for (const NamedSpread& k : comparison.kernels) {
    SCOPED_TRACE(k.name);
    double a = expected[0].count(k.name) ? expected[0].at(k.name) : 0;
    double b = expected[1].count(k.name) ? expected[1].at(k.name) : 0;
    ASSERT_EQ(k.total_us.per_rank.size(), 2u);
    EXPECT_NEAR(k.total_us.per_rank[0], a, 1e-6 * std::max(a, 1.0));
    EXPECT_NEAR(k.total_us.per_rank[1], b, 1e-6 * std::max(b, 1.0));
    EXPECT_NEAR(k.total_us.mean, (a + b) / 2, 1e-6 * std::max(a + b, 1.0));
    EXPECT_NEAR(k.total_us.max, std::max(a, b), 1e-6 * std::max(a + b, 1.0));
    EXPECT_NEAR(k.total_us.min, std::min(a, b), 1e-6 * std::max(a + b, 1.0));
    EXPECT_EQ(k.total_us.max_rank, b > a ? 1u : 0u);
  }
  for (size_t i = 1; i < comparison.kernels.size(); ++i) {
    EXPECT_GE(comparison.kernels[i - 1].total_us.mean, comparison.kernels[i].total_us.mean);
  }
}

TEST(RankComparison, SlowestRankPerStepIsTheLongestSpan) {
  std::vector<Budget> budgets;
  for (const char* file : kRanks) {
    BudgetBuilder builder;
    importers::read_chrome_trace(data_path(file), builder);
    budgets.push_back(builder.finish("", {}));
  }
  ASSERT_EQ(budgets[0].steps.size(), 30u);
  ASSERT_EQ(budgets[1].steps.size(), 30u);
  std::vector<StepComparison> steps = compare_budgets(budgets);
  ASSERT_EQ(steps.size(), 30u);
  std::set<std::size_t> slowest;
  for (const StepComparison& step : steps) {
    double a = budgets[0].steps[step.index].gpu_span_us;
    double b = budgets[1].steps[step.index].gpu_span_us;
    EXPECT_EQ(step.gpu_span_us.max_rank, b > a ? 1u : 0u) << step.name;
    EXPECT_DOUBLE_EQ(step.gpu_span_us.max, std::max(a, b));
    EXPECT_DOUBLE_EQ(step.gpu_span_us.min, std::min(a, b));
    slowest.insert(step.gpu_span_us.max_rank);
  }
  EXPECT_EQ(slowest.size(), 2u);  // in this recording each rank is sometimes the slower
}

TEST(RankComparison, SpreadOfAllEqualNamesTheFirstRank) {
  Spread s = spread_of({0, 0, 0});
  EXPECT_EQ(s.max_rank, 0u);
  s = spread_of({1, 3, 3, 2});
  EXPECT_EQ(s.max_rank, 1u);
  EXPECT_DOUBLE_EQ(s.mean, 2.25);
  EXPECT_DOUBLE_EQ(s.min, 1);
}

}  // namespace
}  // namespace kprof::timeline
