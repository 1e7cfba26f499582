// Step budgets on real H200 traces, checked against an independent reading of the same traces
// (nlohmann, launches matched to kernels by correlation, intervals merged here).
#include "timeline/step_budget.h"

#include <gtest/gtest.h>
#include <re2/re2.h>

#include <algorithm>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <tuple>

#include "importers/chrome_trace/chrome_trace_reader.h"
#include "support/test_data.h"

namespace kprof::timeline {
namespace {

using testing::data_path;

nlohmann::json load(const std::string& file) {
  return nlohmann::json::parse(testing::read_gzip_text(data_path(file)));
}

struct ExpectedStep {
  double gpu_span_busy_fraction;  // busy over the first to last GPU work
  // Busy over the wall span: from the annotation's start (or the previous step's end, when
  // later) to the later of its end and the last GPU work.
  double busy_fraction;
  double gpu_time_us;  // summed durations of the step's GPU work
};

// The time in [from, to) that the device ran work outside the step: from the first of `all`'s
// merged intervals overlapping it to the last one's end (the gaps between them are that work's).
double other_work_in(const std::vector<std::pair<double, double>>& all, double from, double to) {
  if (to <= from) return 0;
  double first = to, last = from;
  for (auto [s, e] : all) {
    if (e <= from || s >= to) continue;
    first = std::min(first, std::max(s, from));
    last = std::max(last, std::min(e, to));
  }
  return last > first ? last - first : 0;
}

// Busy fractions and GPU time of each ProfilerStep, computed directly from the JSON. Busy over
// the wall span leaves out the time the device ran work no step claimed (launched before the
// window, still running when a step opened): neither the step's busy time nor idle.
std::vector<ExpectedStep> expected_steps(const nlohmann::json& trace) {
  std::map<std::int64_t, double> launch_time;
  std::vector<std::pair<double, double>> steps;
  std::vector<std::pair<double, double>> all;  // every GPU activity, merged below
  for (const auto& e : trace["traceEvents"]) {
    std::string category = e.value("cat", "");
    if (category == "kernel" || category == "gpu_memcpy" || category == "gpu_memset") {
      all.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
    }
  }
  std::sort(all.begin(), all.end());
  {
    std::vector<std::pair<double, double>> merged;
    for (auto [s, e] : all) {
      if (!merged.empty() && s <= merged.back().second) {
        merged.back().second = std::max(merged.back().second, e);
      } else {
        merged.emplace_back(s, e);
      }
    }
    all = std::move(merged);
  }
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
  double previous_end = -1;
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
    double wall_start = std::min(std::max(start, previous_end), work.front().first);
    double busy = 0, open_start = work.front().first, open_end = work.front().second;
    double span_end = open_end;
    double other = other_work_in(all, wall_start, work.front().first);
    for (auto [s, e] : work) {
      span_end = std::max(span_end, e);
      if (s > open_end) {
        busy += open_end - open_start;
        other += other_work_in(all, open_end, s);
        open_start = s;
        open_end = e;
      } else {
        open_end = std::max(open_end, e);
      }
    }
    busy += open_end - open_start;
    double time = 0;
    for (auto [s, e] : work) time += e - s;
    double wall_end = std::max(end, span_end);
    other += other_work_in(all, span_end, end);
    previous_end = wall_end;
    fractions.push_back(
        {busy / (span_end - work.front().first), busy / (wall_end - wall_start - other), time});
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
    EXPECT_NEAR(budget.steps[i].gpu_span_busy_fraction, expected[i].gpu_span_busy_fraction, 1e-9)
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
// eager and as a CUDA graph. The graph's 48 kernels come from one cudaGraphLaunch per step. Over
// the GPU span the graph keeps the device busy (99.5%), but each step's annotation is ~0.13 ms
// longer than its GPU work: the host before the replay and after it, which the wall span counts,
// so the graph steps are mixed (82% fed), not kernel-bound; the eager twin stays host-bound.
TEST(StepBudget, CudaGraphDecodeIsMixedWhereItsEagerTwinIsHostBound) {
  Budget eager = budget_of("h200/budget_eager_decode.json.gz");
  Budget graph = budget_of("h200/budget_graph_decode.json.gz");
  expect_matches_independent_reading("h200/budget_eager_decode.json.gz", eager);
  expect_matches_independent_reading("h200/budget_graph_decode.json.gz", graph);
  EXPECT_EQ(eager.overall, StepVerdict::kHostBound);
  EXPECT_EQ(graph.overall, StepVerdict::kMixed);
  EXPECT_GT(graph.total_busy_us / graph.total_span_us, 0.99);
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

// The graph replay's idle time between its kernels is all inside the graph (its one cudaGraphLaunch
// ended before the first kernel finished): device-side, not the host's. Before idle time was
// attributed, every gap between the graph's 48 kernels counted as host gap (3.1-3.5 us a step
// here). Its host gap is only the idle before the replay and after it. The eager twin's idle is
// the host's: the GPU waits for each launch. Figures per step are checked against the Python
// reading (ctest budget_matches_reference_*); here, what they must say.
TEST(StepBudget, CudaGraphGapsAreDeviceSideAndEagerGapsAreTheHosts) {
  Budget graph = budget_of("h200/budget_graph_decode.json.gz");
  ASSERT_EQ(graph.steps.size(), 5u);
  for (const StepBudget& step : graph.steps) {
    SCOPED_TRACE(step.name);
    EXPECT_GT(step.idle_before_first_us, 100.0);
    EXPECT_NEAR(step.host_gap_us, step.idle_before_first_us + step.idle_after_last_us, 1e-6);
    EXPECT_GT(step.device_idle_us, 3.0);
    EXPECT_NEAR(step.gpu_busy_us + step.device_idle_us, step.gpu_span_us, 1e-6);
    EXPECT_NEAR(step.gpu_busy_us + step.device_idle_us + step.host_gap_us, step.wall_span_us, 1e-6);
    EXPECT_LT(step.host_fed_fraction, 0.9);
    EXPECT_EQ(step.verdict, StepVerdict::kMixed);
  }
  Budget tracer_graph = budget_of("h200/tracer_graph_decode.json.gz");
  for (const StepBudget& step : tracer_graph.steps) {
    EXPECT_NEAR(step.host_gap_us, step.idle_before_first_us + step.idle_after_last_us, 1e-6)
        << step.name;
    EXPECT_GT(step.device_idle_us, 10.0) << step.name;
  }
  Budget eager = budget_of("h200/budget_eager_decode.json.gz");
  for (const StepBudget& step : eager.steps) {
    SCOPED_TRACE(step.name);
    EXPECT_GT(step.host_gap_us, 800.0);
    EXPECT_LT(step.device_idle_us, 20.0);
    EXPECT_NEAR(step.gpu_busy_us + step.host_gap_us + step.device_idle_us, step.wall_span_us, 1e-6);
    EXPECT_EQ(step.verdict, StepVerdict::kHostBound);
  }
}

// Two processes' steps in one file (the reconstruction tools/traces/merge_two_devices.py made of
// tracer_two_process_{a,b}, the second on device 1, steps aligned in time): a step claims only its
// own process's launches, so each step has one device; each device is accounted on its own.
TEST(StepBudget, TwoDevicesInOneTraceAreAccountedApart) {
  Budget budget = budget_of("h200/tracer_two_device.json.gz");
  ASSERT_EQ(budget.steps.size(), 60u);
  ASSERT_EQ(budget.devices.size(), 2u);
  std::map<std::int64_t, int> steps_per_device;
  double span = 0;
  for (const StepBudget& step : budget.steps) {
    ASSERT_EQ(step.devices.size(), 1u) << step.name;
    ++steps_per_device[step.devices[0].device];
    EXPECT_NEAR(step.gpu_span_us, step.devices[0].gpu_span_us, 1e-9);
    span += step.gpu_span_us;
  }
  EXPECT_EQ(steps_per_device[0], 30);
  EXPECT_EQ(steps_per_device[1], 30);
  EXPECT_NEAR(budget.devices[0].gpu_span_us + budget.devices[1].gpu_span_us, span, 1e-6);
}

// Each engine's step annotation, as its source writes it, is a step without --step; near misses
// are not.
TEST(StepBudget, EngineStepMarkersMatchTheNamesEnginesEmit) {
  auto engine_of = [](const std::string& name) -> std::string {
    for (const StepMarker& marker : builtin_step_markers()) {
      if (RE2::PartialMatch(name, RE2(marker.pattern))) return marker.engine;
    }
    return "";
  };
  EXPECT_EQ(engine_of("ProfilerStep#12"), "PyTorch");
  EXPECT_EQ(engine_of("execute_context_1(888_788544)_generation_0(0)"), "vLLM");
  EXPECT_EQ(engine_of("execute_context_0(0)_generation_8(8)"), "vLLM");
  EXPECT_EQ(engine_of("execute_12_context_0(sq0)_generation_12(sq12)"), "vLLM");
  EXPECT_EQ(engine_of("execute_new_2_cached_6"), "vLLM");
  EXPECT_EQ(engine_of("step[decode bs=32]"), "SGLang");
  EXPECT_EQ(engine_of("step[prefill bs=2 toks=4096]"), "SGLang");
  EXPECT_EQ(engine_of("step[mixed bs=8 ext=512 dec=7]"), "SGLang");
  EXPECT_EQ(engine_of("step[idle]"), "SGLang");
  EXPECT_EQ(engine_of("_forward_step"), "TensorRT-LLM");
  for (const char* other : {"execute_model", "_forward_step_inter_pp", "ProfilerStep", "step",
                            "aten::step", "step[decode", "execute_context_1"}) {
    EXPECT_EQ(engine_of(other), "") << other;
  }
}

// Faithful reconstructions (tools/traces/rename_steps.py): real traces whose ProfilerStep#N
// annotations are renamed as vLLM and SGLang name their steps. Without --step they are found, and
// give the very figures the original's ProfilerStep#N steps give.
TEST(StepBudget, EngineStepAnnotationsAreStepsWithoutStep) {
  for (auto [renamed, original, selector] :
       {std::tuple{"h200/engine_steps_vllm.json.gz", "h200/budget_eager_decode.json.gz",
                   "vLLM step annotations"},
        std::tuple{"h200/engine_steps_sglang.json.gz", "h200/budget_graph_decode.json.gz",
                   "SGLang step annotations"}}) {
    SCOPED_TRACE(renamed);
    Budget engine = budget_of(renamed);
    Budget torch = budget_of(original);
    EXPECT_EQ(engine.step_selector, selector);
    ASSERT_EQ(engine.steps.size(), 5u);
    ASSERT_EQ(engine.steps.size(), torch.steps.size());
    for (size_t i = 0; i < engine.steps.size(); ++i) {
      EXPECT_EQ(engine.steps[i].gpu_activities, torch.steps[i].gpu_activities);
      EXPECT_EQ(engine.steps[i].gpu_busy_us, torch.steps[i].gpu_busy_us);
      EXPECT_EQ(engine.steps[i].host_gap_us, torch.steps[i].host_gap_us);
      EXPECT_EQ(engine.steps[i].verdict, torch.steps[i].verdict);
    }
  }
}

double union_length(std::vector<std::pair<double, double>> xs) {
  std::sort(xs.begin(), xs.end());
  double total = 0, start = 0, end = 0;
  bool open = false;
  for (auto [s, e] : xs) {
    if (open && s <= end) {
      end = std::max(end, e);
      continue;
    }
    if (open) total += end - start;
    start = s, end = e, open = true;
  }
  return open ? total + end - start : total;
}

// Exposed communication per step on the two-device reconstruction, cuBLAS's split-K reduction
// standing in for a communication kernel (no real trace here has NCCL): computed here from the
// JSON — each step's work found by its launch (same process, launch inside the step), per device
// the union of all of it less the union of its other work — against kprof's.
TEST(StepBudget, ExposedCommunicationPerStepAndDevice) {
  const std::string file = "h200/tracer_two_device.json.gz";
  analysis::StageTable stages;
  stages.rules.push_back({"communication", "splitKreduce", std::make_shared<RE2>("splitKreduce")});
  BudgetBuilder builder(&stages);
  importers::read_chrome_trace(data_path(file), builder);
  Budget budget = builder.finish("", {});
  nlohmann::json trace = load(file);
  struct LaunchAt {
    double time;
    std::int64_t pid;
  };
  std::map<std::int64_t, LaunchAt> launches;
  std::vector<std::tuple<double, double, std::int64_t>> steps;
  for (const auto& e : trace["traceEvents"]) {
    std::string cat = e.value("cat", ""), name = e.value("name", "");
    if ((cat == "cuda_runtime" || cat == "cuda_driver") && e["args"].contains("correlation") &&
        (name.find("LaunchKernel") != std::string::npos ||
         name.find("GraphLaunch") != std::string::npos ||
         name.find("Memcpy") != std::string::npos || name.find("Memset") != std::string::npos)) {
      launches[e["args"]["correlation"].get<std::int64_t>()] = {e["ts"].get<double>(),
                                                                e["pid"].get<std::int64_t>()};
    }
    if (cat == "user_annotation" && name.rfind("ProfilerStep#", 0) == 0) {
      steps.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>(),
                         e["pid"].get<std::int64_t>());
    }
  }
  std::sort(steps.begin(), steps.end());
  ASSERT_EQ(budget.steps.size(), steps.size());
  double total = 0;
  for (size_t i = 0; i < steps.size(); ++i) {
    auto [start, end, pid] = steps[i];
    std::map<std::int64_t, std::vector<std::pair<double, double>>> all, other;
    for (const auto& e : trace["traceEvents"]) {
      std::string cat = e.value("cat", "");
      if (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset") continue;
      auto launch = launches.find(e["args"].value("correlation", std::int64_t{-1}));
      if (launch == launches.end() || launch->second.pid != pid || launch->second.time < start ||
          launch->second.time > end) {
        continue;
      }
      std::int64_t device = e["args"]["device"].get<std::int64_t>();
      std::pair<double, double> interval{e["ts"].get<double>(),
                                         e["ts"].get<double>() + e["dur"].get<double>()};
      all[device].push_back(interval);
      if (cat != "kernel" ||
          e["name"].get<std::string>().find("splitKreduce") == std::string::npos) {
        other[device].push_back(interval);
      }
    }
    const StepBudget& step = budget.steps[i];
    ASSERT_EQ(step.devices.size(), all.size()) << step.name;
    for (const DeviceBudget& d : step.devices) {
      double expected = union_length(all[d.device]) - union_length(other[d.device]);
      EXPECT_NEAR(d.exposed_communication_us, expected, 1e-6)
          << step.name << " device " << d.device;
      total += expected;
    }
  }
  EXPECT_GT(total, 0);
  EXPECT_NEAR(budget.total_exposed_communication_us, total, 1e-6 * total);
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
