// Dependency waits, graph captures and repeated step annotations in kprof budget. The SGLang
// shape is a small trace written here with the timestamps of AMD-AGI/TraceLens's
// tests/traces/inference/sglang_qwen3-8b_decode trace (MI300X): the device idles 463 ms with the
// step's kernels enqueued behind a hipStreamWaitEvent while the host sits in a
// hipMemcpyWithStream. The expected split is worked out by hand from those timestamps below. The
// capture and repeated-step cases read real H200 traces (tools/traces/waits_and_graphs.py),
// checked against an independent reading of the JSON.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "importers/chrome_trace/chrome_trace_reader.h"
#include "importers/common/read_trace.h"
#include "support/test_data.h"
#include "timeline/step_budget.h"

namespace kprof::timeline {
namespace {

std::string write_trace(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

// Relative microseconds as in the TraceLens trace (host pid/tid 251, GPU device 9). The wait
// call names no stream (HIP's runtime events never do).
std::string sglang_shape(const std::string& wait_event) {
  return R"json({"traceEvents": [
  {"ph": "X", "cat": "user_annotation", "name": "execute_context_0(0)_generation_32(32)",
   "pid": 251, "tid": 251, "ts": 0, "dur": 465716.6},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 251, "tid": 251,
   "ts": 71.2, "dur": 4.7, "args": {"correlation": 92155}},
  {"ph": "X", "cat": "kernel", "name": "elementwise_kernel_with_index", "pid": 9, "tid": 2,
   "ts": 80.589, "dur": 4.246, "args": {"device": 9, "stream": 2, "correlation": 92155}},
  )json" +
         wait_event + R"json(,
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 251, "tid": 251,
   "ts": 123.1, "dur": 5.4, "args": {"correlation": 92158}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 251, "tid": 251,
   "ts": 176.4, "dur": 7.9, "args": {"correlation": 92159}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipMemcpyWithStream", "pid": 251, "tid": 251,
   "ts": 361.701, "dur": 463063.75, "args": {"correlation": 92163}},
  {"ph": "X", "cat": "kernel", "name": "resolve_future_token_ids_kernel", "pid": 9, "tid": 3,
   "ts": 463380.24, "dur": 5, "args": {"device": 9, "stream": 3, "correlation": 92158}},
  {"ph": "X", "cat": "kernel", "name": "gather_kernel", "pid": 9, "tid": 3,
   "ts": 463386.9, "dur": 5, "args": {"device": 9, "stream": 3, "correlation": 92159}},
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy DtoH (Device -> Host)", "pid": 9, "tid": 3,
   "ts": 463404.517, "dur": 4.5, "args": {"device": 9, "stream": 3, "correlation": 92163}}
  ]})json";
}

const std::string kHipWait =
    R"json({"ph": "X", "cat": "cuda_runtime", "name": "hipStreamWaitEvent", "pid": 251,
   "tid": 251, "ts": 101.953, "dur": 10.265, "args": {"cid": 200, "correlation": 92156}})json";

Budget budget_of(const std::string& path, const std::string& step = "") {
  BudgetBuilder builder;
  importers::read_chrome_trace(path, builder);
  return builder.finish(step, {});
}

TEST(DependencyWait, TheSglangWaitIsADependencyNotAHostGap) {
  Budget budget = budget_of(write_trace("sglang.json", sglang_shape(kHipWait)));
  ASSERT_EQ(budget.steps.size(), 1u);
  const StepBudget& step = budget.steps[0];
  // The device ran out of work at 80.589 + 4.246 = 84.835. The next kernel's launch returned at
  // 123.1 + 5.4 = 128.5: until then the host was late (43.665 us); from then to the kernel's
  // start at 463,380.24 the kernel was enqueued behind the wait issued at 101.953 (463,251.74
  // us). The two later gaps are under the 20 us floor and keep kprof's rule: 1.66 us before
  // gather_kernel, whose launch had returned, is device-side idle; 12.617 us before the copy,
  // whose call (hipMemcpyWithStream, synchronous) returns only after it, is booked to the host.
  // The step's wall span adds the host's 80.589 us from the annotation's start to the first
  // kernel and its 2,307.583 us from the copy's end (463,409.017) to the annotation's end.
  EXPECT_NEAR(step.dependency_wait_us, 463380.24 - 128.5, 1e-6);
  EXPECT_NEAR(step.idle_before_first_us, 80.589, 1e-6);
  EXPECT_NEAR(step.idle_after_last_us, 465716.6 - 463409.017, 1e-6);
  EXPECT_NEAR(step.host_gap_us,
              80.589 + (128.5 - 84.835) + (463404.517 - 463391.9) + (465716.6 - 463409.017), 1e-6);
  EXPECT_NEAR(step.wall_span_us, 465716.6, 1e-6);
  EXPECT_NEAR(step.device_idle_us, 463386.9 - 463385.24, 1e-6);
  EXPECT_EQ(step.verdict, StepVerdict::kDependencyBound);
  EXPECT_EQ(budget.overall, StepVerdict::kDependencyBound);
  ASSERT_EQ(step.dependency_waits.size(), 1u);
  const DependencyWait& wait = step.dependency_waits[0];
  EXPECT_EQ(wait.device, 9);
  EXPECT_EQ(wait.stream, 3);
  EXPECT_EQ(wait.wait_call, "hipStreamWaitEvent");
  EXPECT_DOUBLE_EQ(wait.wait_call_at_us, 101.953);
  EXPECT_EQ(wait.next_work, "resolve_future_token_ids_kernel");
  // The copy spans the whole wait: the host was waiting for the device.
  EXPECT_EQ(wait.blocking_call, "hipMemcpyWithStream");
}

// Without the wait call the same idle is the host's, as before: nothing says the device waited.
TEST(DependencyWait, NoWaitCallNoDependency) {
  const std::string no_wait =
      R"json({"ph": "X", "cat": "cuda_runtime", "name": "hipEventQuery", "pid": 251,
     "tid": 251, "ts": 101.953, "dur": 1, "args": {"correlation": 92156}})json";
  Budget budget = budget_of(write_trace("no_wait.json", sglang_shape(no_wait)));
  ASSERT_EQ(budget.steps.size(), 1u);
  EXPECT_EQ(budget.steps[0].dependency_wait_us, 0);
  EXPECT_NEAR(budget.steps[0].host_gap_us,
              80.589 + (463380.24 - 84.835) + (463404.517 - 463391.9) + (465716.6 - 463409.017),
              1e-6);
  EXPECT_EQ(budget.steps[0].verdict, StepVerdict::kHostBound);
}

// A wait on another thread is not this launch's.
TEST(DependencyWait, AWaitOnAnotherThreadDoesNotCount) {
  const std::string other_thread =
      R"json({"ph": "X", "cat": "cuda_runtime", "name": "hipStreamWaitEvent", "pid": 251,
     "tid": 252, "ts": 101.953, "dur": 10.265, "args": {"correlation": 92156}})json";
  Budget budget = budget_of(write_trace("other_thread.json", sglang_shape(other_thread)));
  EXPECT_EQ(budget.steps[0].dependency_wait_us, 0);
}

// CUDA with torch.profiler's cuda_sync events: the wait is a GPU row of the waiting stream,
// matched by stream; a wait on another stream does not hold this one back.
TEST(DependencyWait, CudaSyncWaitsAreMatchedByStream) {
  auto sync = [](int stream) {
    return R"json({"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 9,
     "tid": )json" +
           std::to_string(stream) +
           R"json(, "ts": 130, "dur": 0, "args": {"device": 9, "stream": )json" +
           std::to_string(stream) + R"json(, "correlation": 92156}})json";
  };
  Budget same = budget_of(write_trace("sync_same.json", sglang_shape(sync(3))));
  EXPECT_NEAR(same.steps[0].dependency_wait_us, 463380.24 - 128.5, 1e-6);
  EXPECT_EQ(same.steps[0].dependency_waits[0].wait_call, "Stream Wait Event");
  Budget other = budget_of(write_trace("sync_other.json", sglang_shape(sync(5))));
  EXPECT_EQ(other.steps[0].dependency_wait_us, 0);
}

// The real H200 trace of a graph capture and five replays, with no step annotation kprof knows:
// the repeated record_function "replay_step" is taken for the steps, and the capture range,
// asked for by name, is judged a capture and left out of the totals.
TEST(DependencyWait, ReplayStepsAreFoundAndTheCaptureIsToldApart) {
  const std::string file = "h200/trace_graph_capture.json.gz";
  nlohmann::json trace = nlohmann::json::parse(testing::read_gzip_text(testing::data_path(file)));
  // Independent reading: capture windows per thread, launches inside them.
  std::vector<std::pair<double, double>> windows;
  double begin = -1;
  std::size_t replays = 0, captured = 0, graph_launches = 0;
  for (const auto& e : trace["traceEvents"]) {
    std::string name = e.value("name", ""), cat = e.value("cat", "");
    if (cat == "user_annotation" && name == "replay_step") ++replays;
    if (cat != "cuda_runtime") continue;
    if (name.find("BeginCapture") != std::string::npos) begin = e["ts"].get<double>();
    if (name.find("EndCapture") != std::string::npos) {
      windows.emplace_back(begin, e["ts"].get<double>() + e["dur"].get<double>());
    }
  }
  for (const auto& e : trace["traceEvents"]) {
    std::string name = e.value("name", "");
    std::string cat = e.value("cat", "");
    if ((cat != "cuda_runtime" && cat != "cuda_driver") || !e.contains("args") ||
        !e["args"].contains("correlation")) {
      continue;
    }
    bool launch = name.find("LaunchKernel") != std::string::npos ||
                  name.find("GraphLaunch") != std::string::npos ||
                  name.find("Memcpy") != std::string::npos ||
                  name.find("Memset") != std::string::npos;
    graph_launches += name.find("GraphLaunch") != std::string::npos;
    for (auto [from, to] : windows) {
      double ts = e["ts"].get<double>();
      if (launch && ts >= from && ts <= to) ++captured;
    }
  }
  ASSERT_EQ(windows.size(), 1u);
  ASSERT_GT(captured, 10u);
  ASSERT_EQ(replays, 5u);
  Budget found = budget_of(testing::data_path(file));
  ASSERT_EQ(found.steps.size(), 5u);
  EXPECT_NE(found.step_selector.find("\"replay_step\""), std::string::npos) << found.step_selector;
  std::size_t graphs = 0;
  for (const StepBudget& step : found.steps) {
    EXPECT_EQ(step.name, "replay_step");
    EXPECT_EQ(step.captured_launches, 0u);
    graphs += step.graph_launches;
  }
  EXPECT_EQ(graphs, graph_launches);
  Budget capture = budget_of(testing::data_path(file), "^graph_capture$");
  ASSERT_EQ(capture.steps.size(), 1u);
  EXPECT_EQ(capture.steps[0].captured_launches, captured);
  EXPECT_EQ(capture.steps[0].graph_captures, 1u);
  EXPECT_EQ(capture.steps[0].verdict, StepVerdict::kGraphCapture);
  EXPECT_EQ(capture.capture_steps, 1u);
  EXPECT_EQ(capture.total_span_us, 0);
  EXPECT_EQ(capture.overall, StepVerdict::kGraphCapture);
}

// The shape of TraceLens's vllm_decode_full_capture trace (MI300X): a whole trace of vLLM
// capturing its graph — hipStreamBeginCapture, launches that run nothing, EndCapture — beside
// the few kernels launched outside it. No step marker: the whole trace, judged a capture.
TEST(DependencyWait, AWholeTraceOfCaptureIsACaptureNotHostBound) {
  std::string events =
      R"json({"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 5, "tid": 5,
     "ts": 1, "dur": 2, "args": {"correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "warmup_kernel", "pid": 0, "tid": 1, "ts": 5, "dur": 3,
     "args": {"device": 0, "stream": 1, "correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipStreamBeginCapture", "pid": 5, "tid": 5,
     "ts": 10, "dur": 1, "args": {"correlation": 2}})json";
  for (int i = 0; i < 5; ++i) {
    events += R"json(,{"ph": "X", "cat": "cuda_runtime", "name": "hipModuleLaunchKernel",
      "pid": 5, "tid": 5, "ts": )json" +
              std::to_string(20 + 10 * i) + R"json(, "dur": 3, "args": {"correlation": )json" +
              std::to_string(10 + i) + "}}";
  }
  events += R"json(,{"ph": "X", "cat": "cuda_runtime", "name": "hipStreamEndCapture", "pid": 5,
     "tid": 5, "ts": 100, "dur": 2, "args": {"correlation": 30}})json";
  Budget budget =
      budget_of(write_trace("capture.json", R"json({"traceEvents": [)json" + events + "]}"));
  ASSERT_EQ(budget.steps.size(), 1u);
  EXPECT_EQ(budget.steps[0].captured_launches, 5u);
  EXPECT_EQ(budget.steps[0].kernel_launches, 6u);
  EXPECT_EQ(budget.steps[0].graph_captures, 1u);
  EXPECT_EQ(budget.steps[0].verdict, StepVerdict::kGraphCapture);
  EXPECT_EQ(budget.overall, StepVerdict::kGraphCapture);
}

// The real H200 recording of the overlap shape (tools/traces/waits_and_graphs.py dependency):
// each step's second stream waits for an event behind 40 GEMMs of the first, so the waits are
// real but the device never idles behind them — none is booked, whichever reader read them.
TEST(DependencyWait, RealWaitsBehindBusyWorkBookNothing) {
  for (const std::string file :
       {"h200/trace_dependency_wait.json.gz", "h200/nsys_dependency_wait.sqlite"}) {
    BudgetBuilder builder;
    importers::read_trace(testing::data_path(file), builder);
    Budget budget = builder.finish("", {});
    ASSERT_EQ(budget.steps.size(), 5u) << file;
    EXPECT_NE(budget.step_selector.find("\"dependency_step\""), std::string::npos) << file;
    for (const StepBudget& step : budget.steps) {
      EXPECT_EQ(step.dependency_wait_us, 0) << file;
      EXPECT_EQ(step.verdict, StepVerdict::kKernelBound) << file;
    }
  }
}

// BudgetBuilder::keep_timeline(): the idle intervals it keeps are the ones the budget summed,
// placed where the hand-worked split above puts them, and keeping them changes no figure.
TEST(DependencyWait, KeptIdleIntervalsAreTheSglangSplit) {
  std::string path = write_trace("sglang_kept.json", sglang_shape(kHipWait));
  BudgetBuilder builder;
  builder.keep_timeline();
  importers::read_chrome_trace(path, builder);
  Budget kept = builder.finish("", {});
  Budget plain = budget_of(path);
  ASSERT_EQ(kept.steps.size(), 1u);
  const StepBudget& step = kept.steps[0];
  EXPECT_EQ(step.host_gap_us, plain.steps[0].host_gap_us);
  EXPECT_EQ(step.dependency_wait_us, plain.steps[0].dependency_wait_us);
  EXPECT_EQ(step.device_idle_us, plain.steps[0].device_idle_us);
  EXPECT_TRUE(plain.timeline.empty());
  EXPECT_TRUE(plain.steps[0].idle.empty());
  ASSERT_EQ(kept.timeline.size(), 4u);  // three kernels and the copy, as the trace spells them
  EXPECT_EQ(kept.timeline[1].name, "resolve_future_token_ids_kernel");
  EXPECT_EQ(kept.timeline[3].category, "gpu_memcpy");
  EXPECT_EQ(kept.timeline[3].stream, 3);
  EXPECT_EQ(step.work.size(), 4u);
  struct Expected {
    double from, to;
    IdleKind kind;
  };
  const Expected expected[] = {{0, 80.589, IdleKind::kHostGap},
                               {84.835, 128.5, IdleKind::kHostGap},
                               {128.5, 463380.24, IdleKind::kDependencyWait},
                               {463385.24, 463386.9, IdleKind::kDeviceIdle},
                               {463391.9, 463404.517, IdleKind::kHostGap},
                               {463409.017, 465716.6, IdleKind::kHostGap}};
  ASSERT_EQ(step.idle.size(), std::size(expected));
  for (std::size_t i = 0; i < step.idle.size(); ++i) {
    EXPECT_EQ(step.idle[i].device, 9);
    EXPECT_NEAR(step.idle[i].from_us, expected[i].from, 1e-6) << i;
    EXPECT_NEAR(step.idle[i].to_us, expected[i].to, 1e-6) << i;
    EXPECT_EQ(step.idle[i].kind, expected[i].kind) << i;
  }
}

// On a real H200 trace of many steps: per step and kind, the kept intervals add up to the
// budget's figures, and every step's work is its GPU activities.
TEST(DependencyWait, KeptIdleIntervalsAddUpOnARealTrace) {
  for (const char* file :
       {"h200/trace_compiled_decode.json.gz", "h200/trace_dependency_wait.json.gz"}) {
    BudgetBuilder builder;
    builder.keep_timeline();
    importers::read_trace(testing::data_path(file), builder);
    Budget budget = builder.finish("", {});
    ASSERT_GT(budget.steps.size(), 1u) << file;
    ASSERT_FALSE(budget.timeline.empty()) << file;
    for (const StepBudget& step : budget.steps) {
      double sums[4] = {0, 0, 0, 0};
      for (const IdleInterval& idle : step.idle) {
        EXPECT_LT(idle.from_us, idle.to_us);
        sums[static_cast<int>(idle.kind)] += idle.to_us - idle.from_us;
      }
      EXPECT_NEAR(sums[0], step.host_gap_us, 1e-6 * (1 + step.host_gap_us)) << file;
      EXPECT_NEAR(sums[1], step.device_idle_us, 1e-6 * (1 + step.device_idle_us)) << file;
      EXPECT_NEAR(sums[2], step.dependency_wait_us, 1e-6 * (1 + step.dependency_wait_us)) << file;
      EXPECT_NEAR(sums[3], step.other_work_us, 1e-6 * (1 + step.other_work_us)) << file;
      EXPECT_EQ(step.work.size(), step.gpu_activities) << file;
    }
  }
}

}  // namespace
}  // namespace kprof::timeline
