// Ranking on real PyTorch profiler traces, checked against the same traces read whole by a
// different JSON parser (nlohmann) and summed independently.
#include "timeline/kernel_ranking.h"

#include <gtest/gtest.h>
#include <re2/re2.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <random>

#include "common/error.h"
#include "importers/chrome_trace/chrome_trace_reader.h"
#include "support/test_data.h"
#include "timeline/interval_union.h"
#include "timeline/step_budget.h"

namespace kprof::timeline {
namespace {

using testing::data_path;

Ranking rank(const std::string& path, bool normalize) {
  static const analysis::StageTable stages = analysis::load_stage_table();
  RankingBuilder builder(stages, normalize);
  importers::read_chrome_trace(path, builder);
  return builder.finish();
}

TEST(KernelRanking, TotalsEqualTheSumOfTheTracesGpuEvents) {
  // The tracer_* files are kprof's own tracer (libkprof_tracer.so) on the H200: an eager decode
  // step, its CUDA-graph replay and the two processes of a two-process program.
  for (std::string file :
       {"h200/trace_eager.json.gz", "h200/trace_compile.json.gz", "h200/budget_eager_b1.json.gz",
        "h200/tracer_eager_decode.json.gz", "h200/tracer_graph_decode.json.gz",
        "h200/tracer_two_process_a.json.gz", "h200/tracer_two_process_b.json.gz"}) {
    SCOPED_TRACE(file);
    auto document = nlohmann::json::parse(testing::read_gzip_text(data_path(file)));
    std::map<std::string, double> expected;
    std::map<std::string, std::uint64_t> counts;
    double gpu_total = 0;
    for (const auto& event : document["traceEvents"]) {
      std::string category = event.value("cat", "");
      if (event.value("ph", "") != "X" ||
          (category != "kernel" && category != "gpu_memcpy" && category != "gpu_memset")) {
        continue;
      }
      expected[event["name"]] += event["dur"].get<double>();
      ++counts[event["name"]];
      gpu_total += event["dur"].get<double>();
    }
    ASSERT_FALSE(expected.empty());
    Ranking ranking = rank(data_path(file), /*normalize=*/false);
    ASSERT_EQ(ranking.kernels.size(), expected.size());
    EXPECT_NEAR(ranking.gpu_time_us, gpu_total, 1e-6 * gpu_total);
    double shares = 0;
    for (const KernelStats& k : ranking.kernels) {
      EXPECT_NEAR(k.total_us, expected.at(k.name), 1e-9 * expected.at(k.name) + 1e-9) << k.name;
      EXPECT_EQ(k.count, counts.at(k.name)) << k.name;
      shares += k.share_of_gpu_time;
    }
    EXPECT_NEAR(shares, 1.0, 1e-9);
    double stage_shares = 0;
    for (const StageStats& s : ranking.stages) stage_shares += s.share_of_gpu_time;
    EXPECT_NEAR(stage_shares, 1.0, 1e-9);
    // Largest first.
    for (size_t i = 1; i < ranking.kernels.size(); ++i) {
      EXPECT_GE(ranking.kernels[i - 1].total_us, ranking.kernels[i].total_us);
    }
  }
}

TEST(KernelRanking, NormalisedNamesMergeOnlyWhatDiffersInReturnTypeAndParameters) {
  EXPECT_EQ(normalize_kernel_name("void at::native::(anonymous namespace)::CatArrayBatchedCopy<int>"
                                  "(int*, unsigned int)"),
            "at::native::(anonymous namespace)::CatArrayBatchedCopy<int>");
  EXPECT_EQ(normalize_kernel_name("nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT"),
            "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT");
  EXPECT_EQ(normalize_kernel_name("void foo<(bool)1>(float (*) [4])"), "foo<(bool)1>");
  Ranking raw = rank(data_path("h200/trace_eager.json.gz"), false);
  Ranking merged = rank(data_path("h200/trace_eager.json.gz"), true);
  EXPECT_LE(merged.kernels.size(), raw.kernels.size());
  EXPECT_NEAR(merged.gpu_time_us, raw.gpu_time_us, 1e-9);
  EXPECT_EQ(merged.kernels.front().stage, "memory");  // CatArrayBatchedCopy leads this trace
}

class CountingSink final : public importers::TraceEventSink {
 public:
  void on_event(const importers::TraceEvent&) override { ++events; }
  size_t events = 0;
};

importers::TraceReadStats read_bytes(const std::string& bytes) {
  CountingSink sink;
  return importers::read_chrome_trace_bytes("t.json", bytes, sink);
}

TEST(ChromeTrace, AcceptsObjectAndArrayFormsAndSkipsOtherKeys) {
  EXPECT_EQ(read_bytes(R"({"schemaVersion": 1, "deviceProperties": [{"name": "x"}],
      "traceEvents": [{"ph": "X", "cat": "kernel", "name": "a\"b", "ts": 1, "dur": 2},
                      {"ph": "M", "name": "process_name"}], "traceName": "t"})")
                .events,
            1u);
  EXPECT_EQ(
      read_bytes(R"([{"ph": "X", "cat": "kernel", "name": "k", "ts": 1.5, "dur": 2}])").events, 1u);
}

class NameSink final : public importers::TraceEventSink {
 public:
  void on_event(const importers::TraceEvent& event) override { names.emplace_back(event.name); }
  std::vector<std::string> names;
};

class CorrelationSink final : public importers::TraceEventSink {
 public:
  void on_event(const importers::TraceEvent& event) override {
    correlations.push_back(event.correlation.value_or(-1));
  }
  std::vector<std::int64_t> correlations;
};

TEST(ChromeTrace, OlderAndNewerArgumentSpellings) {
  CorrelationSink sink;
  importers::read_chrome_trace_bytes("t.json",
                                     R"({"traceEvents": [
        {"ph": "X", "cat": "kernel", "name": "a", "ts": 1, "dur": 1, "args": {"correlation": 7}},
        {"ph": "X", "cat": "kernel", "name": "b", "ts": 2, "dur": 1, "args": {"Correlation id": 8}},
        {"ph": "X", "cat": "kernel", "name": "c", "ts": 3, "dur": 1, "args": {"correlation_id": 9}}]})",
                                     sink);
  EXPECT_EQ(sink.correlations, (std::vector<std::int64_t>{7, 8, 9}));
}

TEST(ChromeTrace, BracketsQuotesAndEscapesInsideStrings) {
  NameSink sink;
  importers::read_chrome_trace_bytes(
      "t.json",
      R"({"traceEvents": [{"ph": "X", "cat": "kernel", "name": "a\\\"}{[\\", "ts": 1, "dur": 2},
                          {"ph": "X", "cat": "kernel", "name": "b]", "ts": 3, "dur": 1}]})",
      sink);
  ASSERT_EQ(sink.names.size(), 2u);
  EXPECT_EQ(sink.names[0], "a\\\"}{[\\");
  EXPECT_EQ(sink.names[1], "b]");
}

// Events straddle the reader's 4 MB buffers: a 12 MB trace of one repeated real kernel event.
TEST(ChromeTrace, EventsAcrossBufferBoundaries) {
  auto document =
      nlohmann::json::parse(testing::read_gzip_text(data_path("h200/budget_eager_b1.json.gz")));
  nlohmann::json kernel;
  for (const auto& event : document["traceEvents"]) {
    if (event.value("cat", "") == "kernel") {
      kernel = event;
      break;
    }
  }
  std::string one = kernel.dump();
  std::string trace = "{\"traceEvents\": [";
  size_t count = 0;
  while (trace.size() < (12u << 20)) {
    trace += (count++ ? ",\n" : "") + one;
  }
  trace += "]}";
  std::string path = ::testing::TempDir() + "/repeated.json";
  std::FILE* out = std::fopen(path.c_str(), "wb");
  std::fwrite(trace.data(), 1, trace.size(), out);
  std::fclose(out);
  Ranking ranking = rank(path, false);
  ASSERT_EQ(ranking.kernels.size(), 1u);
  EXPECT_EQ(ranking.kernels[0].count, count);
  EXPECT_NEAR(ranking.kernels[0].total_us, count * kernel["dur"].get<double>(), 1e-6 * count);
}

void expect_invalid(const std::string& bytes, const std::string& what) {
  try {
    read_bytes(bytes);
    ADD_FAILURE() << "no error for: " << bytes;
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_EQ(error.position().kind, InputPosition::Kind::kByte);
    EXPECT_NE(error.message().find(what), std::string::npos) << error.what();
  }
}

TEST(ChromeTrace, BadInputNamesTheProblemAndOffset) {
  expect_invalid("", "empty");
  expect_invalid("NVR\0", "not a Chrome trace");
  expect_invalid(R"({"traceEvents": [{"ph": "X", "name": "k", "ts": 1)", "truncated");
  expect_invalid(R"({"traceEvents": [{"ph": "X", "name": "k", "ts": ]})", "malformed trace event");
  expect_invalid(R"({"traceEvents": [1, 2]})", "expected an event object");
  expect_invalid(R"({"other": 1})", "no \"traceEvents\"");
  expect_invalid(R"({"traceEvents": []} trailing)", "after the end");
}

TEST(ChromeTrace, TruncatedGzipIsAnError) {
  std::string compressed;
  {
    std::FILE* in = std::fopen(data_path("h200/trace_eager.json.gz").c_str(), "rb");
    char buffer[4096];
    size_t n;
    while ((n = std::fread(buffer, 1, sizeof buffer, in)) > 0) compressed.append(buffer, n);
    std::fclose(in);
  }
  std::string path = ::testing::TempDir() + "/truncated.json.gz";
  std::FILE* out = std::fopen(path.c_str(), "wb");
  std::fwrite(compressed.data(), 1, compressed.size() / 2, out);
  std::fclose(out);
  CountingSink sink;
  try {
    importers::read_chrome_trace(path, sink);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_NE(std::string(error.what()).find("truncated"), std::string::npos) << error.what();
  }
}

}  // namespace
}  // namespace kprof::timeline

namespace kprof::timeline {
namespace {

// Per device, read whole by nlohmann and computed here: counts, sums, span, the union of the
// device's intervals and the union of its work other than `communication` (a regex).
struct DeviceFigures {
  std::uint64_t gpu_events = 0, kernels = 0;
  double gpu_time = 0, kernel_time = 0, first = 1e300, last = -1e300, busy = 0, other_busy = 0;
  double communication = 0;
};

double union_of(std::vector<std::pair<double, double>> xs) {
  std::sort(xs.begin(), xs.end());
  double total = 0, start = 0, end = -1e300;
  for (auto [s, e] : xs) {
    if (s > end) {
      if (end > -1e300) total += end - start;
      start = s;
      end = e;
    } else {
      end = std::max(end, e);
    }
  }
  if (end > -1e300) total += end - start;
  return total;
}

std::map<std::int64_t, DeviceFigures> device_figures(const std::string& file,
                                                     const std::string& communication) {
  auto document = nlohmann::json::parse(testing::read_gzip_text(data_path(file)));
  std::map<std::int64_t, DeviceFigures> out;
  std::map<std::int64_t, std::vector<std::pair<double, double>>> all, other;
  RE2 comm(communication);
  for (const auto& e : document["traceEvents"]) {
    std::string cat = e.value("cat", "");
    if (e.value("ph", "") != "X" ||
        (cat != "kernel" && cat != "gpu_memcpy" && cat != "gpu_memset")) {
      continue;
    }
    std::int64_t device = e["args"].value("device", std::int64_t{-1});
    double ts = e["ts"].get<double>(), dur = e["dur"].get<double>();
    DeviceFigures& d = out[device];
    ++d.gpu_events;
    d.gpu_time += dur;
    bool is_comm = cat == "kernel" && RE2::PartialMatch(e["name"].get<std::string>(), comm);
    if (cat == "kernel") {
      ++d.kernels;
      d.kernel_time += dur;
    }
    if (is_comm) d.communication += dur;
    d.first = std::min(d.first, ts);
    d.last = std::max(d.last, ts + dur);
    all[device].emplace_back(ts, ts + dur);
    if (!is_comm) other[device].emplace_back(ts, ts + dur);
  }
  for (auto& [device, d] : out) {
    d.busy = union_of(all[device]);
    d.other_busy = union_of(other[device]);
  }
  return out;
}

// data/h200/tracer_two_device.json.gz is a reconstruction (tools/traces/merge_two_devices.py): the
// two real processes of tracer_two_process_{a,b}, the second's GPU work on device 1. cuBLAS's
// split-K reduction stands in for a communication kernel (no real trace here has NCCL): what is
// checked is the accounting of exposed time on a real timeline, not the stage rule.
TEST(KernelRanking, SeveralDevicesAreAccountedApart) {
  const std::string file = "h200/tracer_two_device.json.gz";
  analysis::StageTable stages;
  stages.rules.push_back({"communication", "splitKreduce", std::make_shared<RE2>("splitKreduce")});
  RankingBuilder builder(stages, true);
  importers::read_chrome_trace(data_path(file), builder);
  Ranking ranking = builder.finish();
  auto expected = device_figures(file, "splitKreduce");
  ASSERT_EQ(expected.size(), 2u);
  ASSERT_EQ(ranking.devices.size(), 2u);
  double summed = 0;
  for (const DeviceStats& d : ranking.devices) {
    SCOPED_TRACE(d.device);
    const DeviceFigures& want = expected.at(d.device);
    EXPECT_EQ(d.gpu_events, want.gpu_events);
    EXPECT_EQ(d.kernel_events, want.kernels);
    EXPECT_NEAR(d.gpu_time_us, want.gpu_time, 1e-6 * want.gpu_time);
    EXPECT_NEAR(d.kernel_time_us, want.kernel_time, 1e-6 * want.kernel_time);
    EXPECT_NEAR(d.span_us, want.last - want.first, 1e-6);
    EXPECT_NEAR(d.busy_us, want.busy, 1e-6 * want.busy);
    EXPECT_NEAR(d.busy_fraction, want.busy / (want.last - want.first), 1e-9);
    EXPECT_GT(want.communication, 0);
    EXPECT_NEAR(d.communication_us, want.communication, 1e-6 * want.communication);
    EXPECT_NEAR(d.exposed_communication_us, want.busy - want.other_busy, 1e-6 * want.busy);
    EXPECT_EQ(d.late_intervals, 0u);
    EXPECT_LE(d.busy_fraction, 1.0);
    summed += d.gpu_time_us;
  }
  EXPECT_NEAR(summed, ranking.gpu_time_us, 1e-6 * summed);
  // The merged view's wall counts once per device: no kernel is "more than all of the wall".
  double wall_shares = 0;
  for (const KernelStats& k : ranking.kernels) wall_shares += k.share_of_wall;
  EXPECT_LE(wall_shares, 1.0);
}

// The bounded union: with a window far smaller than the trace, intervals that arrive in time order
// (each device's do in this trace) give the exact union; one that arrives before what was closed
// is counted and its closed part left out (a lower bound, never more).
TEST(IntervalUnion, BoundedWindowIsExactInOrderAndALowerBoundOutOfOrder) {
  auto document =
      nlohmann::json::parse(testing::read_gzip_text(data_path("h200/tracer_two_device.json.gz")));
  std::vector<std::pair<double, double>> device0;
  for (const auto& e : document["traceEvents"]) {
    if (e.value("cat", "") == "kernel" && e["args"].value("device", -1) == 0) {
      device0.emplace_back(e["ts"].get<double>(), e["ts"].get<double>() + e["dur"].get<double>());
    }
  }
  double exact = union_of(device0);
  IntervalUnion small(8);
  for (auto [s, e] : device0) small.add(s, e);
  EXPECT_EQ(small.late_intervals(), 0u);
  EXPECT_NEAR(small.length(), exact, 1e-6 * exact);
  std::vector<std::pair<double, double>> reversed(device0.rbegin(), device0.rend());
  IntervalUnion late(8);
  for (auto [s, e] : reversed) late.add(s, e);
  EXPECT_GT(late.late_intervals(), 0u);
  EXPECT_LT(late.length(), exact);
  IntervalUnion whole(reversed.size() + 1);
  for (auto [s, e] : reversed) whole.add(s, e);
  EXPECT_EQ(whole.late_intervals(), 0u);
  EXPECT_NEAR(whole.length(), exact, 1e-6 * exact);
}

// The union as IntervalUnion computed it before its in-order shortcut: every interval looked up,
// the pieces it touches erased and the merged one put back, the window's earliest closed.
double reference_union(const std::vector<std::pair<double, double>>& intervals, std::size_t window,
                       std::uint64_t& late) {
  std::map<double, double> open;
  double open_length = 0, closed_length = 0, frontier = 0;
  bool closed_any = false;
  late = 0;
  for (auto [start, end] : intervals) {
    if (closed_any && start < frontier) {
      ++late;
      start = frontier;
    }
    if (!(end > start)) continue;
    auto it = open.upper_bound(start);
    if (it != open.begin() && std::prev(it)->second >= start) --it;
    while (it != open.end() && it->first <= end) {
      start = std::min(start, it->first);
      end = std::max(end, it->second);
      open_length -= it->second - it->first;
      it = open.erase(it);
    }
    open.emplace(start, end);
    open_length += end - start;
    while (open.size() > window) {
      auto first = open.begin();
      closed_length += first->second - first->first;
      open_length -= first->second - first->first;
      frontier = first->second;
      closed_any = true;
      open.erase(first);
    }
  }
  return closed_length + open_length;
}

// Intervals mostly in time order (the shortcut: extending the last piece or following it), some
// overlapping it, some arriving early (the general path), with times of a trace's magnitude where
// sums round: the same length to the bit, and the same late count, as the reference.
TEST(IntervalUnion, TheInOrderShortcutSumsAsTheGeneralPathDoes) {
  std::mt19937_64 random(38);
  std::uniform_real_distribution<double> step(0, 12.5), length(0.001, 30);
  std::uniform_int_distribution<int> kind(0, 9);
  for (std::size_t window : {std::size_t{4}, std::size_t{64}, std::size_t{1} << 14}) {
    std::vector<std::pair<double, double>> intervals;
    double t = 5119051336023.669;
    for (int i = 0; i < 20000; ++i) {
      const int k = kind(random);
      t += k == 0 ? -step(random) * 20 : step(random);  // one in ten starts well before
      intervals.emplace_back(t, t + length(random) * (k == 1 ? 40 : 1));
    }
    IntervalUnion tested(window);
    for (auto [s, e] : intervals) tested.add(s, e);
    std::uint64_t late = 0;
    const double expected = reference_union(intervals, window, late);
    EXPECT_EQ(tested.length(), expected) << "window " << window;
    EXPECT_EQ(tested.late_intervals(), late) << "window " << window;
  }
}

}  // namespace
}  // namespace kprof::timeline

namespace kprof::timeline {
namespace {

// Expert-parallel all-to-all is communication whatever its stage (issue 29): on a small trace in
// the shape of DeepSeek-V3's published profile (DeepEP's internode dispatch, named as DeepEP's
// source instantiates it, beside a MoE GEMM), rank and budget count the dispatch as
// communication with the default stage table — the stage stays moe_dispatch — and its time
// outside the GEMM as exposed. Expected figures by hand from the timestamps below.
TEST(KernelRanking, ExpertParallelAllToAllIsCommunicationAndKeepsItsStage) {
  const std::string dispatch =
      "void deep_ep::internode::dispatch<false, 4, false, 7, 4>(int4*, float*, long*)";
  std::string path = ::testing::TempDir() + "/deepep.json";
  std::ofstream(path) << R"json({"traceEvents": [
    {"ph": "X", "cat": "user_annotation", "name": "ProfilerStep#1", "pid": 1, "tid": 1, "ts": 0,
     "dur": 200},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 1,
     "dur": 2, "args": {"correlation": 1}},
    {"ph": "X", "cat": "cuda_runtime", "name": "cudaLaunchKernel", "pid": 1, "tid": 1, "ts": 4,
     "dur": 2, "args": {"correlation": 2}},
    {"ph": "X", "cat": "kernel", "name": ")json" +
                             dispatch + R"json(", "pid": 0, "tid": 7,
     "ts": 10, "dur": 100, "args": {"device": 0, "stream": 7, "correlation": 1}},
    {"ph": "X", "cat": "kernel", "name": "void fused_moe_kernel<128>(float*)", "pid": 0,
     "tid": 8, "ts": 60, "dur": 80, "args": {"device": 0, "stream": 8, "correlation": 2}}
  ]})json";
  static const analysis::StageTable stages = analysis::load_stage_table();
  ASSERT_EQ(stages.communication_kind(dispatch), analysis::CommunicationKind::kExpertParallel);
  RankingBuilder builder(stages, true);
  importers::read_chrome_trace(path, builder);
  Ranking ranking = builder.finish();
  ASSERT_EQ(ranking.devices.size(), 1u);
  EXPECT_DOUBLE_EQ(ranking.devices[0].communication_us, 100);
  // The dispatch runs 10–110, the GEMM 60–140: only 10–60 is communication alone.
  EXPECT_DOUBLE_EQ(ranking.devices[0].exposed_communication_us, 50);
  for (const KernelStats& k : ranking.kernels) {
    if (k.name.find("deep_ep") != std::string::npos) {
      EXPECT_EQ(k.stage, "moe_dispatch");
      EXPECT_TRUE(k.communication);
    } else {
      EXPECT_FALSE(k.communication) << k.name;
    }
  }
  BudgetBuilder budget_builder(&stages);
  importers::read_chrome_trace(path, budget_builder);
  Budget budget = budget_builder.finish("", {});
  ASSERT_EQ(budget.steps.size(), 1u);
  EXPECT_DOUBLE_EQ(budget.steps[0].exposed_communication_us, 50);
}

}  // namespace
}  // namespace kprof::timeline
