// Small traces written here in the shapes of public traces other projects published that kprof
// got wrong (none of them is read or copied: each shape is rebuilt by hand, its figures worked out
// below):
//   - the step's wall span: pytorch/kineto's tb_plugin sample
//     kineto_tbplugin_v100_resnet50_num_workers_0 (PyTorch 1.8/1.9 categories), where the host
//     loads data before each step's first kernel — TensorBoard's 55.51 % GPU utilisation;
//   - GPU work enqueued before the profiler's window: AMD-AGI/TraceLens's
//     tests/traces/mi300/ddp8_resnet_act_checkpoint, whose first RCCL all-reduces were launched
//     before the window opened (no launch in the trace, correlation ids below every launch);
//   - expert-parallel all-to-all beside collectives: DeepEP's dispatch/combine kernel names (its
//     public source) with an NCCL all-reduce and a GEMM overlapping them.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "analysis/stages.h"
#include "importers/chrome_trace/chrome_trace_reader.h"
#include "support/test_data.h"
#include "timeline/kernel_ranking.h"
#include "timeline/step_budget.h"
#include "timeline/trace_diff.h"

namespace kprof::timeline {
namespace {

std::string write_shape(const std::string& name, const std::string& events) {
  return testing::write_chrome_trace(::testing::TempDir() + "/" + name, events);
}

Budget budget_of_shape(const std::string& path, const analysis::StageTable* stages = nullptr) {
  BudgetBuilder builder(stages);
  importers::read_chrome_trace(path, builder);
  return builder.finish("", {});
}

Ranking rank_shape(const std::string& path, const analysis::StageTable& stages) {
  RankingBuilder builder(stages, /*normalize_names=*/true);
  importers::read_chrome_trace(path, builder);
  return builder.finish();
}

// PyTorch 1.8/1.9 categories (Operator, Runtime, Kernel, Memcpy), ProfilerStep#N an operator.
// Step 1: [0, 1000], a DataLoader operator, then a copy at 430-450 and kernels at 470-770 and
// 780-980. Step 2's annotation starts at 990, before step 1's wall span ended (1000): its wall
// starts at 1000; its kernel runs 1600-1850 and its annotation ends at 1890.
const char* kTensorBoardShape = R"json(
  {"ph": "X", "cat": "Operator", "name": "ProfilerStep#1", "pid": 100, "tid": "100",
   "ts": 0, "dur": 1000},
  {"ph": "X", "cat": "Operator", "name": "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__",
   "pid": 100, "tid": "100", "ts": 10, "dur": 400},
  {"ph": "X", "cat": "Runtime", "name": "cudaMemcpyAsync", "pid": 100, "tid": "100", "ts": 420,
   "dur": 30, "args": {"correlation": 1}},
  {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
   "tid": "stream 7", "ts": 430, "dur": 20, "args": {"device": 0, "stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": "100", "ts": 460,
   "dur": 5, "args": {"correlation": 2}},
  {"ph": "X", "cat": "Kernel", "name": "volta_scudnn_128x64_relu_interior_nn_v1", "pid": 0,
   "tid": "stream 7", "ts": 470, "dur": 300, "args": {"device": 0, "stream": 7, "correlation": 2}},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": "100", "ts": 470,
   "dur": 5, "args": {"correlation": 3}},
  {"ph": "X", "cat": "Kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": "stream 7",
   "ts": 780, "dur": 200, "args": {"device": 0, "stream": 7, "correlation": 3}},
  {"ph": "X", "cat": "Operator", "name": "ProfilerStep#2", "pid": 100, "tid": "100",
   "ts": 990, "dur": 900},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 100, "tid": "100", "ts": 1500,
   "dur": 5, "args": {"correlation": 4}},
  {"ph": "X", "cat": "Kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": "stream 7",
   "ts": 1600, "dur": 250, "args": {"device": 0, "stream": 7, "correlation": 4}}
)json";

TEST(TraceShapes, AStepIsMeasuredOverItsWallSpan) {
  Budget budget = budget_of_shape(write_shape("tensorboard_shape.json", kTensorBoardShape));
  ASSERT_EQ(budget.steps.size(), 2u);
  const StepBudget& first = budget.steps[0];
  // Busy: the copy (20) and the two kernels (300, 200). Idle: 0-430 before the first work (its
  // launch ended at 450, after the device ran dry: the host's), 450-470 (launch ended at 465:
  // the host's), 770-780 (launch ended at 475: device-side), 980-1000 after the last work.
  EXPECT_DOUBLE_EQ(first.wall_start_us, 0);
  EXPECT_DOUBLE_EQ(first.wall_span_us, 1000);
  EXPECT_DOUBLE_EQ(first.gpu_span_us, 550);
  EXPECT_DOUBLE_EQ(first.gpu_busy_us, 520);
  EXPECT_DOUBLE_EQ(first.kernel_busy_us, 500);
  EXPECT_DOUBLE_EQ(first.idle_before_first_us, 430);
  EXPECT_DOUBLE_EQ(first.idle_after_last_us, 20);
  EXPECT_DOUBLE_EQ(first.host_gap_us, 430 + 20 + 20);
  EXPECT_DOUBLE_EQ(first.device_idle_us, 10);
  EXPECT_DOUBLE_EQ(first.busy_fraction, 0.52);
  EXPECT_DOUBLE_EQ(first.gpu_span_busy_fraction, 520.0 / 550);
  EXPECT_EQ(first.verdict, StepVerdict::kHostBound);  // fed 520 / (520 + 470)
  const StepBudget& second = budget.steps[1];
  EXPECT_DOUBLE_EQ(second.wall_start_us, 1000);  // step 1's end, not its own 990
  EXPECT_DOUBLE_EQ(second.wall_span_us, 890);
  EXPECT_DOUBLE_EQ(second.idle_before_first_us, 600);
  EXPECT_DOUBLE_EQ(second.idle_after_last_us, 40);
  EXPECT_DOUBLE_EQ(second.host_gap_us, 640);
  // The whole: kernels alone 750 us of 1,890 (the figure TensorBoard calls GPU utilisation);
  // before the wall span, the GPU spans read 770 of 800 us busy.
  EXPECT_DOUBLE_EQ(budget.total_wall_span_us, 1890);
  EXPECT_DOUBLE_EQ(budget.total_kernel_busy_us, 750);
  EXPECT_DOUBLE_EQ(budget.total_span_us, 800);
  EXPECT_DOUBLE_EQ(budget.total_idle_before_first_us, 1030);
  EXPECT_EQ(budget.overall, StepVerdict::kHostBound);
}

// Kineto categories; host pid 1, GPU rows pid 0. Correlation 480 is an RCCL all-reduce the trace
// has no launch for, below the first launch (500): enqueued before the window, running 120-1020.
std::string ddp_shape(const std::string& extra, const std::string& step_name) {
  return R"json(
  {"ph": "X", "cat": "user_annotation", "name": ")json" +
         step_name + R"json(", "pid": 1, "tid": 1, "ts": 100, "dur": 2000},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
   "pid": 0, "tid": 20, "ts": 120, "dur": 900, "args": {"device": 0, "stream": 20, "correlation": 480}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 150,
   "dur": 10, "args": {"correlation": 500}},
  {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>(int)",
   "pid": 0, "tid": 7, "ts": 200, "dur": 300, "args": {"device": 0, "stream": 7, "correlation": 500}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipExtLaunchKernel", "pid": 1, "tid": 1, "ts": 600,
   "dur": 10, "args": {"correlation": 501}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_Generic(ncclDevKernelArgsStorage<4096ul>)",
   "pid": 0, "tid": 20, "ts": 1100, "dur": 400, "args": {"device": 0, "stream": 20, "correlation": 501}},
  {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 1, "tid": 1, "ts": 620,
   "dur": 10, "args": {"correlation": 502}},
  {"ph": "X", "cat": "kernel", "name": "igemm_wrw_gtcx3_nhwc_bf16_bx0_ex1_bt64x32", "pid": 0,
   "tid": 7, "ts": 1200, "dur": 500, "args": {"device": 0, "stream": 7, "correlation": 502}})json" +
         extra;
}

TEST(TraceShapes, WorkEnqueuedBeforeTheWindowIsLeftOut) {
  analysis::StageTable stages = analysis::load_stage_table();
  std::string path = write_shape("ddp_shape.json", ddp_shape("", "ProfilerStep#15"));
  Ranking ranking = rank_shape(path, stages);
  EXPECT_EQ(ranking.pre_window_activities, 1u);
  EXPECT_DOUBLE_EQ(ranking.pre_window_us, 900);
  EXPECT_EQ(ranking.gpu_events, 3u);
  EXPECT_DOUBLE_EQ(ranking.gpu_time_us, 300 + 400 + 500);
  ASSERT_EQ(ranking.devices.size(), 1u);
  const DeviceStats& device = ranking.devices[0];
  EXPECT_DOUBLE_EQ(device.communication_us, 400);  // the in-window all-reduce alone
  // It runs 1100-1500 beside the GEMM's 1200-1700: alone for 100 us.
  EXPECT_DOUBLE_EQ(device.collective.time_us, 400);
  EXPECT_DOUBLE_EQ(device.collective.exposed_us, 100);
  EXPECT_DOUBLE_EQ(device.collective.overlapped_us(), 300);
  for (const StageStats& stage : ranking.stages) {
    if (stage.stage == "communication") {
      EXPECT_DOUBLE_EQ(stage.total_us, 400);
    }
  }
  // The step budget: the step claims its launched work only; the whole-trace step (no step
  // marker) leaves the pre-window work out too.
  Budget stepped = budget_of_shape(path);
  EXPECT_EQ(stepped.pre_window_activities, 1u);
  EXPECT_EQ(stepped.steps.at(0).gpu_activities, 3u);
  Budget whole = budget_of_shape(write_shape("ddp_whole.json", ddp_shape("", "forward")));
  ASSERT_EQ(whole.steps.size(), 1u);
  EXPECT_EQ(whole.steps[0].source, "whole trace");
  EXPECT_EQ(whole.steps[0].gpu_activities, 3u);
  EXPECT_DOUBLE_EQ(whole.pre_window_us, 900);
}

// The DDP shape's step: its wall starts at 100, its first work at 200, and the pre-window
// all-reduce kept the device busy 120-1020. That is other work, not idle: 120-200 and 500-1020
// (600 us). The 20 us before it are the host's (the first launch returned at 160, after the
// device ran dry); 1020-1100 the device's own (the in-window all-reduce's launch had returned at
// 610); 1700-2100, after the last work to the annotation's end, the host's.
TEST(TraceShapes, ALeadSpentOnPreWindowWorkIsNotTheHosts) {
  Budget budget = budget_of_shape(write_shape("ddp_lead.json", ddp_shape("", "ProfilerStep#15")));
  ASSERT_EQ(budget.steps.size(), 1u);
  const StepBudget& step = budget.steps[0];
  EXPECT_DOUBLE_EQ(step.wall_span_us, 2000);
  EXPECT_DOUBLE_EQ(step.gpu_busy_us, 900);
  EXPECT_DOUBLE_EQ(step.other_work_us, 80 + 520);
  EXPECT_DOUBLE_EQ(step.device_idle_us, 80);
  EXPECT_DOUBLE_EQ(step.host_gap_us, 20 + 400);
  EXPECT_DOUBLE_EQ(step.idle_before_first_us, 20);
  EXPECT_DOUBLE_EQ(step.host_gap_before_first_us, 20);
  EXPECT_DOUBLE_EQ(step.idle_after_last_us, 400);
}

// One process driving two devices in a step (a pipeline): device 0's work ends at 50, the
// annotation at 100, device 1's work at 200. Device 0's idle after 100 is not the host's — the
// step was still running on device 1 — and belongs to this step, not to none.
TEST(TraceShapes, ADeviceThatFinishesFirstWaitsOnTheOthers) {
  const char* events = R"json(
  {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0,
   "dur": 100},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 10,
   "dur": 4, "args": {"correlation": 1}},
  {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 12,
   "dur": 4, "args": {"correlation": 2}},
  {"ph": "X", "cat": "kernel", "name": "stage_one", "pid": 0, "tid": 7, "ts": 20, "dur": 30,
   "args": {"device": 0, "stream": 7, "correlation": 1}},
  {"ph": "X", "cat": "kernel", "name": "stage_two", "pid": 1, "tid": 7, "ts": 60, "dur": 140,
   "args": {"device": 1, "stream": 7, "correlation": 2}})json";
  Budget budget = budget_of_shape(write_shape("two_devices_one_process.json", events));
  ASSERT_EQ(budget.steps.size(), 1u);
  ASSERT_EQ(budget.steps[0].devices.size(), 2u);
  const DeviceBudget& first = budget.steps[0].devices[0];
  EXPECT_DOUBLE_EQ(first.wall_span_us, 200);
  EXPECT_DOUBLE_EQ(first.gpu_busy_us, 30);
  EXPECT_DOUBLE_EQ(first.host_idle_us, 20 + 50);  // before its work, and to the annotation's end
  EXPECT_DOUBLE_EQ(first.device_idle_us, 100);    // 100-200: device 1 still ran the step
  EXPECT_DOUBLE_EQ(first.idle_after_last_us, 50);
  const DeviceBudget& second = budget.steps[0].devices[1];
  EXPECT_DOUBLE_EQ(second.wall_span_us, 200);
  EXPECT_DOUBLE_EQ(second.gpu_busy_us, 140);
  EXPECT_DOUBLE_EQ(second.host_idle_us, 60);
  EXPECT_DOUBLE_EQ(second.idle_after_last_us, 0);
}

// kprof diff leaves it out of both sides alike: the same trace with and without the pre-window
// all-reduce compares equal in GPU time and events.
TEST(TraceShapes, TraceDiffLeavesWorkFromBeforeTheWindowOut) {
  analysis::StageTable stages = analysis::load_stage_table();
  auto profile_of = [&](const std::string& path) {
    TraceProfileBuilder builder(stages);
    importers::read_chrome_trace(path, builder);
    return builder.finish("");
  };
  TraceProfile with = profile_of(write_shape("ddp_diff.json", ddp_shape("", "ProfilerStep#15")));
  EXPECT_EQ(with.gpu_events, 3u);
  EXPECT_DOUBLE_EQ(with.gpu_time_us, 1200);
  std::string nccl = "ncclDevKernel_Generic";
  ASSERT_EQ(with.names.count(nccl), 1u);
  EXPECT_EQ(with.names.at(nccl).durations_us, std::vector<double>{400});
  TraceDiff diff = diff_traces(with, with, {});
  EXPECT_EQ(diff.before_pre_window, 1u);
  EXPECT_DOUBLE_EQ(diff.after_pre_window_us, 900);
}

// A trace that records only some launch calls (kprof's tracer records the driver's kernel
// launches, not cudaMemcpy) lacks launches above its first one too: nothing is called
// pre-window there.
TEST(TraceShapes, ATraceMissingLaunchesEverywhereHasNoWindowEdge) {
  analysis::StageTable stages = analysis::load_stage_table();
  const std::string unlaunched_copy = R"json(,
  {"ph": "X", "cat": "gpu_memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
   "tid": 7, "ts": 1800, "dur": 50, "args": {"device": 0, "stream": 7, "correlation": 503}})json";
  std::string path =
      write_shape("partial_launches.json", ddp_shape(unlaunched_copy, "ProfilerStep#15"));
  Ranking ranking = rank_shape(path, stages);
  EXPECT_EQ(ranking.pre_window_activities, 0u);
  EXPECT_EQ(ranking.gpu_events, 5u);
  EXPECT_DOUBLE_EQ(ranking.devices.at(0).communication_us, 1300);
  EXPECT_EQ(budget_of_shape(path).pre_window_activities, 0u);
}

// DeepEP's dispatch and combine (stage MoE's, communication expert-parallel), a GEMM and an NCCL
// all-reduce on one device: 0-100 dispatch, 50-150 GEMM, 200-280 combine, 260-360 all-reduce.
const char* kExpertParallelShape = R"json(
  {"ph": "X", "cat": "kernel", "name": "void deep_ep::intranode::dispatch<8, 768, 8192>(int4*, float*, int*)",
   "pid": 0, "tid": 30, "ts": 0, "dur": 100, "args": {"device": 0, "stream": 30}},
  {"ph": "X", "cat": "kernel", "name": "void cutlass::Kernel2<cutlass_80_tensorop_bf16_s16816gemm_relu_bf16_64x64_32x6_tn_align8>(Params)",
   "pid": 0, "tid": 7, "ts": 50, "dur": 100, "args": {"device": 0, "stream": 7}},
  {"ph": "X", "cat": "kernel", "name": "void deep_ep::intranode::combine<__nv_bfloat16, 8, 768>(int4*, float*)",
   "pid": 0, "tid": 30, "ts": 200, "dur": 80, "args": {"device": 0, "stream": 30}},
  {"ph": "X", "cat": "kernel", "name": "ncclDevKernel_AllReduce_Sum_bf16_RING_LL(ncclDevKernelArgsStorage<4096ul>)",
   "pid": 0, "tid": 20, "ts": 260, "dur": 100, "args": {"device": 0, "stream": 20}}
)json";

TEST(TraceShapes, ExpertParallelAllToAllIsCommunicationOfItsOwnKind) {
  analysis::StageTable stages = analysis::load_stage_table();
  std::string path = write_shape("expert_parallel.json", kExpertParallelShape);
  Ranking ranking = rank_shape(path, stages);
  ASSERT_EQ(ranking.devices.size(), 1u);
  const DeviceStats& device = ranking.devices[0];
  // Busy 0-150 and 200-360: 310. Dispatch and combine run 180 us, the rest of the work covers
  // 200 us (50-150, 260-360): 110 us they ran alone, 70 under other work. The all-reduce runs
  // 100 us; everything else covers 0-150 and 200-280 (230): 80 alone, 20 overlapped.
  EXPECT_DOUBLE_EQ(device.busy_us, 310);
  EXPECT_DOUBLE_EQ(device.expert_parallel.time_us, 180);
  EXPECT_DOUBLE_EQ(device.expert_parallel.exposed_us, 110);
  EXPECT_DOUBLE_EQ(device.expert_parallel.overlapped_us(), 70);
  EXPECT_DOUBLE_EQ(device.collective.time_us, 100);
  EXPECT_DOUBLE_EQ(device.collective.exposed_us, 80);
  EXPECT_DOUBLE_EQ(device.collective.overlapped_us(), 20);
  EXPECT_DOUBLE_EQ(device.communication_us, 280);
  EXPECT_DOUBLE_EQ(device.exposed_communication_us, 310 - 100);  // all but the GEMM's 100
  // Their stages stay MoE's.
  for (const KernelStats& k : ranking.kernels) {
    if (k.name.find("deep_ep::intranode::dispatch") != std::string::npos) {
      EXPECT_EQ(k.stage, "moe_dispatch");
      EXPECT_TRUE(k.communication);
    }
    if (k.name.find("deep_ep::intranode::combine") != std::string::npos) {
      EXPECT_EQ(k.stage, "moe_combine");
    }
  }
  // The budget's whole-trace step, per step and per device alike.
  Budget budget = budget_of_shape(path, &stages);
  ASSERT_EQ(budget.steps.size(), 1u);
  const StepBudget& step = budget.steps[0];
  EXPECT_DOUBLE_EQ(step.expert_parallel.time_us, 180);
  EXPECT_DOUBLE_EQ(step.expert_parallel.exposed_us, 110);
  EXPECT_DOUBLE_EQ(step.collective.time_us, 100);
  EXPECT_DOUBLE_EQ(step.collective.exposed_us, 80);
  EXPECT_DOUBLE_EQ(step.exposed_communication_us, 210);
  EXPECT_DOUBLE_EQ(step.devices.at(0).expert_parallel.exposed_us, 110);
  EXPECT_DOUBLE_EQ(budget.total_collective.overlapped_us(), 20);
}

}  // namespace
}  // namespace kprof::timeline
