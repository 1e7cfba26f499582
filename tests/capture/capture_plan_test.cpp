// The capture plan (issue 41): the launches a filter matches in a real trace (counted here by
// hand from the trace's own events, in Python, when the test was written: see each figure), the
// model's arithmetic against its formula worked by hand, the limits, and the proposal that fits.
#include "capture/capture_plan.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "capture/verbs.h"
#include "common/error.h"
#include "pipeline/plan_trace.h"
#include "support/test_data.h"

namespace kprof::capture {
namespace {

using testing::data_path;

// tools/tracer/workload.py's 4-layer decode under kprof's tracer, 50 ProfilerStep# NVTX ranges.
// By hand (the trace's kernel events whose launch call, by correlation id, lies inside a
// ProfilerStep range): 8,800 kernel launches in the steps, 176 a step; of them
//   nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT        1,600 (32 a step), mean 7.447 us, max 10.688
//   nvjet_sm90_tst_64x8_64x16_2x1_v_bz_TNT          800 (16 a step), mean 10.471 us, max 11.808
//   nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT   800 (16 a step), mean 11.189 us, max 12.704
// and the ranges last 3.004 ms on average.
const char* kTracerDecode = "h200/tracer_eager_decode.json.gz";

const pipeline::PlanTraceKernel* kernel_named(const pipeline::PlanTrace& trace,
                                              const std::string& name) {
  for (const auto& kernel : trace.kernels)
    if (kernel.name == name) return &kernel;
  return nullptr;
}

TEST(PlanTrace, CountsTheFiltersLaunchesPerStepInARealTrace) {
  pipeline::PlanTrace trace =
      pipeline::read_plan_trace(data_path(kTracerDecode), {"kprof"}, "nvjet", "", "");
  EXPECT_EQ(trace.steps, 50u);
  EXPECT_EQ(trace.kernel_launches, 8800u);
  ASSERT_EQ(trace.kernels.size(), 3u);
  EXPECT_EQ(trace.launches.size(), 3200u);
  const auto* four = kernel_named(trace, "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_TNT");
  ASSERT_NE(four, nullptr);
  EXPECT_EQ(four->launches, 1600u);
  EXPECT_DOUBLE_EQ(four->launches_per_step, 32);
  EXPECT_EQ(four->most_in_a_step, 32u);
  EXPECT_NEAR(four->mean_us, 7.447, 0.001);
  EXPECT_NEAR(four->max_us, 10.688, 0.001);
  const auto* split = kernel_named(trace, "nvjet_sm90_tst_64x8_64x16_4x1_v_bz_splitK_TNT");
  ASSERT_NE(split, nullptr);
  EXPECT_EQ(split->launches, 800u);
  EXPECT_NEAR(split->mean_us, 11.189, 0.001);
  // The step's wall runs from its range's start to the later of its end and its last GPU work:
  // at least the range.
  EXPECT_GE(trace.mean_step_wall_us, 3003.5);
  EXPECT_LT(trace.mean_step_wall_us, 3300);
  // Launches keep the program's order within a step: 64 nvjet launches in each.
  EXPECT_EQ(trace.launches.front().step, 0u);
  EXPECT_EQ(trace.launches[63].step, 0u);
  EXPECT_EQ(trace.launches[64].step, 1u);
}

// The PyTorch profiler's trace of an 8-layer batch-1 decode step (5 ProfilerStep# ranges), by hand
// as above: 240 kernel launches in the steps; nvjet_sm90_tst_128x8_64x12_2x1_v_bz_TNT 40 (8 a
// step), mean 33.766 us, max 35.04; its splitK twin 40, mean 33.713 us, max 34.72.
TEST(PlanTrace, ReadsThePyTorchProfilersTraceToo) {
  pipeline::PlanTrace trace = pipeline::read_plan_trace(
      data_path("h200/budget_eager_decode.json.gz"), {"kprof"}, "nvjet", "", "");
  EXPECT_EQ(trace.steps, 5u);
  EXPECT_EQ(trace.kernel_launches, 240u);
  ASSERT_EQ(trace.kernels.size(), 2u);
  const auto* plain = kernel_named(trace, "nvjet_sm90_tst_128x8_64x12_2x1_v_bz_TNT");
  ASSERT_NE(plain, nullptr);
  EXPECT_EQ(plain->launches, 40u);
  EXPECT_DOUBLE_EQ(plain->launches_per_step, 8);
  EXPECT_NEAR(plain->mean_us, 33.766, 0.001);
  EXPECT_NEAR(plain->max_us, 35.04, 0.001);
  const auto* split = kernel_named(trace, "nvjet_sm90_tst_128x8_64x12_2x1_v_bz_splitK_TNT");
  ASSERT_NE(split, nullptr);
  EXPECT_NEAR(split->mean_us, 33.713, 0.001);
}

TEST(PlanTrace, MatchesNcusFunctionNameNotTheNamespace) {
  // ncu's default name base is the function name: "^vectorized_elementwise" matches
  // at::native::vectorized_elementwise_kernel<…> there; the demangled base needs the namespace.
  pipeline::PlanTrace by_function = pipeline::read_plan_trace(
      data_path(kTracerDecode), {"kprof"}, "^vectorized_elementwise_kernel$", "", "");
  EXPECT_FALSE(by_function.launches.empty());
  pipeline::PlanTrace by_demangled = pipeline::read_plan_trace(
      data_path(kTracerDecode), {"kprof"}, "^vectorized_elementwise_kernel$", "demangled", "");
  EXPECT_TRUE(by_demangled.launches.empty());
  EXPECT_FALSE(by_demangled.closest_names.empty());
}

TEST(PlanTrace, ABadFilterIsAUsageError) {
  EXPECT_THROW(pipeline::read_plan_trace(data_path(kTracerDecode), {"kprof"}, "(", "", ""),
               UsageError);
}

// One kernel of 100 us, 4 launches a step, 10 steps of 2 ms (and a long one first in each).
pipeline::PlanTrace small_trace(double long_kernel_us = 0) {
  pipeline::PlanTrace trace;
  trace.path = "t.json";
  trace.steps = 10;
  trace.mean_step_wall_us = 2000;
  trace.kernels.push_back({"k_gemm", "k_gemm", 40, 4, 4, 100, 100});
  if (long_kernel_us > 0)
    trace.kernels.push_back({"k_long", "k_long", 10, 1, 1, long_kernel_us, long_kernel_us});
  for (std::size_t step = 0; step < 10; ++step) {
    // The long kernel first: one launch of the filter would profile it.
    if (long_kernel_us > 0) trace.launches.push_back({1, step, long_kernel_us});
    for (int i = 0; i < 4; ++i) trace.launches.push_back({0, step, 100});
  }
  trace.kernel_launches = trace.launches.size();
  return trace;
}

CaptureSpec full(std::int64_t count) {
  CaptureSpec spec;
  spec.preset = Preset::kFull;
  spec.kernel_regex = "k_";
  spec.launch_count = count;
  spec.ncu_version = NcuVersion{2025, 3, 1};
  return spec;
}

TEST(CapturePlan, ReplayIsPassesTimesDurationPlusSaveAndRestore) {
  PlanLimits limits;
  limits.resident_gb = 40;
  limits.device_gb = 141;
  CapturePlan plan = plan_capture(small_trace(), full(5), limits);
  // 38 × (100 us + 0.09 s + 40 GB × 0.0013 s/GB) = 38 × 0.1421 s = 5.3998 s a launch.
  double replay = 38 * (100e-6 + 0.09 + 40 * 0.0013);
  EXPECT_EQ(plan.cost.passes.passes, 38);
  EXPECT_TRUE(plan.cost.passes.measured);
  EXPECT_NEAR(plan.cost.replay_s_longest, replay, 1e-9);
  EXPECT_EQ(plan.cost.launches, 5);
  // Four launches in the first step, one in the second: the longest stall is four replays.
  EXPECT_NEAR(plan.cost.longest_stall_s, 4 * replay, 1e-9);
  // 3 s attach + 5 replays + 2 steps of 2 ms.
  EXPECT_NEAR(plan.cost.ncu_wall_s, 3 + 5 * replay + 2 * 0.002, 1e-9);
  EXPECT_FALSE(plan.cost.host_backup);
  EXPECT_FALSE(plan.over);  // no limit given but the memory, which fits
}

TEST(CapturePlan, AProbeOverItsBudgetGetsFewerLaunches) {
  PlanLimits limits;
  ProbeBudget readiness;
  readiness.probe = "readiness";
  readiness.period_s = 5;
  readiness.failure_threshold = 3;  // 15 s
  limits.probes.push_back(readiness);
  CapturePlan plan = plan_capture(small_trace(), full(5), limits);
  double replay = 38 * (100e-6 + 0.09);                      // 3.4238 s, nothing resident
  EXPECT_NEAR(plan.cost.longest_stall_s, 4 * replay, 1e-9);  // 13.7 s: fits 15 s
  EXPECT_FALSE(plan.over);
  readiness.period_s = 3;  // 9 s: two launches (6.8 s) fit, three (10.3 s) do not
  limits.probes = {readiness};
  plan = plan_capture(small_trace(), full(5), limits);
  ASSERT_TRUE(plan.over);
  ASSERT_EQ(plan.checks.size(), 1u);
  EXPECT_EQ(plan.checks[0].limit, "readiness_probe");
  EXPECT_DOUBLE_EQ(plan.checks[0].allowed, 9);
  ASSERT_TRUE(plan.proposal);
  EXPECT_EQ(plan.proposal_kind, "fewer launches");
  EXPECT_EQ(plan.proposal->spec.launch_count, 2);
  EXPECT_EQ(plan.proposal->spec.preset, Preset::kFull);
  EXPECT_NEAR(plan.proposal_cost->longest_stall_s, 2 * replay, 1e-9);
  EXPECT_FALSE(plan.chosen);  // no --budget: proposed, not chosen
}

TEST(CapturePlan, WhenOneLaunchOfFullIsTooLongALighterPresetFits) {
  PlanLimits limits;
  limits.slo_p99_ms = 3000;  // full's 3.42 s a launch is over; triage's 14 × 0.0901 = 1.26 s fits
  CapturePlan plan = plan_capture(small_trace(), full(5), limits);
  ASSERT_TRUE(plan.over);
  ASSERT_TRUE(plan.proposal);
  EXPECT_EQ(plan.proposal_kind, "lighter preset");
  EXPECT_EQ(plan.proposal->spec.preset, Preset::kTriage);
  // Two triage launches in one step: 2.52 s ≤ 3 s; three: 3.78 s.
  EXPECT_EQ(plan.proposal->spec.launch_count, 2);
}

TEST(CapturePlan, ALongKernelIsLeftOutWhenTheOthersFit) {
  PlanLimits limits;
  limits.slo_p99_ms = 4000;
  // k_long: 38 × (0.2 s + 0.09 s) = 11 s a launch, never within 4 s; k_gemm 3.42 s is.
  CapturePlan plan = plan_capture(small_trace(200000), full(5), limits);
  ASSERT_TRUE(plan.over);
  ASSERT_TRUE(plan.proposal);
  EXPECT_EQ(plan.proposal_kind, "fewer kernels");
  EXPECT_EQ(plan.proposal->spec.kernel_regex, "^(?:k_gemm)$");
  EXPECT_EQ(plan.proposal->spec.launch_count, 1);
}

TEST(CapturePlan, AnEngineHoldingMostOfTheDeviceBacksUpToHostAndOnlyTheSisterFits) {
  PlanLimits limits;
  limits.device_gb = 141;
  limits.resident_gb = 0.92 * 141;  // vLLM's --gpu-memory-utilization 0.92
  limits.memory_from = "test";
  limits.kubernetes = true;
  ProbeBudget liveness;
  liveness.probe = "liveness";
  limits.probes.push_back(liveness);  // 10 s × 3
  CapturePlan plan = plan_capture(small_trace(), full(1), limits);
  EXPECT_TRUE(plan.cost.host_backup);
  // 38 × 100 us + 129.72 GB × 0.4 s/GB = 51.89 s.
  EXPECT_NEAR(plan.cost.replay_s_longest, 38 * 100e-6 + 0.92 * 141 * 0.4, 1e-9);
  ASSERT_TRUE(plan.over);
  std::vector<std::string> over;
  for (const LimitCheck& c : plan.checks)
    if (c.over) over.push_back(c.limit);
  EXPECT_EQ(over, (std::vector<std::string>{"liveness_probe", "device_memory"}));
  ASSERT_TRUE(plan.proposal);
  EXPECT_EQ(plan.proposal_kind, "sister deployment");
  EXPECT_TRUE(plan.proposal->sister);
  EXPECT_NEAR(*plan.proposal->resident_gb, 0.45 * 141, 1e-9);
  EXPECT_FALSE(plan.proposal_cost->host_backup);
  // Without Kubernetes there is no sister to offer: nothing fits.
  limits.kubernetes = false;
  EXPECT_FALSE(plan_capture(small_trace(), full(1), limits).proposal);
}

TEST(CapturePlan, ABudgetChoosesTheLargestCaptureThatFitsIt) {
  PlanLimits limits;
  limits.budget_s = 20;  // 3 s + n × 3.4238 s + steps: n = 4 (16.7 s); 5 is 20.1 s
  CapturePlan plan = plan_capture(small_trace(), full(10), limits);
  ASSERT_TRUE(plan.over);
  ASSERT_TRUE(plan.proposal);
  EXPECT_TRUE(plan.chosen);
  EXPECT_EQ(plan.proposal->spec.launch_count, 4);
  nlohmann::json bundle = plan_for_bundle(plan);
  EXPECT_EQ(bundle["capture"]["launch_count"], 4);
  EXPECT_NEAR(bundle["predicted_ncu_wall_s"].get<double>(), 3 + 4 * 38 * (100e-6 + 0.09) + 0.002,
              0.001);
}

TEST(CapturePlan, PassesAreEstimatedForAnotherVersionAndForCustomLists) {
  CaptureSpec spec = full(1);
  spec.ncu_version = NcuVersion{2026, 1, 0};
  PassFigure other = preset_passes(spec);
  EXPECT_EQ(other.passes, 38);
  EXPECT_FALSE(other.measured);
  EXPECT_NE(other.basis.find("estimated"), std::string::npos) << other.basis;
  spec.preset = Preset::kCustom;
  spec.sections = {"MemoryWorkloadAnalysis"};
  EXPECT_FALSE(preset_passes(spec).measured);
  spec.preset = Preset::kTriage;
  spec.ncu_version = NcuVersion{2025, 3, 1};
  EXPECT_EQ(preset_passes(spec).passes, 14);
  EXPECT_TRUE(preset_passes(spec).measured);
}

TEST(CapturePlan, TheVerbRefusesAFilterThatMatchesNothingNamingWhatThereIs) {
  PlanOptions options;
  options.trace = data_path(kTracerDecode);
  options.capture.kernel_regex = "no_such_kernel";
  try {
    plan(options, {"kprof", "plan"});
    FAIL() << "a filter matching nothing was planned";
  } catch (const NothingSelected& error) {
    EXPECT_NE(std::string(error.what()).find("8800 kernel launches"), std::string::npos)
        << error.what();
  }
  options.trace.clear();
  EXPECT_THROW(plan(options, {"kprof", "plan"}), UsageError);
}

TEST(CapturePlan, TheVerbExitsOverALimitAndProposes) {
  PlanOptions options;
  options.trace = data_path(kTracerDecode);
  options.capture = full(40);
  options.capture.kernel_regex = "nvjet";
  ProbeBudget liveness;
  liveness.probe = "liveness";
  options.limits.probes.push_back(liveness);
  pipeline::Answer answer = plan(options, {"kprof", "plan"});
  EXPECT_EQ(answer.code, ExitCode::kPlanOverLimit);
  EXPECT_NE(answer.out.find("OVER"), std::string::npos) << answer.out;
  EXPECT_NE(answer.out.find("proposed (fewer launches)"), std::string::npos) << answer.out;
  options.limits.budget_s = 100;
  answer = plan(options, {"kprof", "plan"});
  EXPECT_EQ(answer.code, ExitCode::kOk);
  EXPECT_NE(answer.out.find("chosen (fewer launches)"), std::string::npos) << answer.out;
}

}  // namespace
}  // namespace kprof::capture
