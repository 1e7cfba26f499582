// What the Chrome trace reader makes of traces of other ages and other sources: the PyTorch
// 1.8/1.9 categories, Kineto's top level, HIP's launch calls, CUDA stream waits, and JSON that is
// not a profiler timeline. Each trace below is a small one written here in the shape of a public
// file (named above it); the expected values are read off the JSON text by hand.
#include <gtest/gtest.h>

#include <fstream>
#include <optional>
#include <string>
#include <vector>

#include "common/error.h"
#include "importers/chrome_trace/chrome_trace_reader.h"
#include "timeline/step_budget.h"

namespace kprof::importers {
namespace {

std::string write_trace(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

struct Held {
  std::string category, name, launched_kernel;
  std::optional<std::int64_t> device, stream, correlation;
};

struct HoldingSink final : TraceEventSink {
  std::vector<Held> events;
  void on_event(const TraceEvent& event) override {
    events.push_back({std::string(event.category), std::string(event.name),
                      std::string(event.launched_kernel), event.device, event.stream,
                      event.correlation});
  }
};

// The shape of kineto's tb_plugin sample (kineto_tbplugin_v100_resnet50_…pt.trace.json, PyTorch
// 1.8.1 on a V100): an integer schemaVersion, deviceProperties, capitalised categories, the step
// an "Operator" named ProfilerStep#N, GPU rows on pid 0 with a string tid "stream 7".
const std::string kLegacyTrace = R"json({"schemaVersion": 1,
  "deviceProperties": [{"id": 0, "name": "Tesla V100-SXM2-16GB", "totalGlobalMem": 16945512448}],
  "traceEvents": [
  {"ph": "X", "cat": "Operator", "name": "ProfilerStep#5", "pid": 1234, "tid": 1234,
   "ts": 1000, "dur": 100, "args": {"Device": 1234, "External id": 1}},
  {"ph": "X", "cat": "Operator", "name": "aten::conv2d", "pid": 1234, "tid": 1234,
   "ts": 1005, "dur": 30, "args": {"Device": 1234, "External id": 2}},
  {"ph": "X", "cat": "Runtime", "name": "cudaLaunchKernel", "pid": 1234, "tid": 1234,
   "ts": 1010, "dur": 5, "args": {"cbid": 211, "correlation": 11, "external id": 2}},
  {"ph": "X", "cat": "Runtime", "name": "cudaMemsetAsync", "pid": 1234, "tid": 1234,
   "ts": 1020, "dur": 5, "args": {"cbid": 51, "correlation": 12, "external id": 2}},
  {"ph": "X", "cat": "Runtime", "name": "cudaMemcpyAsync", "pid": 1234, "tid": 1234,
   "ts": 1030, "dur": 5, "args": {"cbid": 41, "correlation": 13, "external id": 2}},
  {"ph": "X", "cat": "Kernel", "name": "volta_sgemm_128x64_nn", "pid": 0, "tid": "stream 7",
   "ts": 1040, "dur": 20, "args": {"device": 0, "context": 1, "stream": 7, "correlation": 11,
   "external id": 2, "registers per thread": 126, "grid": [4, 2, 1], "block": [256, 1, 1]}},
  {"ph": "X", "cat": "Memset", "name": "Memset (Device)", "pid": 0, "tid": "stream 7",
   "ts": 1060, "dur": 2, "args": {"device": 0, "stream": 7, "correlation": 12}},
  {"ph": "X", "cat": "Memcpy", "name": "Memcpy HtoD (Pageable -> Device)", "pid": 0,
   "tid": "stream 7", "ts": 1070, "dur": 4, "args": {"device": 0, "stream": 7, "correlation": 13}},
  {"ph": "s", "cat": "async", "name": "launch", "id": 11, "pid": 1234, "tid": 1234, "ts": 1010}
  ]})json";

TEST(ChromeTraceFormats, PyTorch18CategoriesAreReadAsTheModernOnes) {
  std::string path = write_trace("legacy.json", kLegacyTrace);
  HoldingSink sink;
  TraceReadStats stats = read_chrome_trace(path, sink);
  EXPECT_TRUE(stats.legacy_categories);
  EXPECT_EQ(stats.format,
            "Kineto trace, schemaVersion 1 (PyTorch 1.8/1.9 categories: Kernel, Runtime, "
            "Operator, Memcpy, Memset)");
  ASSERT_EQ(stats.device_names.size(), 1u);
  EXPECT_EQ(stats.device_names[0].first, 0);
  EXPECT_EQ(stats.device_names[0].second, "Tesla V100-SXM2-16GB");
  std::vector<std::string> categories;
  for (const Held& event : sink.events) categories.push_back(event.category + "/" + event.name);
  EXPECT_EQ(categories,
            (std::vector<std::string>{
                "user_annotation/ProfilerStep#5", "cpu_op/aten::conv2d",
                "cuda_runtime/cudaLaunchKernel", "cuda_runtime/cudaMemsetAsync",
                "cuda_runtime/cudaMemcpyAsync", "kernel/volta_sgemm_128x64_nn",
                "gpu_memset/Memset (Device)", "gpu_memcpy/Memcpy HtoD (Pageable -> Device)"}));
  // The step and its three GPU activities, as the budget sees them (through the categories it
  // asks for, the reader's quick path).
  timeline::BudgetBuilder builder;
  read_chrome_trace(path, builder);
  timeline::Budget budget = builder.finish("", {});
  ASSERT_EQ(budget.steps.size(), 1u);
  EXPECT_EQ(budget.steps[0].name, "ProfilerStep#5");
  EXPECT_EQ(budget.steps[0].gpu_activities, 3u);
  EXPECT_DOUBLE_EQ(budget.steps[0].gpu_busy_us, 26);
}

// A modern Kineto trace names its schema; a plain array of events names nothing.
TEST(ChromeTraceFormats, TheFormatIsNamed) {
  HoldingSink sink;
  EXPECT_EQ(read_chrome_trace(write_trace("modern.json", R"json({"schemaVersion": "1.0.1",
    "traceEvents": [{"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}]})json"),
                              sink)
                .format,
            "Kineto trace, schemaVersion 1.0.1");
  EXPECT_EQ(
      read_chrome_trace(
          write_trace("array.json", R"json([{"ph": "X", "cat": "kernel", "name": "k", "ts": 1,)json"
                                    R"json( "dur": 1}])json"),
          sink)
          .format,
      "Chrome trace (a JSON array of events)");
  EXPECT_EQ(
      read_chrome_trace(write_trace("plain.json", R"json({"traceEvents": []})json"), sink).format,
      "Chrome trace");
}

// The shape of a ROCm Kineto trace (tracelens_mi300x_vllm_decode_full_capture…): launch calls
// name their kernel in args.kernel, no stream on any runtime event; a kernel's args carry kind.
TEST(ChromeTraceFormats, HipLaunchCallsNameTheirKernel) {
  HoldingSink sink;
  read_chrome_trace(write_trace("hip.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cuda_runtime", "name": "hipLaunchKernel", "pid": 251, "tid": 251,
     "ts": 10, "dur": 4, "args": {"cid": 3, "correlation": 7, "External id": 9,
     "kernel": "void at::native::vectorized_elementwise_kernel<4>(int)", "grid": "[64, 1, 1]"}},
    {"ph": "X", "cat": "cuda_runtime", "name": "hipStreamWaitEvent", "pid": 251, "tid": 251,
     "ts": 20, "dur": 10, "args": {"cid": 200, "correlation": 8}},
    {"ph": "X", "cat": "kernel", "name": "void at::native::vectorized_elementwise_kernel<4>(int)",
     "pid": 9, "tid": 3, "ts": 40, "dur": 2, "args": {"device": 9, "stream": 3,
     "correlation": 7, "kind": "Dispatch Kernel"}}]})json"),
                    sink);
  ASSERT_EQ(sink.events.size(), 3u);
  EXPECT_EQ(sink.events[0].launched_kernel,
            "void at::native::vectorized_elementwise_kernel<4>(int)");
  EXPECT_EQ(sink.events[1].launched_kernel, "");
  EXPECT_EQ(sink.events[2].stream, 3);
}

// torch.profiler with _ExperimentalConfig(enable_cuda_sync_events=True), recorded on the H200
// (torch 2.11): a stream wait is a cuda_sync event on the GPU row of the waiting stream.
TEST(ChromeTraceFormats, StreamWaitsAreGpuRowsOfTheirStream) {
  HoldingSink sink;
  read_chrome_trace(write_trace("sync.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cuda_sync", "name": "Stream Wait Event", "pid": 0, "tid": 7,
     "ts": 100, "dur": 0, "args": {"cuda_sync_kind": "Stream Wait Event", "wait_on_stream": -1,
     "wait_on_cuda_event_record_corr_id": -1, "wait_on_cuda_event_id": 21, "stream": 7,
     "correlation": 164, "device": 0, "context": 1}}]})json"),
                    sink);
  ASSERT_EQ(sink.events.size(), 1u);
  EXPECT_EQ(sink.events[0].category, "cuda_sync");
  EXPECT_EQ(sink.events[0].device, 0);
  EXPECT_EQ(sink.events[0].stream, 7);
  EXPECT_EQ(sink.events[0].correlation, 164);
}

// JSON of events that is not a timeline kprof can account: nsightful's conversion of an nsys
// export (nsightful_t4_power_iteration__baseline.chrome.json: "cuda", "cuda_api", "nvtx" rows on
// pid "Device 0"/"Host 0") and a CUPTI counter-range trace. Read, with what they are said.
TEST(ChromeTraceFormats, ConversionsAndCounterTracesAreNamed) {
  HoldingSink sink;
  TraceReadStats converted = read_chrome_trace(write_trace("nsightful.json", R"json([
    {"name": "cupy_fill", "ph": "X", "cat": "cuda", "ts": 15057.495, "dur": 1.312,
     "tid": "CUDA API 7", "pid": "Device 0", "args": {"NVTXRegions": [null]}},
    {"name": "cuProfilerStart", "ph": "X", "cat": "cuda_api", "ts": 14778.264, "dur": 3.859,
     "tid": "CUDA API 9946", "pid": "Host 0", "args": {"correlationId": 4696}}])json"),
                                               sink);
  EXPECT_NE(converted.not_a_timeline.find("nsys export --type sqlite"), std::string::npos)
      << converted.not_a_timeline;
  TraceReadStats counters = read_chrome_trace(write_trace("counters.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "cuda_profiler_range", "name": "gemm", "pid": 0, "tid": 0, "ts": 0,
     "dur": 10, "args": {"smsp__sass_thread_inst_executed_op_dfma_pred_on.sum": 0}}]})json"),
                                              sink);
  EXPECT_NE(counters.not_a_timeline.find("counter-range"), std::string::npos);
  TraceReadStats timeline = read_chrome_trace(write_trace("kernel.json", R"json({"traceEvents": [
    {"ph": "X", "cat": "kernel", "name": "k", "ts": 1, "dur": 1}]})json"),
                                              sink);
  EXPECT_EQ(timeline.not_a_timeline, "");
}

// Nsight Systems' own JSON export (`nsys export --type json`): one JSON object per line. Refused
// with the export kprof reads instead.
TEST(ChromeTraceFormats, NsightSystemsJsonExportIsRefusedWithTheSqliteExportNamed) {
  HoldingSink sink;
  std::string path =
      write_trace("nsys.json",
                  "{\"type\":\"String\",\"id\":\"1\",\"value\":\"[Unknown]\"}\n"
                  "{\"Type\":48,\"CudaEvent\":{\"startNs\":\"100\",\"endNs\":\"200\"}}\n");
  try {
    read_chrome_trace(path, sink);
    FAIL() << "read";
  } catch (const InputError& error) {
    std::string text = error.what();
    EXPECT_NE(text.find("nsys.json"), std::string::npos) << text;
    EXPECT_NE(text.find("Nsight Systems JSON export"), std::string::npos) << text;
    EXPECT_NE(text.find("nsys export --type sqlite"), std::string::npos) << text;
  }
  EXPECT_TRUE(sink.events.empty());
}

}  // namespace
}  // namespace kprof::importers
