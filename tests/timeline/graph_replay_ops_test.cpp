// rank --by op --graph-capture: a graph replay's kernels take the operators that launched them at
// capture. The shape is AMD-AGI/TraceLens's vllm_decode_full pair (MI300X; a capture trace whose
// launch calls name their kernel and ran nothing, one hipGraphInstantiateWithFlags, and a replay
// of one hipGraphLaunch whose kernels all carry its correlation id), rebuilt here by hand with two
// captured graphs, a kernel name launched twice under different operators, a warm-up launch that
// ran (not captured) and a replayed kernel no captured launch names. Expected values worked out
// below from those timestamps.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "importers/chrome_trace/chrome_trace_reader.h"
#include "support/test_data.h"
#include "timeline/op_attribution.h"

namespace kprof::timeline {
namespace {

std::string write_graph_trace(const std::string& name, const std::string& events) {
  return testing::write_chrome_trace(::testing::TempDir() + "/" + name, events);
}

std::string cpu_op(const std::string& name, double ts, double dur) {
  return R"({"ph": "X", "cat": "cpu_op", "name": ")" + name +
         R"(", "pid": 851, "tid": 851, "ts": )" + std::to_string(ts) +
         ", \"dur\": " + std::to_string(dur) + "},\n";
}

// A launch call; `kernel` empty: the runtime event names no kernel (CUDA's do not).
std::string launch_call(const std::string& call, double ts, int correlation,
                        const std::string& kernel) {
  return R"({"ph": "X", "cat": "cuda_runtime", "name": ")" + call +
         R"(", "pid": 851, "tid": 851, "ts": )" + std::to_string(ts) +
         R"(, "dur": 4, "args": {"correlation": )" + std::to_string(correlation) +
         (kernel.empty() ? "" : R"(, "kernel": ")" + kernel + "\"") + "}},\n";
}

std::string gpu_work(const std::string& category, const std::string& name, double ts, double dur,
                     int correlation) {
  return R"({"ph": "X", "cat": ")" + category + R"(", "name": ")" + name +
         R"(", "pid": 2, "tid": 1, "ts": )" + std::to_string(ts) +
         ", \"dur\": " + std::to_string(dur) +
         R"(, "args": {"device": 2, "stream": 1, "correlation": )" + std::to_string(correlation) +
         "}},\n";
}

constexpr const char* kReplayGemm = "Cijk_Ailk_Bljk_BBS_BH_MT64x64x64_MI16x16x16x1";
constexpr const char* kReplaySort = "void moe_sort_tokens<int>(int*, int)";
constexpr const char* kReplayMoe = "fused_moe_kernel";
constexpr const char* kReplayAdd = "void at::native::vectorized_elementwise_kernel<4>(int)";

// Graph 1 (before the first instantiation): the GEMM in aten::mm, the sort and the first MoE
// kernel in vllm::moe_forward, the second MoE kernel in aten::sum, the add in aten::add; the
// warm-up fill ran (its kernel is in the trace), so it was not captured. Graph 2: one small GEMM.
std::string capture_shape(bool named) {
  auto k = [named](const char* kernel) { return named ? std::string(kernel) : std::string(); };
  std::string launch = named ? "hipLaunchKernel" : "cudaLaunchKernel";
  std::string events =
      cpu_op("aten::fill_", 50, 10) + launch_call(launch, 52, 9, k("fill")) +
      gpu_work("kernel", "fill", 60, 2, 9) + cpu_op("aten::mm", 100, 50) +
      launch_call(launch, 110, 10, k(kReplayGemm)) + cpu_op("vllm::moe_forward", 200, 25) +
      launch_call(launch, 210, 11, k(kReplaySort)) + launch_call(launch, 220, 12, k(kReplayMoe)) +
      cpu_op("aten::sum", 226, 10) + launch_call(launch, 230, 13, k(kReplayMoe)) +
      cpu_op("aten::add", 310, 20) + launch_call(launch, 315, 14, k(kReplayAdd)) +
      launch_call("hipGraphInstantiateWithFlags", 400, 15, "") + cpu_op("aten::mm", 500, 20) +
      launch_call(launch, 505, 16, k("Cijk_small")) +
      launch_call("hipGraphInstantiateWithFlags", 600, 17, "");
  events.resize(events.size() - 2);  // the last ",\n"
  return events;
}

// One hipGraphLaunch (correlation 100, outside every operator) replaying graph 1 with one more
// kernel at its end, and an eager copy in aten::copy_.
std::string replay_shape() {
  std::string events =
      launch_call("hipGraphLaunch", 1000, 100, "") +
      gpu_work("kernel", kReplayGemm, 1010, 10, 100) +
      gpu_work("kernel", kReplaySort, 1020, 5, 100) +
      gpu_work("kernel", kReplayMoe, 1030, 40, 100) +
      gpu_work("kernel", kReplayMoe, 1075, 30, 100) + gpu_work("kernel", kReplayAdd, 1110, 3, 100) +
      gpu_work("kernel", "extra_kernel", 1120, 2, 100) + cpu_op("aten::copy_", 1200, 20) +
      launch_call("hipMemcpyAsync", 1205, 101, "") +
      gpu_work("gpu_memcpy", "Memcpy HtoD (Pinned -> Device)", 1210, 4, 101);
  events.resize(events.size() - 2);
  return events;
}

OpAttribution replay_with_capture(bool named) {
  OpAttributionBuilder capture_builder(AttributeBy::kOp);
  importers::read_chrome_trace(
      write_graph_trace(named ? "capture_named.json" : "capture_unnamed.json",
                        capture_shape(named)),
      capture_builder);
  GraphCapture capture = capture_builder.finish_capture();
  EXPECT_EQ(capture.graphs.size(), 2u);
  EXPECT_EQ(capture.launches, 6u);
  EXPECT_EQ(capture.named, named);
  OpAttributionBuilder builder(AttributeBy::kOp);
  builder.use_graph_capture(capture);
  importers::read_chrome_trace(write_graph_trace("replay.json", replay_shape()), builder);
  return builder.finish();
}

std::map<std::string, std::pair<std::uint64_t, double>> by_op(const OpAttribution& ops) {
  std::map<std::string, std::pair<std::uint64_t, double>> result;
  for (const OpStats& op : ops.ops) result[op.name] = {op.kernels, op.total_us};
  return result;
}

TEST(GraphReplayOps, ReplayedKernelsTakeTheirCapturedOperatorsByNameAndOrder) {
  OpAttribution ops = replay_with_capture(/*named=*/true);
  auto got = by_op(ops);
  // The first fused_moe_kernel replayed (40 us) is the first captured (in vllm::moe_forward), the
  // second (30 us) the second (in aten::sum); extra_kernel was never captured: it stays with the
  // graph launch's own bucket, no operator.
  EXPECT_EQ(got["aten::mm"], std::make_pair(std::uint64_t{1}, 10.0));
  EXPECT_EQ(got["vllm::moe_forward"], std::make_pair(std::uint64_t{2}, 45.0));
  EXPECT_EQ(got["aten::sum"], std::make_pair(std::uint64_t{1}, 30.0));
  EXPECT_EQ(got["aten::add"], std::make_pair(std::uint64_t{1}, 3.0));
  EXPECT_EQ(got["aten::copy_"], std::make_pair(std::uint64_t{1}, 4.0));
  EXPECT_EQ(got[std::string(kNoOperator)], std::make_pair(std::uint64_t{1}, 2.0));
  EXPECT_EQ(got.count("aten::fill_"), 0u);  // the warm-up ran: not in the graph
  ASSERT_TRUE(ops.replay.has_value());
  EXPECT_EQ(ops.replay->graph_launches, 1u);
  EXPECT_EQ(ops.replay->replayed_kernels, 6u);
  EXPECT_EQ(ops.replay->matched, 5u);
  EXPECT_DOUBLE_EQ(ops.replay->unmatched_us, 2);
  EXPECT_TRUE(ops.replay->by_name);
  double total = 0;
  for (const OpStats& op : ops.ops) total += op.total_us;
  EXPECT_DOUBLE_EQ(total, ops.gpu_time_us);  // every activity in one bucket
}

// CUDA's launch events name no kernel: matched by position against the captured graph nearest in
// size (graph 1's five launches for six replayed kernels), the same answer here.
TEST(GraphReplayOps, UnnamedCapturedLaunchesAreMatchedByPosition) {
  OpAttribution ops = replay_with_capture(/*named=*/false);
  auto got = by_op(ops);
  EXPECT_EQ(got["aten::mm"], std::make_pair(std::uint64_t{1}, 10.0));
  EXPECT_EQ(got["vllm::moe_forward"], std::make_pair(std::uint64_t{2}, 45.0));
  EXPECT_EQ(got["aten::sum"], std::make_pair(std::uint64_t{1}, 30.0));
  EXPECT_EQ(got[std::string(kNoOperator)], std::make_pair(std::uint64_t{1}, 2.0));
  EXPECT_FALSE(ops.replay->by_name);
}

// Two captured graphs alike in size whose launches came from different operators (one graph
// per batch size): by position nothing tells them apart, so the replay is left unmatched.
TEST(GraphReplayOps, GraphsAlikeInSizeWithDifferentOperatorsAreNotGuessed) {
  std::string capture = cpu_op("aten::mm", 100, 20) + launch_call("cudaLaunchKernel", 105, 10, "") +
                        launch_call("cudaGraphInstantiate", 200, 11, "") +
                        cpu_op("aten::silu", 300, 20) +
                        launch_call("cudaLaunchKernel", 305, 12, "") +
                        launch_call("cudaGraphInstantiate", 400, 13, "");
  capture.resize(capture.size() - 2);
  std::string replay = launch_call("cudaGraphLaunch", 1000, 100, "") +
                       gpu_work("kernel", "silu_kernel", 1010, 7, 100);
  replay.resize(replay.size() - 2);
  OpAttributionBuilder capture_builder(AttributeBy::kOp);
  importers::read_chrome_trace(write_graph_trace("alike_capture.json", capture), capture_builder);
  OpAttributionBuilder builder(AttributeBy::kOp);
  builder.use_graph_capture(capture_builder.finish_capture());
  importers::read_chrome_trace(write_graph_trace("alike_replay.json", replay), builder);
  OpAttribution ops = builder.finish();
  EXPECT_EQ(ops.replay->ambiguous_graph_launches, 1u);
  EXPECT_EQ(ops.replay->matched, 0u);
  EXPECT_EQ(by_op(ops)[std::string(kNoOperator)], std::make_pair(std::uint64_t{1}, 7.0));
}

// Without the capture the whole replay is the graph launch's: no operator.
TEST(GraphReplayOps, WithoutTheCaptureTheReplayHasNoOperator) {
  OpAttributionBuilder builder(AttributeBy::kOp);
  importers::read_chrome_trace(write_graph_trace("replay_alone.json", replay_shape()), builder);
  OpAttribution ops = builder.finish();
  auto got = by_op(ops);
  EXPECT_EQ(got[std::string(kNoOperator)], std::make_pair(std::uint64_t{6}, 90.0));
  EXPECT_FALSE(ops.replay.has_value());
}

// A replay trace read as a capture holds no captured launch: its launches all ran.
TEST(GraphReplayOps, AReplayIsNotACapture) {
  OpAttributionBuilder builder(AttributeBy::kOp);
  importers::read_chrome_trace(write_graph_trace("replay_as_capture.json", replay_shape()),
                               builder);
  EXPECT_EQ(builder.finish_capture().launches, 0u);
}

// A real H200 trace (data/h200/trace_graph_capture.json.gz, tools/traces/waits_and_graphs.py): 3
// eager warm-ups of an 8-layer block (24 aten::mm, 8 layer norms, 8 SiLUs each), its capture by
// torch.cuda.graph (40 launches inside cudaStreamBeginCapture…EndCapture, CUDA's launch events
// naming no kernel) and 5 replays of one cudaGraphLaunch each. The same file serves as its own
// capture: each replay's 40 kernels are matched by position and take the warm-up's composition,
// so every operator's count is its eager count plus five blocks' worth.
TEST(GraphReplayOps, ARealCudaCaptureAndItsReplaysInOneTrace) {
  std::string path = testing::data_path("h200/trace_graph_capture.json.gz");
  OpAttributionBuilder capture_builder(AttributeBy::kOp);
  importers::read_chrome_trace(path, capture_builder);
  GraphCapture capture = capture_builder.finish_capture();
  ASSERT_EQ(capture.graphs.size(), 1u);
  EXPECT_EQ(capture.launches, 40u);
  EXPECT_FALSE(capture.named);
  OpAttributionBuilder plain(AttributeBy::kOp);
  importers::read_chrome_trace(path, plain);
  auto eager = by_op(plain.finish());
  EXPECT_EQ(eager[std::string(kNoOperator)].first, 200u);  // 5 replays x 40 kernels
  OpAttributionBuilder builder(AttributeBy::kOp);
  builder.use_graph_capture(capture);
  importers::read_chrome_trace(path, builder);
  OpAttribution ops = builder.finish();
  auto got = by_op(ops);
  EXPECT_EQ(got.count(std::string(kNoOperator)), 0u);
  EXPECT_EQ(got["aten::mm"].first, eager["aten::mm"].first + 5 * 24);
  EXPECT_EQ(got["aten::native_layer_norm"].first, eager["aten::native_layer_norm"].first + 5 * 8);
  EXPECT_EQ(got["aten::silu"].first, eager["aten::silu"].first + 5 * 8);
  EXPECT_EQ(ops.replay->graph_launches, 5u);
  EXPECT_EQ(ops.replay->matched, 200u);
}

}  // namespace
}  // namespace kprof::timeline
