// kprof rank stages a kernel from the evidence its trace carries (issue 43, names): the operator
// that launched it (the innermost cpu_op around its launch call, or with a graph capture the one
// its captured launch was made in) where the stage table lists that operator, the steps it ran in
// where its name says attention without a phase, else its name. Hand-built Chrome traces; the
// expected stages and totals are worked out below from their timestamps and durations.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <stdexcept>
#include <string>

#include "analysis/stages.h"
#include "importers/chrome_trace/chrome_trace_reader.h"
#include "support/test_data.h"
#include "timeline/kernel_ranking.h"
#include "timeline/op_attribution.h"

namespace kprof::timeline {
namespace {

std::string trace_file(const std::string& name, std::string events) {
  events.resize(events.size() - 2);  // the last ",\n"
  return testing::write_chrome_trace(::testing::TempDir() + "/" + name, events);
}

std::string host_span(const std::string& category, const std::string& name, double ts, double dur) {
  return R"({"ph": "X", "cat": ")" + category + R"(", "name": ")" + name +
         R"(", "pid": 7, "tid": 7, "ts": )" + std::to_string(ts) +
         ", \"dur\": " + std::to_string(dur) + "},\n";
}

std::string launch_call(const std::string& call, double ts, int correlation) {
  return R"({"ph": "X", "cat": "cuda_runtime", "name": ")" + call +
         R"(", "pid": 7, "tid": 7, "ts": )" + std::to_string(ts) +
         R"(, "dur": 4, "args": {"correlation": )" + std::to_string(correlation) + "}},\n";
}

std::string kernel(const std::string& name, double ts, double dur, int correlation) {
  return R"({"ph": "X", "cat": "kernel", "name": ")" + name + R"(", "pid": 0, "tid": 1, "ts": )" +
         std::to_string(ts) + ", \"dur\": " + std::to_string(dur) +
         R"(, "args": {"device": 0, "stream": 7, "correlation": )" + std::to_string(correlation) +
         "}},\n";
}

// Ranks a trace as kprof rank does: the ranking and the launches read in one pass, then the
// launches restage the kernels.
Ranking rank(const std::string& path, const analysis::StageTable& stages,
             std::optional<GraphCapture> capture = std::nullopt) {
  RankingBuilder ranking(stages, /*normalize_names=*/true);
  importers::read_chrome_trace(path, ranking);
  Ranking result = ranking.finish();
  OpAttributionBuilder operators(AttributeBy::kOp);
  operators.keep_launched_kernels(kernels_needing_evidence(result));
  if (capture) operators.use_graph_capture(std::move(*capture));
  importers::read_chrome_trace(path, operators);
  restage_by_launches(result, operators.finish().launched_kernels, stages);
  return result;
}

const KernelStats& row(const Ranking& ranking, const std::string& name) {
  for (const KernelStats& k : ranking.kernels) {
    if (k.name == name) return k;
  }
  throw std::runtime_error("no row " + name);
}

std::map<std::string, double> stage_totals(const Ranking& ranking) {
  std::map<std::string, double> totals;
  for (const StageStats& s : ranking.stages) totals[s.stage] = s.total_us;
  return totals;
}

constexpr const char* kNvfuser = "nvfuser_none_f0_c0_r0_g0";
constexpr const char* kElementwise = "void at::native::vectorized_elementwise_kernel<4>(int)";

// nvFuser's hand-scheduled matmul (its name says no operation) launched under aten::mm for 60 us
// and once outside every operator for 20 us: the operator carries 60 of its 80 us, so it is a
// GEMM, from the operator, "75% of its time". TileLang's main_kernel outside every operator keeps
// its name's guess (other) and counts as unresolved; the elementwise kernel under aten::add (an
// operator the table does not list) keeps its name's stage; cuBLASLt's split-K reduce under
// aten::addmm is a GEMM by name and operator alike: the name, the finer, is the evidence.
TEST(StageEvidence, TheLaunchingOperatorDecidesAGeneratedKernelsStage) {
  std::string events =
      host_span("cpu_op", "aten::mm", 100, 50) + launch_call("cudaLaunchKernel", 110, 10) +
      kernel(kNvfuser, 200, 60, 10) + launch_call("cudaLaunchKernel", 160, 11) +
      kernel(kNvfuser, 270, 20, 11) + launch_call("cudaLaunchKernel", 170, 12) +
      kernel("main_kernel", 300, 10, 12) + host_span("cpu_op", "aten::add", 180, 20) +
      launch_call("cudaLaunchKernel", 185, 13) + kernel(kElementwise, 320, 5, 13) +
      host_span("cpu_op", "aten::addmm", 210, 20) + launch_call("cudaLaunchKernel", 215, 14) +
      kernel("cublasLt::splitKreduce_kernel", 330, 8, 14);
  analysis::StageTable stages = analysis::load_stage_table();
  Ranking ranking = rank(trace_file("operator_stages.json", events), stages);

  const KernelStats& nvfuser = row(ranking, kNvfuser);
  EXPECT_EQ(nvfuser.stage, "gemm");
  EXPECT_EQ(nvfuser.stage_source, "operator");
  EXPECT_EQ(nvfuser.stage_evidence, "operator aten::mm, 75% of its time");
  EXPECT_FALSE(nvfuser.stage_unresolved);

  const KernelStats& tilelang = row(ranking, "main_kernel");
  EXPECT_EQ(tilelang.stage, "other");
  EXPECT_EQ(tilelang.stage_source, "name");
  EXPECT_TRUE(tilelang.stage_unresolved);

  EXPECT_EQ(row(ranking, "at::native::vectorized_elementwise_kernel<4>").stage, "elementwise");
  const KernelStats& reduce = row(ranking, "cublasLt::splitKreduce_kernel");
  EXPECT_EQ(reduce.stage, "gemm");
  EXPECT_EQ(reduce.stage_source, "name");

  // Stage totals: gemm 80 + 8, other 10, elementwise 5; 103 us of GPU time.
  auto totals = stage_totals(ranking);
  EXPECT_DOUBLE_EQ(totals["gemm"], 88);
  EXPECT_DOUBLE_EQ(totals["other"], 10);
  EXPECT_DOUBLE_EQ(totals["elementwise"], 5);
  EXPECT_DOUBLE_EQ(ranking.gpu_time_us, 103);
  EXPECT_DOUBLE_EQ(unresolved_stage_share(ranking), 10.0 / 103);

  // Without the operators (the same kernels, no cpu_op): the name alone, the GEMM stage 8 us.
  std::string bare = launch_call("cudaLaunchKernel", 110, 10) + kernel(kNvfuser, 200, 60, 10) +
                     launch_call("cudaLaunchKernel", 215, 14) +
                     kernel("cublasLt::splitKreduce_kernel", 330, 8, 14);
  Ranking by_name = rank(trace_file("name_stages.json", bare), stages);
  EXPECT_EQ(row(by_name, kNvfuser).stage, "other");
  EXPECT_EQ(row(by_name, kNvfuser).stage_evidence,
            "name (a code generator's name: names no operation)");
  EXPECT_DOUBLE_EQ(stage_totals(by_name)["gemm"], 8);
}

// FlashInfer's tensor-core decode path runs BatchPrefillWithPagedKVCacheKernel; a name without
// the template that tells the path is "attention". Launched only inside vLLM steps with no prefill
// request (execute_context_0(0)_generation_16(16)) it is decode attention, from its steps; the
// same kernel in a step with prefill requests keeps "attention".
TEST(StageEvidence, PhaselessAttentionInDecodeOnlyStepsIsDecodeAttention) {
  const std::string decode_kernel =
      "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<"
      "(flashinfer::MaskMode)0, 64u, 1u>, PagedParams>(PagedParams)";
  const std::string mixed_kernel =
      "void flashinfer::BatchPrefillWithPagedKVCacheKernel<flashinfer::KernelTraits<"
      "(flashinfer::MaskMode)0, 128u, 1u>, PagedParams>(PagedParams)";
  std::string events =
      host_span("user_annotation", "execute_context_0(0)_generation_16(16)", 1000, 100) +
      launch_call("cudaLaunchKernel", 1010, 20) + kernel(decode_kernel, 1020, 30, 20) +
      host_span("user_annotation", "execute_context_0(0)_generation_16(16)", 2000, 100) +
      launch_call("cudaLaunchKernel", 2010, 21) + kernel(decode_kernel, 2020, 25, 21) +
      host_span("user_annotation", "execute_context_2(512)_generation_14(14)", 3000, 100) +
      launch_call("cudaLaunchKernel", 3010, 22) + kernel(mixed_kernel, 3020, 50, 22);
  analysis::StageTable stages = analysis::load_stage_table();
  ASSERT_EQ(stages.stage_of_name(decode_kernel), "attention");
  Ranking ranking = rank(trace_file("decode_steps.json", events), stages);
  const KernelStats& in_decode = row(ranking, normalize_kernel_name(decode_kernel));
  EXPECT_EQ(in_decode.stage, "attention_decode");
  EXPECT_EQ(in_decode.stage_source, "step");
  const KernelStats& in_mixed = row(ranking, normalize_kernel_name(mixed_kernel));
  EXPECT_EQ(in_mixed.stage, "attention");
  EXPECT_EQ(in_mixed.stage_source, "name");
  auto totals = stage_totals(ranking);
  EXPECT_DOUBLE_EQ(totals["attention_decode"], 55);
  EXPECT_DOUBLE_EQ(totals["attention"], 50);
}

// A CUDA graph replay's kernels all carry the graph launch's correlation id, outside every
// operator; with the capture's trace (rank --graph-capture) each takes the operator its captured
// launch was made in: TileLang's main_kernel captured under aten::bmm is a GEMM.
TEST(StageEvidence, AGraphCaptureGivesReplayedKernelsTheirOperators) {
  std::string capture_events =
      host_span("cpu_op", "aten::bmm", 100, 50) + launch_call("cudaLaunchKernel", 110, 10) +
      host_span("cpu_op", "aten::add", 200, 50) + launch_call("cudaLaunchKernel", 210, 11) +
      launch_call("cudaGraphInstantiate", 400, 12);
  OpAttributionBuilder capture_builder(AttributeBy::kOp);
  importers::read_chrome_trace(trace_file("capture.json", capture_events), capture_builder);
  GraphCapture capture = capture_builder.finish_capture();
  ASSERT_EQ(capture.launches, 2u);

  std::string replay = launch_call("cudaGraphLaunch", 1000, 100) +
                       kernel("main_kernel", 1010, 40, 100) + kernel(kElementwise, 1060, 4, 100);
  analysis::StageTable stages = analysis::load_stage_table();
  Ranking with = rank(trace_file("replay.json", replay), stages, capture);
  EXPECT_EQ(row(with, "main_kernel").stage, "gemm");
  EXPECT_EQ(row(with, "main_kernel").stage_evidence, "operator aten::bmm");
  EXPECT_EQ(row(with, "at::native::vectorized_elementwise_kernel<4>").stage, "elementwise");
  Ranking without = rank(trace_file("replay.json", replay), stages);
  EXPECT_EQ(row(without, "main_kernel").stage, "other");
}

}  // namespace
}  // namespace kprof::timeline
