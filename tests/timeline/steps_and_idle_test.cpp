// Issue 43, "Steps and idle": which annotations are steps, and whose is the time between them.
// The fixtures (tests/timeline/data, written by its make_step_traces.py) reproduce two public
// traces' shapes: a tensor-parallel vLLM trace whose only repeated top-level annotation wraps one
// side-stream all-gather, and vLLM V1 decode steps whose sampler is launched after each step's
// range closes. The expected figures are read here from the JSON with nlohmann (launches matched
// to GPU work by correlation id, intervals merged here), not taken from kprof.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "importers/common/read_trace.h"
#include "render/trace_render.h"
#include "support/test_data.h"
#include "timeline/step_budget.h"

namespace kprof::timeline {
namespace {

std::string fixture(const std::string& name) {
  return std::string(KPROF_TESTS_DIR) + "/timeline/data/" + name;
}

Budget budget_of(const std::string& path, bool keep_timeline = false) {
  BudgetBuilder builder;
  if (keep_timeline) builder.keep_timeline();
  importers::read_trace(path, builder);
  return builder.finish("", {});
}

struct Interval {
  double start, end;
};

double union_length(std::vector<Interval> xs) {
  std::sort(xs.begin(), xs.end(), [](auto a, auto b) { return a.start < b.start; });
  double total = 0, from = 0, to = 0;
  bool open = false;
  for (auto [s, e] : xs) {
    if (open && s <= to) {
      to = std::max(to, e);
      continue;
    }
    if (open) total += to - from;
    from = s, to = e, open = true;
  }
  return open ? total + to - from : 0;
}

// The trace read plainly: launch call times by correlation id, GPU work, CPU annotations.
struct Plain {
  std::map<std::int64_t, double> launch_at;
  struct Work {
    double start, end;
    std::int64_t correlation;
  };
  std::vector<Work> work;
  struct Range {
    std::string name;
    double start, end;
  };
  std::vector<Range> annotations;
};

Plain read_plain(const std::string& path) {
  nlohmann::json trace = nlohmann::json::parse(testing::read_gzip_text(path));
  Plain plain;
  for (const auto& e : trace["traceEvents"]) {
    std::string cat = e.value("cat", "");
    if (e.value("ph", "") != "X" || !e.contains("dur") || !e["dur"].is_number()) continue;
    double ts = e["ts"].get<double>(), end = ts + e["dur"].get<double>();
    if (cat == "cuda_runtime" && e["args"].contains("correlation")) {
      plain.launch_at[e["args"]["correlation"].get<std::int64_t>()] = ts;
    } else if (cat == "kernel" || cat == "gpu_memcpy") {
      plain.work.push_back({ts, end, e["args"]["correlation"].get<std::int64_t>()});
    } else if (cat == "user_annotation") {
      plain.annotations.push_back({e["name"].get<std::string>(), ts, end});
    }
  }
  std::sort(plain.annotations.begin(), plain.annotations.end(),
            [](const auto& a, const auto& b) { return a.start < b.start; });
  return plain;
}

// The step fallback: the only repeated top-level annotation wraps one all-gather launch on a side
// stream per iteration (10 ranges, 10 launches), while the model's kernels are launched outside
// any annotation. kprof took the ranges for the steps and judged the device "dependency-bound",
// busy 24 % of their wall time, on a device busy most of the trace. The ranges hold under 5 % of
// the GPU time, short of the half a step annotation must hold: the whole trace is budgeted, and
// the choice names the annotation turned down with its share.
TEST(StepsAndIdle, StepFallbackTurnsDownAnAnnotationHoldingLittleGpuWork) {
  const std::string path = fixture("tp_side_stream_allgather.json");
  Plain plain = read_plain(path);
  double trace_gpu_time = 0, inside_gpu_time = 0, extent_gpu_time = 0;
  std::size_t ranges = 0, inside_launches = 0;
  for (const auto& a : plain.annotations) ranges += a.name == "tp_all_gather";
  double first_start = plain.annotations.front().start, last_end = plain.annotations.back().end;
  for (const auto& [correlation, at] : plain.launch_at) {
    for (const auto& a : plain.annotations) inside_launches += at >= a.start && at <= a.end;
  }
  std::vector<Interval> all;
  for (const auto& w : plain.work) {
    trace_gpu_time += w.end - w.start;
    all.push_back({w.start, w.end});
    double at = plain.launch_at.at(w.correlation);
    if (at >= first_start && at <= last_end) extent_gpu_time += w.end - w.start;
    for (const auto& a : plain.annotations) {
      if (at >= a.start && at <= a.end) inside_gpu_time += w.end - w.start;
    }
  }
  ASSERT_EQ(ranges, 10u);
  ASSERT_EQ(inside_launches, 10u);
  ASSERT_LT(inside_gpu_time / extent_gpu_time, 0.1);

  Budget budget = budget_of(path);
  ASSERT_EQ(budget.steps.size(), 1u);
  EXPECT_EQ(budget.steps[0].name, "trace");
  const StepChoice& choice = budget.step_choice;
  EXPECT_EQ(choice.method, "whole trace");
  ASSERT_EQ(choice.candidates.size(), 1u);
  const StepCandidate& candidate = choice.candidates[0];
  EXPECT_EQ(candidate.annotation, "tp_all_gather");
  EXPECT_EQ(candidate.ranges, 10u);
  EXPECT_EQ(candidate.launches, 10u);
  EXPECT_EQ(candidate.gpu_activities, 10u);
  EXPECT_NEAR(candidate.gpu_time_us, inside_gpu_time, 1e-6);
  EXPECT_NEAR(candidate.extent_gpu_time_us, extent_gpu_time, 1e-6);
  EXPECT_NEAR(candidate.gpu_time_share, inside_gpu_time / extent_gpu_time, 1e-9);
  EXPECT_FALSE(candidate.accepted);
  EXPECT_NEAR(choice.trace_gpu_time_us, trace_gpu_time, 1e-6);
  EXPECT_NE(choice.reason.find("\"tp_all_gather\""), std::string::npos) << choice.reason;
  EXPECT_NE(budget.step_selector.find("under the 50%"), std::string::npos) << budget.step_selector;
  // The whole trace's busy time is the union of all its work; no dependency verdict on a device
  // that was busy.
  EXPECT_NEAR(budget.total_busy_us, union_length(all), 1e-6);
  EXPECT_GT(budget.total_busy_us / budget.total_wall_span_us, 0.8);
  EXPECT_NE(budget.overall, StepVerdict::kDependencyBound);
  EXPECT_EQ(budget.total_dependency_wait_us, 0);
}

// The fallback still takes a repeated annotation that holds the work: the real H200 trace of
// dependency_step ranges (tools/traces/waits_and_graphs.py), accepted with its share, which is
// computed here from the JSON. The program was profiled whole: the work before the first range
// (its inputs made and copied in) does not count against the ranges.
TEST(StepsAndIdle, StepFallbackTakesARepeatedAnnotationHoldingTheWork) {
  const std::string path = testing::data_path("h200/trace_dependency_wait.json.gz");
  Plain plain = read_plain(path);
  std::vector<Plain::Range> ranges;
  for (const auto& a : plain.annotations) {
    if (a.name == "dependency_step") ranges.push_back(a);
  }
  ASSERT_EQ(ranges.size(), 5u);
  double extent = 0, inside = 0;
  for (const auto& w : plain.work) {
    auto launch = plain.launch_at.find(w.correlation);
    if (launch == plain.launch_at.end()) continue;
    double at = launch->second;
    if (at >= ranges.front().start && at <= ranges.back().end) extent += w.end - w.start;
    for (const auto& a : ranges) {
      if (at >= a.start && at <= a.end) inside += w.end - w.start;
    }
  }
  Budget budget = budget_of(path);
  EXPECT_EQ(budget.step_choice.method, "repeated annotation");
  ASSERT_FALSE(budget.step_choice.candidates.empty());
  const StepCandidate& chosen = budget.step_choice.candidates[0];
  EXPECT_EQ(chosen.annotation, "dependency_step");
  EXPECT_TRUE(chosen.accepted);
  EXPECT_NEAR(chosen.gpu_time_share, inside / extent, 1e-9);
  EXPECT_GE(chosen.gpu_time_share, kMinStepGpuTimeShare);
  EXPECT_EQ(budget.steps.size(), 5u);
}

// GPU work launched between step annotations: vLLM V1 launches its sampler after each
// execute_context_… range closes, and the host runs ahead, so each step opens while the previous
// sampler still runs and its input copy waits behind it (a cudaStreamWaitEvent on the thread).
// kprof booked those 0.9 ms as each step's dependency wait on a device that never idled more than
// 5 us, and the sampler appeared in no figure. Now the sampler is the step's it follows (its busy
// time; the last step's too), the step after starts when it ends, and the sampler running before
// the first step (the window opened mid-run) is other work, not idle.
TEST(StepsAndIdle, WorkBetweenStepAnnotationsIsBusyTimeOfTheStepItFollows) {
  const std::string path = fixture("vllm_v1_sampler_between_steps.json");
  Plain plain = read_plain(path);
  std::vector<Plain::Range> steps;
  for (const auto& a : plain.annotations) {
    if (a.name.rfind("execute_context_", 0) == 0) steps.push_back(a);
  }
  ASSERT_EQ(steps.size(), 6u);
  // Per step: the work launched inside its range or after it before the next step opened.
  std::vector<std::vector<Interval>> expected_work(steps.size());
  std::vector<std::size_t> between(steps.size(), 0);
  std::size_t outside = 0;
  std::vector<Interval> before_first;
  // The last step has no next: it takes what is launched for as long after its range as the
  // longest stretch between an earlier step's range and the next step.
  double longest_between = 0;
  for (std::size_t k = 0; k + 1 < steps.size(); ++k) {
    longest_between = std::max(longest_between, steps[k + 1].start - steps[k].end);
  }
  for (const auto& w : plain.work) {
    double at = plain.launch_at.at(w.correlation);
    bool claimed = false;
    for (std::size_t k = 0; k < steps.size(); ++k) {
      double next = k + 1 < steps.size() ? steps[k + 1].start : steps[k].end + longest_between;
      bool inside = at >= steps[k].start && at <= steps[k].end;
      bool after = next > 0 && at > steps[k].end && at < next;
      if (inside || after) {
        expected_work[k].push_back({w.start, w.end});
        between[k] += after;
        claimed = true;
      }
    }
    if (!claimed) {
      ++outside;
      if (at < steps[0].start) before_first.push_back({w.start, w.end});
    }
  }
  Budget budget = budget_of(path, true);
  ASSERT_EQ(budget.steps.size(), steps.size());
  std::size_t between_total = 0;
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const StepBudget& step = budget.steps[k];
    SCOPED_TRACE(k);
    EXPECT_EQ(step.gpu_activities, expected_work[k].size());
    EXPECT_EQ(step.between_steps_activities, between[k]);
    EXPECT_NEAR(step.gpu_busy_us, union_length(expected_work[k]), 1e-6);
    // Never a wait or a host gap on a device that was busy: the copy followed the previous
    // step's sampler 5 us after it ended.
    EXPECT_EQ(step.dependency_wait_us, 0);
    EXPECT_EQ(step.verdict, StepVerdict::kKernelBound);
    between_total += between[k];
  }
  EXPECT_EQ(between_total, 48u);  // 6 samplers of 8 kernels, the last step's too
  EXPECT_EQ(budget.between_steps_activities, between_total);
  EXPECT_EQ(budget.outside_steps_activities, outside);
  // The first step opened while the sampler launched before it ran: from the step's start to
  // that sampler's last end the device ran other work; the 9 us after it, before the copy, are
  // the device's own (the copy's launch had long returned).
  ASSERT_FALSE(before_first.empty());
  double last_end = 0;
  for (auto [s, e] : before_first) last_end = std::max(last_end, e);
  EXPECT_NEAR(budget.steps[0].other_work_us, last_end - steps[0].start, 1e-6);
  EXPECT_NEAR(budget.steps[0].host_gap_us, 0, 1e-9);
  EXPECT_EQ(budget.overall, StepVerdict::kKernelBound);
  // The intervals kept for drawing add up to the figures, other work as its own kind.
  for (const StepBudget& step : budget.steps) {
    double other = 0;
    for (const IdleInterval& idle : step.idle) {
      if (idle.kind == IdleKind::kOtherWork) other += idle.to_us - idle.from_us;
    }
    EXPECT_NEAR(other, step.other_work_us, 1e-6);
  }
}

// Copy-bound is not kernel-bound: a device kept busy by host-to-device copies (nsys-ai's two-GPU
// export: 99.3 % busy, kernels alone 2.3 %) was called kernel-bound, "faster kernels shorten
// them". More than half of its busy time ran copies and no kernel: transfer-bound, with the
// copies' share computed here from the JSON (busy less the kernels' union).
TEST(StepsAndIdle, CopyBoundIsTransferBoundNotKernelBound) {
  const std::string path = fixture("copy_bound_htod.json");
  nlohmann::json trace = nlohmann::json::parse(testing::read_gzip_text(path));
  std::vector<Interval> all, kernels;
  for (const auto& e : trace["traceEvents"]) {
    std::string cat = e.value("cat", "");
    if (cat != "kernel" && cat != "gpu_memcpy") continue;
    Interval interval{e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>()};
    all.push_back(interval);
    if (cat == "kernel") kernels.push_back(interval);
  }
  double busy = union_length(all), copies_alone = busy - union_length(kernels);
  ASSERT_GT(copies_alone, 0.9 * busy);
  Budget budget = budget_of(path);
  ASSERT_EQ(budget.steps.size(), 1u);
  EXPECT_NEAR(budget.total_busy_us, busy, 1e-6);
  EXPECT_NEAR(budget.total_busy_us - budget.total_kernel_busy_us, copies_alone, 1e-6);
  EXPECT_EQ(budget.steps[0].verdict, StepVerdict::kTransferBound);
  EXPECT_EQ(budget.overall, StepVerdict::kTransferBound);
  EXPECT_EQ(step_verdict_name(budget.overall), "transfer-bound");
  // Kernels that fill the device stay kernel-bound: the real H200 prefill trace.
  BudgetBuilder prefill;
  importers::read_trace(testing::data_path("h200/budget_eager_prefill4096.json.gz"), prefill);
  EXPECT_EQ(prefill.finish("", {}).overall, StepVerdict::kKernelBound);
}

// The host gap that is compilation: a short test profiled whole (nvFuser's gtest exports) spends
// its window in KernelExecutor::compileFusion (GpuLower::lower, NVRTC). kprof advised batching the
// launches; the ranges name one-time compilation, whose time (the outermost ranges' union within
// the wall span, computed here from the annotations) the budget reports and the advice names.
TEST(StepsAndIdle, TheHostGapThatIsCompilationIsNamedAsSuch) {
  const std::string path = fixture("compile_then_run.json");
  Plain plain = read_plain(path);
  double first = plain.work.front().start, last = 0;
  for (const auto& w : plain.work) {
    first = std::min(first, w.start);
    last = std::max(last, w.end);
  }
  std::vector<Interval> compiling;
  for (const auto& a : plain.annotations) {
    bool names_compilation = a.name.find("compileFusion") != std::string::npos ||
                             a.name.find("NVRTC") != std::string::npos ||
                             a.name.find("GpuLower") != std::string::npos;
    if (names_compilation) {
      compiling.push_back({std::max(a.start, first), std::min(a.end, last)});
    }
  }
  ASSERT_EQ(compiling.size(), 3u);
  Budget budget = budget_of(path);
  ASSERT_EQ(budget.steps.size(), 1u);
  EXPECT_EQ(budget.overall, StepVerdict::kHostBound);
  EXPECT_NEAR(budget.compilation_us, union_length(compiling), 1e-6);
  ASSERT_EQ(budget.compilation_ranges.size(), 1u);  // the nested ranges are inside it
  EXPECT_EQ(budget.compilation_ranges[0].name, "KernelExecutor::compileFusion");
  EXPECT_EQ(budget.compilation_ranges[0].count, 1u);
  render::TraceSource source{path, {"kprof", "budget", path}, {}};
  std::string text = render::budget_text(budget, {}, source);
  EXPECT_NE(text.find("one-time compilation and warm-up (KernelExecutor::compileFusion"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("batch the launches"), std::string::npos) << text;
}

}  // namespace
}  // namespace kprof::timeline
