// Step budgets on real H200 traces, checked against an independent reading of the same traces
// (nlohmann, launches matched to kernels by correlation, intervals merged here).
#include "timeline/step_budget.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>

#include "importers/chrome_trace/chrome_trace_reader.h"
#include "support/test_data.h"

namespace kprof::timeline {
namespace {

using testing::data_path;

nlohmann::json load(const std::string& file) {
  return nlohmann::json::parse(testing::read_gzip_text(data_path(file)));
}

struct ExpectedStep {
  double busy_fraction;
  double gpu_time_us;  // summed durations of the step's GPU work
};

// Busy fraction and GPU time of each ProfilerStep, computed directly from the JSON.
std::vector<ExpectedStep> expected_steps(const nlohmann::json& trace) {
  std::map<std::int64_t, double> launch_time;
  std::vector<std::pair<double, double>> steps;
  for (const auto& e : trace["traceEvents"]) {
    std::string cat = e.value("cat", "");
    if ((cat == "cuda_runtime" || cat == "cuda_driver") && e.contains("args") &&
        e["args"].contains("correlation")) {
      launch_time[e["args"]["correlation"].get<std::int64_t>()] = e["ts"].get<double>();
    }
    if (cat == "user_annotation" && e["name"].get<std::string>().rfind("ProfilerStep#", 0) == 0) {
      steps.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
    }
  }
  std::sort(steps.begin(), steps.end());
  std::vector<ExpectedStep> fractions;
  for (auto [start, end] : steps) {
    std::vector<std::pair<double, double>> work;
    for (const auto& e : trace["traceEvents"]) {
      std::string category = e.value("cat", "");
      if (category != "kernel" && category != "gpu_memcpy" && category != "gpu_memset") continue;
      auto t = launch_time.find(e["args"]["correlation"].get<std::int64_t>());
      if (t == launch_time.end() || t->second < start || t->second > end) continue;
      work.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
    }
    std::sort(work.begin(), work.end());
    double busy = 0, open_start = work.front().first, open_end = work.front().second;
    double span_end = open_end;
    for (auto [s, e] : work) {
      span_end = std::max(span_end, e);
      if (s > open_end) {
        busy += open_end - open_start;
        open_start = s;
        open_end = e;
      } else {
        open_end = std::max(open_end, e);
      }
    }
    busy += open_end - open_start;
    double time = 0;
    for (auto [s, e] : work) time += e - s;
    fractions.push_back({busy / (span_end - work.front().first), time});
  }
  return fractions;
}

Budget budget_of(const std::string& file) {
  BudgetBuilder builder;
  importers::read_chrome_trace(data_path(file), builder);
  return builder.finish("", {});
}

void expect_matches_independent_reading(const std::string& file, const Budget& budget) {
  std::vector<ExpectedStep> expected = expected_steps(load(file));
  ASSERT_EQ(budget.steps.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_NEAR(budget.steps[i].busy_fraction, expected[i].busy_fraction, 1e-9)
        << file << " step " << i;
    // The per-step ranking (kprof rank --per-step) accounts for all of the step's GPU time.
    double ranked = 0;
    for (const auto& [name, us] : budget.steps[i].kernels) ranked += us;
    EXPECT_NEAR(ranked, expected[i].gpu_time_us, 1e-6) << file << " step " << i;
  }
}

TEST(StepBudget, EagerBatchOneDecodeIsHostBound) {
  Budget budget = budget_of("h200/budget_eager_b1.json.gz");
  expect_matches_independent_reading("h200/budget_eager_b1.json.gz", budget);
  EXPECT_EQ(budget.overall, StepVerdict::kHostBound);
  for (const StepBudget& step : budget.steps) {
    EXPECT_EQ(step.verdict, StepVerdict::kHostBound);
    EXPECT_EQ(step.kernel_launches, 104u);
  }
  // The fixture's own description: GPU busy about 12% of the kernel span.
  EXPECT_NEAR(budget.total_busy_us / budget.total_span_us, 0.12, 0.01);
}

TEST(StepBudget, PrefillIsKernelBound) {
  Budget budget = budget_of("h200/budget_eager_prefill4096.json.gz");
  expect_matches_independent_reading("h200/budget_eager_prefill4096.json.gz", budget);
  EXPECT_EQ(budget.overall, StepVerdict::kKernelBound);
  EXPECT_NEAR(budget.total_busy_us / budget.total_span_us, 0.97, 0.01);
}

// Recorded for kprof on the H200 (tools/traces/decode_step_traces.py): the same decode step,
// eager and as a CUDA graph. The graph's 48 kernels come from one cudaGraphLaunch per step.
TEST(StepBudget, CudaGraphDecodeIsKernelBoundWhereItsEagerTwinIsNot) {
  Budget eager = budget_of("h200/budget_eager_decode.json.gz");
  Budget graph = budget_of("h200/budget_graph_decode.json.gz");
  expect_matches_independent_reading("h200/budget_eager_decode.json.gz", eager);
  expect_matches_independent_reading("h200/budget_graph_decode.json.gz", graph);
  EXPECT_EQ(eager.overall, StepVerdict::kHostBound);
  EXPECT_EQ(graph.overall, StepVerdict::kKernelBound);
  for (const StepBudget& step : graph.steps) {
    EXPECT_EQ(step.graph_launches, 1u);
    EXPECT_EQ(step.gpu_activities, 48u);
  }
  for (const StepBudget& step : eager.steps) EXPECT_EQ(step.gpu_activities, 48u);
}

// Recorded with kprof's own tracer on the H200 (tools/tracer/gpu-check.sh, cases basic and graph):
// tools/tracer/workload.py's decode step, 176 kernels, 50 steps marked by NVTX ranges named as the
// PyTorch profiler names its steps; the graph run replays the step as one cudaGraphLaunch.
TEST(StepBudget, TracerRecordedEagerAndGraphDecodeSteps) {
  Budget eager = budget_of("h200/tracer_eager_decode.json.gz");
  Budget graph = budget_of("h200/tracer_graph_decode.json.gz");
  expect_matches_independent_reading("h200/tracer_eager_decode.json.gz", eager);
  expect_matches_independent_reading("h200/tracer_graph_decode.json.gz", graph);
  ASSERT_EQ(eager.steps.size(), 50u);
  ASSERT_EQ(graph.steps.size(), 50u);
  for (const StepBudget& step : graph.steps) {
    EXPECT_EQ(step.graph_launches, 1u);
    EXPECT_EQ(step.gpu_activities, 176u);
  }
  for (const StepBudget& step : eager.steps) {
    EXPECT_EQ(step.graph_launches, 0u);
    EXPECT_EQ(step.gpu_activities, 176u);
  }
}

TEST(StepBudget, GpuSideAnnotationsAndWholeTraceFallback) {
  BudgetBuilder builder;
  importers::read_chrome_trace(data_path("h200/budget_eager_b1.json.gz"), builder);
  Budget by_gpu_annotation = builder.finish("^decode_step$", {});
  ASSERT_EQ(by_gpu_annotation.steps.size(), 5u);
  // decode_step exists on both sides; the CPU side is preferred (launch attribution).
  EXPECT_EQ(by_gpu_annotation.steps[0].source, "cpu annotation");
  Budget whole = builder.finish("no such step", {});
  ASSERT_EQ(whole.steps.size(), 1u);
  EXPECT_EQ(whole.steps[0].gpu_activities, 520u);
  EXPECT_THROW(builder.finish("(", {}), std::invalid_argument);
}

}  // namespace
}  // namespace kprof::timeline
