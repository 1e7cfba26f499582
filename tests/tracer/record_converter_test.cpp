// CUPTI records → trace events on hand-built buffers walked by CUPTI's own walker; the events are
// read back with another JSON parser (nlohmann) and compared with the records' fields. API names
// and their spellings are checked against the PyTorch profiler's traces recorded on the H200
// (same CUPTI 13.0): Kineto's names and cbids there must be ours.
#include "tracer/record_converter.h"

#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "support/test_data.h"
#include "tracer/cupti_buffer.h"
#include "tracer/cupti_support.h"

namespace kprof::tracer {
namespace {

using testing::CuptiBuffer;

const ApiNames& api_names() {
  static const ApiNames names = load_api_names();
  return names;
}

constexpr std::uint64_t kBase = 1790857026000000000ull;  // a Kineto base (3-month floor)
constexpr std::uint64_t kT0 = kBase + 5124064240000000ull;

struct Converted {
  nlohmann::json events;  // every event, flows included
  WindowCounts counts;
};

Converted convert(CuptiBuffer& buffer, ConverterOptions options = {kBase, UINT64_MAX, true}) {
  LiveStrings strings;
  RecordConverter converter(api_names(), strings, options);
  converter.start_window();
  std::string text;
  std::string error = for_each_record(buffer.data(), buffer.size(),
                                      [&](const CUpti_Activity& r) { converter.convert(r, text); });
  EXPECT_EQ(error, "");
  Converted result;
  result.events = nlohmann::json::parse("[" + text + "]");
  result.counts = converter.finish_window();
  return result;
}

std::vector<nlohmann::json> of_phase(const nlohmann::json& events, const std::string& phase) {
  std::vector<nlohmann::json> out;
  for (const auto& e : events) {
    if (e["ph"] == phase) out.push_back(e);
  }
  return out;
}

TEST(TracerApiNames, RuntimeNamesLoseCuptisVersionSuffixDriverNamesStay) {
  EXPECT_EQ(api_display_name("cudaLaunchKernel_v7000", true), "cudaLaunchKernel");
  EXPECT_EQ(api_display_name("__cudaLaunchKernel_v13000", true), "__cudaLaunchKernel");
  EXPECT_EQ(api_display_name("cudaCreateTextureObject_v2_v11080", true),
            "cudaCreateTextureObject_v2");
  EXPECT_EQ(api_display_name("cudaFoo_v12", true), "cudaFoo_v12");  // not a version suffix
  EXPECT_EQ(api_display_name("cuMemcpyHtoDAsync_v2", false), "cuMemcpyHtoDAsync_v2");
}

TEST(TracerApiNames, OnlyLaunchesCopiesAndSetsAreTraced) {
  std::set<std::string> traced;
  for (const auto& table : {api_names().runtime, api_names().driver}) {
    for (const auto& name : table) {
      if (is_traced_api(name)) traced.insert(name);
    }
  }
  for (const char* name :
       {"cudaLaunchKernel", "__cudaLaunchKernel", "cudaLaunchKernelExC", "cudaGraphLaunch",
        "cudaMemcpyAsync", "cudaMemsetAsync", "cudaLaunchHostFunc", "cuLaunchKernel",
        "cuLaunchKernelEx", "cuGraphLaunch", "cuMemcpyHtoDAsync_v2", "cuMemsetD32Async"}) {
    EXPECT_TRUE(traced.count(name)) << name;
  }
  for (const char* name : {"cudaStreamSynchronize", "cudaMalloc", "cudaGraphAddMemcpyNode",
                           "cudaGraphInstantiate", "cudaEventRecord", "cuGraphAddKernelNode",
                           "cuCtxSynchronize", "cuGraphAddMemsetNode", "cuMemAlloc_v2"}) {
    EXPECT_FALSE(traced.count(name)) << name;
  }
}

// Every launch, copy and set call in the H200 PyTorch traces (same CUPTI 13.0) is one we trace,
// under Kineto's spelling, and its cbid there names the same API in our table.
TEST(TracerApiNames, MatchKinetosNamesAndCbidsOnTheH200Traces) {
  int checked = 0;
  for (const char* file :
       {"h200/trace_eager.json.gz", "h200/budget_eager_decode.json.gz",
        "h200/budget_graph_decode.json.gz", "h200/budget_eager_prefill4096.json.gz"}) {
    auto trace =
        nlohmann::json::parse(kprof::testing::read_gzip_text(kprof::testing::data_path(file)));
    for (const auto& e : trace["traceEvents"]) {
      std::string category = e.value("cat", "");
      if (category != "cuda_runtime" && category != "cuda_driver") continue;
      std::string name = e["name"];
      std::size_t cbid = e["args"]["cbid"];
      const auto& table = category == "cuda_runtime" ? api_names().runtime : api_names().driver;
      ASSERT_LT(cbid, table.size()) << file << " " << name;
      EXPECT_EQ(table[cbid], name) << file << " cbid " << cbid;
      bool launch_like = name.find("LaunchKernel") != std::string::npos ||
                         name.find("GraphLaunch") != std::string::npos ||
                         name.find("Memcpy") != std::string::npos ||
                         name.find("Memset") != std::string::npos;
      EXPECT_EQ(is_traced_api(name), launch_like) << file << " " << name;
      ++checked;
    }
  }
  EXPECT_GT(checked, 1000);
}

TEST(TracerConverter, KernelEventHasKinetosFieldsAndKprofsOwn) {
  CuptiBuffer buffer;
  auto& k = buffer.kernel("_Z15vectorAddKernelPKfS0_Pfi", 727, kT0 + 20'001, kT0 + 45'678, 1, 7);
  k.contextId = 3;
  auto& g = buffer.kernel("nvjet_sm90_tst_128x16", 4237, kT0 + 90'000, kT0 + 105'000, 0, 9);
  g.graphId = 3;
  g.graphNodeId = (std::uint64_t{1} << 53) + 1;  // exact only as an integer
  auto converted = convert(buffer);
  auto kernels = of_phase(converted.events, "X");
  ASSERT_EQ(kernels.size(), 2u);
  const auto& e = kernels[0];
  EXPECT_EQ(e["cat"], "kernel");
  EXPECT_EQ(e["name"], "vectorAddKernel(float const*, float const*, float*, int)");
  EXPECT_EQ(e["pid"], 1);
  EXPECT_EQ(e["tid"], 7);
  EXPECT_DOUBLE_EQ(e["ts"].get<double>(), 5124064240020.001);
  EXPECT_DOUBLE_EQ(e["dur"].get<double>(), 25.677);
  const auto& args = e["args"];
  EXPECT_EQ(args["device"], 1);
  EXPECT_EQ(args["context"], 3);
  EXPECT_EQ(args["stream"], 7);
  EXPECT_EQ(args["correlation"], 727);
  EXPECT_EQ(args["registers per thread"], 64);
  EXPECT_EQ(args["shared memory"], 1024 + 4096);
  EXPECT_EQ(args["static shared memory"], 1024);
  EXPECT_EQ(args["dynamic shared memory"], 4096);
  EXPECT_EQ(args["grid"], nlohmann::json::array({132, 1, 1}));
  EXPECT_EQ(args["block"], nlohmann::json::array({256, 1, 1}));
  EXPECT_FALSE(args.contains("graph id"));  // not launched by a graph: no ids invented
  EXPECT_EQ(kernels[1]["name"], "nvjet_sm90_tst_128x16");  // not mangled: kept as is
  EXPECT_EQ(kernels[1]["args"]["graph id"], 3);
  EXPECT_EQ(kernels[1]["args"]["graph node id"].get<std::uint64_t>(), (std::uint64_t{1} << 53) + 1);
  EXPECT_EQ(converted.counts.events, 2u);
  EXPECT_EQ(converted.counts.records, 2u);
}

TEST(TracerConverter, MemcpyAndMemsetUseKinetosNames) {
  CuptiBuffer buffer;
  auto& copy = buffer.add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_DTOH;
  copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_PINNED;
  copy.bytes = 4000;
  copy.start = kT0 + 1000;
  copy.end = kT0 + 3000;
  copy.correlationId = 55;
  copy.streamId = 7;
  auto& set = buffer.add<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  set.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  set.bytes = 64;
  set.start = kT0 + 5000;
  set.end = kT0 + 5000;  // zero length: a real (if tiny) activity, bandwidth not computable
  set.correlationId = 56;
  auto events = of_phase(convert(buffer).events, "X");
  ASSERT_EQ(events.size(), 2u);
  // The spellings in the H200 trace data/h200/trace_eager.json.gz.
  EXPECT_EQ(events[0]["name"], "Memcpy DtoH (Device -> Pinned)");
  EXPECT_EQ(events[0]["cat"], "gpu_memcpy");
  EXPECT_EQ(events[0]["args"]["bytes"], 4000);
  EXPECT_DOUBLE_EQ(events[0]["args"]["memory bandwidth (GB/s)"].get<double>(), 2.0);
  EXPECT_EQ(events[0]["args"]["correlation"], 55);
  EXPECT_EQ(events[1]["name"], "Memset (Device)");
  EXPECT_EQ(events[1]["cat"], "gpu_memset");
  EXPECT_EQ(events[1]["args"]["memory bandwidth (GB/s)"], "N/A");
}

TEST(TracerConverter, RuntimeDriverAndInternalLaunchRecords) {
  CuptiBuffer buffer;
  buffer.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 10, kT0,
             kT0 + 4000, 414, 415);
  buffer.api(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 11, kT0 + 5000,
             kT0 + 6000, 414, 414);
  buffer.api(CUPTI_ACTIVITY_KIND_INTERNAL_LAUNCH_API, 0, 12, kT0 + 7000, kT0 + 7500, 414, 414);
  buffer.api(CUPTI_ACTIVITY_KIND_RUNTIME, 60000, 13, kT0 + 8000, kT0 + 8100, 414, 414);
  auto events = of_phase(convert(buffer).events, "X");
  ASSERT_EQ(events.size(), 4u);
  EXPECT_EQ(events[0]["cat"], "cuda_runtime");
  EXPECT_EQ(events[0]["name"], "cudaLaunchKernel");
  EXPECT_EQ(events[0]["pid"], 414);
  EXPECT_EQ(events[0]["tid"], 415);
  EXPECT_EQ(events[0]["args"]["cbid"], CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000);
  EXPECT_EQ(events[0]["args"]["correlation"], 10);
  EXPECT_EQ(events[1]["cat"], "cuda_driver");
  EXPECT_EQ(events[1]["name"], "cuLaunchKernelEx");
  EXPECT_EQ(events[2]["cat"], "cuda_driver");
  EXPECT_EQ(events[2]["name"], "LaunchKernel (driver-internal)");
  EXPECT_EQ(events[3]["name"], "cuda runtime API cbid 60000");  // unknown cbid: said, not guessed
}

TEST(TracerConverter, FlowsLinkLaunchesToGpuWorkAndCanBeLeftOut) {
  CuptiBuffer buffer;
  buffer.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, 20, kT0,
             kT0 + 4000, 414, 414);
  buffer.kernel("a", 20, kT0 + 5000, kT0 + 6000, 0, 7);
  buffer.kernel("b", 20, kT0 + 6000, kT0 + 7000, 0, 7);
  auto converted = convert(buffer);
  auto starts = of_phase(converted.events, "s"), finishes = of_phase(converted.events, "f");
  ASSERT_EQ(starts.size(), 1u);
  ASSERT_EQ(finishes.size(), 2u);
  EXPECT_EQ(starts[0]["id"], 20);
  EXPECT_EQ(starts[0]["cat"], "ac2g");
  EXPECT_EQ(starts[0]["pid"], 414);
  EXPECT_EQ(finishes[1]["id"], 20);
  EXPECT_EQ(finishes[1]["bp"], "e");
  EXPECT_EQ(finishes[1]["tid"], 7);
  EXPECT_EQ(converted.counts.events, 3u);  // flows are not events of the cap
  auto without = convert(buffer, {kBase, UINT64_MAX, false});
  EXPECT_EQ(without.events.size(), 3u);
}

TEST(TracerConverter, RecordsWithoutTimestampsAreCountedNotWritten) {
  CuptiBuffer buffer;
  buffer.kernel("a", 1, 0, 0, 0, 7);         // no timing could be collected
  buffer.kernel("b", 2, kT0 + 10, 0, 0, 7);  // still incomplete at a forced flush
  buffer.kernel("c", 3, kT0 + 10, kT0 + 20, 0, 7);
  auto converted = convert(buffer);
  EXPECT_EQ(of_phase(converted.events, "X").size(), 1u);
  EXPECT_EQ(converted.counts.incomplete_records, 2u);
  EXPECT_EQ(converted.counts.records, 3u);
}

TEST(TracerConverter, NvtxRangesPairByIdInEitherOrder) {
  CuptiBuffer buffer;
  buffer.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 1, kT0, "ProfilerStep#1", 414, 414);
  buffer.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 2, kT0 + 9000, nullptr, 414, 420);  // END first
  buffer.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 1, kT0 + 5000, nullptr, 414, 414);
  auto& start2 = buffer.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 2, kT0 + 1000, "load", 414, 420);
  start2.domain = "vllm";
  buffer.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, 7, kT0 + 100, nullptr, 414, 414);   // opened before
  buffer.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, 8, kT0 + 200, "open", 414, 414);  // still open
  buffer.marker(CUPTI_ACTIVITY_FLAG_MARKER_INSTANTANEOUS, 9, kT0 + 300, "mark", 414, 414);
  auto converted = convert(buffer);
  auto ranges = of_phase(converted.events, "X");
  ASSERT_EQ(ranges.size(), 2u);
  EXPECT_EQ(ranges[0]["cat"], "user_annotation");
  EXPECT_EQ(ranges[0]["name"], "ProfilerStep#1");
  EXPECT_DOUBLE_EQ(ranges[0]["dur"].get<double>(), 5.0);
  EXPECT_EQ(ranges[0]["tid"], 414);
  EXPECT_FALSE(ranges[0]["args"].contains("nvtx domain"));
  EXPECT_EQ(ranges[1]["name"], "load");
  EXPECT_EQ(ranges[1]["tid"], 420);
  EXPECT_DOUBLE_EQ(ranges[1]["dur"].get<double>(), 8.0);
  EXPECT_EQ(ranges[1]["args"]["nvtx domain"], "vllm");
  auto instants = of_phase(converted.events, "i");
  ASSERT_EQ(instants.size(), 1u);
  EXPECT_EQ(instants[0]["name"], "mark");
  EXPECT_EQ(converted.counts.unmatched_range_ends, 1u);
  EXPECT_EQ(converted.counts.open_ranges_at_stop, 1u);
}

TEST(TracerConverter, TheCapStopsWritingAndCountsTheRest) {
  CuptiBuffer buffer;
  for (std::uint32_t i = 1; i <= 5; ++i)
    buffer.kernel("k", i, kT0 + i * 100, kT0 + i * 100 + 50, 0, 7);
  LiveStrings strings;
  RecordConverter converter(api_names(), strings, {kBase, 3, false});
  converter.start_window();
  std::string text;
  for_each_record(buffer.data(), buffer.size(),
                  [&](const CUpti_Activity& r) { converter.convert(r, text); });
  EXPECT_TRUE(converter.cap_reached());
  EXPECT_EQ(nlohmann::json::parse("[" + text + "]").size(), 3u);
  WindowCounts counts = converter.finish_window();
  EXPECT_EQ(counts.events, 3u);
  EXPECT_EQ(counts.over_cap, 2u);
  // A new window starts with a fresh count.
  converter.start_window();
  EXPECT_FALSE(converter.cap_reached());
}

TEST(TracerConverter, NamesStayValidJsonWhateverBytesTheyHold) {
  std::string raw = "k\"q\\b\x01\tc\xff\xc3\xa9\xed\xa0\x80z";  // quote, backslash, controls,
                                                                // a stray byte, é, a surrogate
  CuptiBuffer buffer;
  buffer.kernel(raw.c_str(), 1, kT0 + 1, kT0 + 2, 0, 7);
  auto events = convert(buffer).events;  // nlohmann rejects invalid UTF-8: parsing is the check
  EXPECT_EQ(events[0]["name"],
            "k\"q\\b\x01\tc\xEF\xBF\xBD\xc3\xa9\xEF\xBF\xBD\xEF\xBF\xBD\xEF\xBF\xBDz");
}

TEST(TracerConverter, AReusedNamePointerGetsItsNewName) {
  char name[] = "first_kernel";
  LiveStrings strings;
  RecordConverter converter(api_names(), strings, {kBase, UINT64_MAX, false});
  converter.start_window();
  std::string text;
  CuptiBuffer one, two;
  one.kernel(name, 1, kT0 + 1, kT0 + 2, 0, 7);
  for_each_record(one.data(), one.size(),
                  [&](const CUpti_Activity& r) { converter.convert(r, text); });
  std::memcpy(name, "other_kernel", sizeof name);  // a module unloaded, its memory reused
  two.kernel(name, 2, kT0 + 3, kT0 + 4, 0, 7);
  for_each_record(two.data(), two.size(),
                  [&](const CUpti_Activity& r) { converter.convert(r, text); });
  auto events = nlohmann::json::parse("[" + text + "]");
  EXPECT_EQ(events[0]["name"], "first_kernel");
  EXPECT_EQ(events[1]["name"], "other_kernel");
}

TEST(TracerConverter, ClockCheckCountsGpuWorkStartingBeforeItsLaunchPerDevice) {
  CuptiBuffer buffer;
  buffer.kernel("a", 30, kT0 + 500, kT0 + 900, 1, 7);  // GPU record first, launch after
  buffer.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 30,
             kT0 + 100, kT0 + 200, 414, 414);
  buffer.api(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 31,
             kT0 + 1000, kT0 + 1200, 414, 414);
  buffer.kernel("b", 31, kT0 + 990, kT0 + 1500, 0, 7);  // starts 10 ns before its launch
  buffer.kernel("c", 32, kT0 + 990, kT0 + 1500, 0, 7);  // no launch record: not checked
  auto counts = convert(buffer).counts;
  ASSERT_EQ(counts.clock_checks.size(), 2u);
  EXPECT_EQ(counts.clock_checks[1].pairs, 1u);
  EXPECT_EQ(counts.clock_checks[1].gpu_before_launch, 0u);
  EXPECT_EQ(counts.clock_checks[0].pairs, 1u);
  EXPECT_EQ(counts.clock_checks[0].gpu_before_launch, 1u);
}

TEST(TracerConverter, TimesBeforeTheBaseAreNegative) {
  CuptiBuffer buffer;
  buffer.kernel("a", 1, kBase - 1'500, kBase + 500, 0, 7);
  auto events = of_phase(convert(buffer).events, "X");
  EXPECT_DOUBLE_EQ(events[0]["ts"].get<double>(), -1.5);
  EXPECT_DOUBLE_EQ(events[0]["dur"].get<double>(), 2.0);
}

TEST(TracerConverter, OtherKindsAreCountedAndSkipped) {
  CuptiBuffer buffer;
  buffer.add<CUpti_ActivityExternalCorrelation>(CUPTI_ACTIVITY_KIND_EXTERNAL_CORRELATION);
  auto converted = convert(buffer);
  EXPECT_TRUE(converted.events.empty());
  EXPECT_EQ(converted.counts.other_records, 1u);
}

}  // namespace
}  // namespace kprof::tracer
