// The tracer's trace read back by kprof: hand-built CUPTI buffers of two decode-like steps (eager
// launches, a copy, a set, a CUDA-graph replay, NVTX steps) are converted and written as the
// injection does, then ranked and budgeted by kprof's own reader and analyses (library and CLI).
// Expected totals are computed here from the records' own fields, not by the code under test.
// Also: the raw dump written and replayed gives the same events; trace files appear only whole.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

#include "analysis/stages.h"
#include "importers/chrome_trace/chrome_trace_reader.h"
#include "support/run_process.h"
#include "support/test_data.h"
#include "timeline/kernel_ranking.h"
#include "timeline/step_budget.h"
#include "tracer/cupti_buffer.h"
#include "tracer/cupti_support.h"
#include "tracer/graph_node_table.h"
#include "tracer/raw_dump.h"
#include "tracer/record_converter.h"
#include "tracer/trace_file.h"

namespace kprof::tracer {
namespace {

using testing::CuptiBuffer;

constexpr std::uint64_t kBase = 1790857026000000000ull;
constexpr std::uint64_t kT0 = kBase + 5124064240000000ull;
constexpr std::uint64_t kUs = 1000;
constexpr std::uint32_t kPid = 414;

const char* const kVectorAdd = "_Z15vectorAddKernelPKfS0_Pfi";
const char* const kFill =
    "_ZN2at6native29vectorized_elementwise_kernelILi4ENS0_11FillFunctorIfEESt5arrayIPcLm1EEEEviT0_"
    "T1_";
const char* const kGemm = "nvjet_sm90_tst_128x16_64x11_4x1_v_bz_NNT";
// The names as traced: c++filt's demangling (a name that is not mangled stays as it is).
const std::map<std::string, std::string> kTracedName = {
    {kVectorAdd, "vectorAddKernel(float const*, float const*, float*, int)"},
    {kFill,
     "void at::native::vectorized_elementwise_kernel<4, at::native::FillFunctor<float>, "
     "std::array<char*, 1ul> >(int, at::native::FillFunctor<float>, std::array<char*, 1ul>)"},
    {kGemm, kGemm}};

// Two buffers as per-thread buffering delivers them: the host side (NVTX, API calls) and the GPU
// side; plus what kprof must find in them.
struct Scenario {
  CuptiBuffer host, gpu;
  struct Gpu {
    std::string traced_name;
    std::uint64_t start, end;
    std::uint32_t correlation;
  };
  std::vector<Gpu> gpu_work;
  std::map<std::uint32_t, std::pair<std::uint64_t, bool>> launches;  // correlation → time, graph
  std::vector<std::pair<std::uint64_t, std::uint64_t>> steps;

  void launch(CUpti_ActivityKind kind, CUpti_CallbackId cbid, std::uint32_t correlation,
              std::uint64_t at, bool graph = false) {
    host.api(kind, cbid, correlation, at, at + 3 * kUs, kPid, kPid);
    launches[correlation] = {at, graph};
  }
  CUpti_ActivityKernel10& kernel(const char* name, std::uint32_t correlation, std::uint64_t start,
                                 std::uint64_t end) {
    gpu_work.push_back({kTracedName.at(name), start, end, correlation});
    return gpu.kernel(name, correlation, start, end, 0, 7);
  }
  void step(std::uint32_t id, const char* name, std::uint64_t start, std::uint64_t end) {
    host.marker(CUPTI_ACTIVITY_FLAG_MARKER_START, id, start, name, kPid, kPid);
    host.marker(CUPTI_ACTIVITY_FLAG_MARKER_END, id, end, nullptr, kPid, kPid);
    steps.emplace_back(start, end);
  }
};

Scenario decode_steps() {
  Scenario s;
  const std::uint64_t t = kT0;
  s.step(1, "ProfilerStep#1", t, t + 200 * kUs);
  s.launch(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 100,
           t + 1 * kUs);
  s.kernel(kVectorAdd, 100, t + 20 * kUs, t + 45 * kUs);
  s.launch(CUPTI_ACTIVITY_KIND_DRIVER, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, 101, t + 10 * kUs);
  s.kernel(kFill, 101, t + 50 * kUs, t + 60 * kUs + 123);
  s.launch(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemcpyAsync_v3020, 102,
           t + 15 * kUs);
  auto& copy = s.gpu.add<CUpti_ActivityMemcpy6>(CUPTI_ACTIVITY_KIND_MEMCPY);
  copy.copyKind = CUPTI_ACTIVITY_MEMCPY_KIND_HTOD;
  copy.srcKind = CUPTI_ACTIVITY_MEMORY_KIND_PAGEABLE;
  copy.dstKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  copy.bytes = 1 << 20;
  copy.start = t + 62 * kUs;
  copy.end = t + 70 * kUs;
  copy.correlationId = 102;
  copy.streamId = 7;
  s.gpu_work.push_back({"Memcpy HtoD (Pageable -> Device)", copy.start, copy.end, 102});
  s.launch(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaMemsetAsync_v3020, 103,
           t + 19 * kUs);
  auto& set = s.gpu.add<CUpti_ActivityMemset4>(CUPTI_ACTIVITY_KIND_MEMSET);
  set.memoryKind = CUPTI_ACTIVITY_MEMORY_KIND_DEVICE;
  set.bytes = 4096;
  set.start = t + 71 * kUs;
  set.end = t + 72 * kUs;
  set.correlationId = 103;
  set.streamId = 7;
  s.gpu_work.push_back({"Memset (Device)", set.start, set.end, 103});
  // A graph replay: its kernels carry the cudaGraphLaunch's correlation id, graph and node ids.
  s.launch(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaGraphLaunch_v10000, 104,
           t + 30 * kUs, true);
  for (std::uint64_t node = 1; node <= 2; ++node) {
    auto& k = s.kernel(kGemm, 104, t + (70 + 20 * node) * kUs, t + (85 + 20 * node) * kUs);
    k.graphId = 3;
    k.graphNodeId = (std::uint64_t{3} << 32) | node;
  }
  s.step(2, "ProfilerStep#2", t + 300 * kUs, t + 500 * kUs);
  s.launch(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID___cudaLaunchKernel_v13000, 200,
           t + 301 * kUs);
  s.kernel(kVectorAdd, 200, t + 320 * kUs, t + 345 * kUs);
  s.launch(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 201,
           t + 302 * kUs);
  s.kernel(kFill, 201, t + 340 * kUs, t + 350 * kUs);  // overlaps the one before (another stream)
  s.gpu.kernel(kVectorAdd, 202, 0, 0, 0, 7);           // no timestamps: counted, not written
  // After the steps.
  s.launch(CUPTI_ACTIVITY_KIND_RUNTIME, CUPTI_RUNTIME_TRACE_CBID_cudaLaunchKernel_v7000, 300,
           t + 600 * kUs);
  s.kernel(kGemm, 300, t + 610 * kUs, t + 620 * kUs);
  return s;
}

class TraceRoundTrip : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kprof-tracer-test-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static const ApiNames& api_names() {
    static const ApiNames names = load_api_names();
    return names;
  }

  // What the injection's writer does with the buffers of one window, without its threads.
  std::string write_trace(Scenario& s, const std::string& name) {
    std::string path = dir_ + "/" + name;
    TraceHeader header{kBase, 130001, kPid, "testhost", 1};
    std::string error;
    auto file = TraceFile::create(path, header, &error);
    EXPECT_TRUE(file) << error;
    LiveStrings strings;
    RecordConverter converter(api_names(), strings, {kBase, UINT64_MAX, true});
    converter.start_window();
    for (CuptiBuffer* buffer : {&s.gpu, &s.host}) {  // GPU buffer first: order must not matter
      std::string events;
      EXPECT_EQ(for_each_record(buffer->data(), buffer->size(),
                                [&](const CUpti_Activity& r) { converter.convert(r, events); }),
                "");
      EXPECT_TRUE(file->write(events, &error)) << error;
    }
    WindowSummary summary;
    summary.tracer_version = "test";
    summary.stop_reason = "control file";
    summary.max_events = UINT64_MAX;
    summary.counts = converter.finish_window();
    EXPECT_TRUE(file->finish(summary, &error)) << error;
    return path;
  }

  std::string dir_;
};

TEST_F(TraceRoundTrip, KprofRanksTheTracerTraceWithTheRecordsTotals) {
  Scenario s = decode_steps();
  std::string path = write_trace(s, "t.json.gz");
  std::map<std::string, std::pair<std::uint64_t, double>> expected;  // count, µs
  for (const auto& g : s.gpu_work) {
    expected[g.traced_name].first += 1;
    expected[g.traced_name].second += static_cast<double>(g.end - g.start) / 1000.0;
  }
  static const analysis::StageTable stages = analysis::load_stage_table();
  timeline::RankingBuilder builder(stages, false);  // names as traced
  importers::TraceReadStats stats = importers::read_chrome_trace(path, builder);
  timeline::Ranking ranking = builder.finish();
  ASSERT_EQ(ranking.kernels.size(), expected.size());
  for (const auto& k : ranking.kernels) {
    SCOPED_TRACE(k.name);
    ASSERT_TRUE(expected.count(k.name));
    EXPECT_EQ(k.count, expected[k.name].first);
    EXPECT_NEAR(k.total_us, expected[k.name].second, 1e-6);
  }
  EXPECT_EQ(ranking.kernel_events, s.gpu_work.size() - 2);
  EXPECT_EQ(ranking.memcpy_events, 1u);
  EXPECT_EQ(ranking.memset_events, 1u);
  // Complete events: GPU work, API calls, NVTX steps; the flows (one per launch call and one per
  // GPU activity) are counted and skipped by the reader.
  EXPECT_EQ(stats.events, s.gpu_work.size() + s.launches.size() + s.steps.size());
  EXPECT_EQ(stats.other_events, s.launches.size() + s.gpu_work.size());
}

TEST_F(TraceRoundTrip, KprofBudgetsTheStepsFromNvtxRangesAndLaunchCorrelation) {
  Scenario s = decode_steps();
  std::string path = write_trace(s, "t.json.gz");
  timeline::BudgetBuilder builder;
  importers::read_chrome_trace(path, builder);
  timeline::Budget budget = builder.finish("", {});
  ASSERT_EQ(budget.steps.size(), 2u);
  for (size_t i = 0; i < 2; ++i) {
    SCOPED_TRACE(i);
    auto [step_start, step_end] = s.steps[i];
    std::vector<std::pair<double, double>> work;
    std::uint64_t launches = 0, graph_launches = 0;
    for (const auto& [correlation, launch] : s.launches) {
      if (launch.first >= step_start && launch.first <= step_end) {
        ++launches;
        graph_launches += launch.second;
      }
    }
    for (const auto& g : s.gpu_work) {
      auto at = s.launches.at(g.correlation).first;
      if (at >= step_start && at <= step_end) {
        // Relative to the base, as the trace's µs are (absolute ns do not fit a double's 53 bits).
        work.emplace_back((g.start - kBase) / 1000.0, (g.end - kBase) / 1000.0);
      }
    }
    std::sort(work.begin(), work.end());
    double busy = 0, open_start = work[0].first, open_end = work[0].second, last = 0;
    for (auto [b, e] : work) {
      last = std::max(last, e);
      if (b > open_end) {
        busy += open_end - open_start;
        open_start = b;
      }
      open_end = std::max(open_end, e);
    }
    busy += open_end - open_start;
    const auto& step = budget.steps[i];
    EXPECT_EQ(step.name, "ProfilerStep#" + std::to_string(i + 1));
    EXPECT_EQ(step.source, "cpu annotation");
    EXPECT_EQ(step.gpu_activities, work.size());
    EXPECT_EQ(step.kernel_launches, launches);
    EXPECT_EQ(step.graph_launches, graph_launches);
    EXPECT_NEAR(step.gpu_busy_us, busy, 1e-6);
    EXPECT_NEAR(step.gpu_span_us, last - work[0].first, 1e-6);
  }
  EXPECT_EQ(budget.steps[0].gpu_activities, 6u);  // both graph kernels belong to step 1
  EXPECT_EQ(budget.steps[1].gpu_activities, 2u);
  EXPECT_EQ(budget.steps[0].graph_launches, 1u);
}

TEST_F(TraceRoundTrip, GraphAndNodeIdsReachKprofsReaderExactly) {
  Scenario s = decode_steps();
  std::string path = write_trace(s, "t.json.gz");
  struct Sink final : importers::TraceEventSink {
    void on_event(const importers::TraceEvent& e) override {
      if (e.category == "kernel") ids.emplace_back(e.graph_id, e.graph_node_id);
    }
    std::vector<std::pair<std::optional<std::int64_t>, std::optional<std::uint64_t>>> ids;
  } sink;
  importers::read_chrome_trace(path, sink);
  std::multiset<std::uint64_t> nodes;
  int without = 0;
  for (const auto& [graph, node] : sink.ids) {
    if (!node) {
      ++without;
      EXPECT_FALSE(graph);
      continue;
    }
    EXPECT_EQ(graph, 3);
    nodes.insert(*node);
  }
  EXPECT_EQ(without, 5);  // the eager kernels
  EXPECT_EQ(nodes, (std::multiset<std::uint64_t>{(3ull << 32) | 1, (3ull << 32) | 2}));
}

TEST_F(TraceRoundTrip, TheFileIsKinetoShapedAndEndsWithKprofsSummary) {
  Scenario s = decode_steps();
  auto trace = nlohmann::json::parse(kprof::testing::read_gzip_text(write_trace(s, "t.json.gz")));
  EXPECT_EQ(trace["schemaVersion"], 1);
  EXPECT_EQ(trace["baseTimeNanoseconds"].get<std::uint64_t>(), kBase);
  EXPECT_EQ(trace["displayTimeUnit"], "ms");
  const auto& k = trace["kprof"];
  EXPECT_EQ(k["format"], "kprof.trace/1");
  EXPECT_EQ(k["pid"], kPid);
  EXPECT_EQ(k["window"], 1);
  EXPECT_EQ(k["events"], s.gpu_work.size() + s.launches.size() + s.steps.size());
  EXPECT_EQ(k["records"], s.gpu_work.size() + 1 + s.launches.size() + 4);
  EXPECT_EQ(k["cap_hit"], false);
  EXPECT_EQ(k["dropped"]["incomplete_records"], 1);
  EXPECT_EQ(k["dropped"]["cupti_dropped_records"], 0);
  EXPECT_EQ(k["nvtx"]["unmatched_range_ends"], 0);
  // Every launch was checked against its GPU work (the GPU buffer came first: one pair per
  // launch, the graph's earliest kernel for the graph launch); none started before its launch.
  ASSERT_EQ(k["clock_check"].size(), 1u);
  EXPECT_EQ(k["clock_check"][0]["pairs"], s.launches.size());
  EXPECT_EQ(k["clock_check"][0]["gpu_before_launch"], 0);
}

TEST_F(TraceRoundTrip, KprofsCommandLineReadsIt) {
  Scenario s = decode_steps();
  std::string path = write_trace(s, "t.json.gz");
  auto rank = kprof::testing::run_process({KPROF_BINARY, "rank", path, "--json"});
  ASSERT_EQ(rank.exit_code, 0) << rank.err;
  auto ranked = nlohmann::json::parse(rank.out);
  std::string first = ranked["kernels"][0]["name"];
  EXPECT_EQ(first, "vectorAddKernel");  // 25 + 25 µs, the largest
  auto budget = kprof::testing::run_process({KPROF_BINARY, "budget", path});
  ASSERT_EQ(budget.exit_code, 0) << budget.err;
  EXPECT_NE(budget.out.find("ProfilerStep#1"), std::string::npos) << budget.out;
  EXPECT_NE(budget.out.find("ProfilerStep#2"), std::string::npos) << budget.out;
}

TEST_F(TraceRoundTrip, ARawDumpReplaysIntoTheSameEventsWithoutTouchingRecordedPointers) {
  Scenario s = decode_steps();
  std::string direct = write_trace(s, "direct.json.gz");
  std::uint32_t version = 0;
  ASSERT_EQ(cuptiGetVersion(&version), CUPTI_SUCCESS);
  std::string error;
  auto dump = RawDumpWriter::create(dir_, "testhost", kPid,
                                    {{"format", "kprof.cupti-raw/1"},
                                     {"tracer_version", "test"},
                                     {"cupti_version", std::to_string(version)},
                                     {"host", "testhost"},
                                     {"pid", std::to_string(kPid)},
                                     {"base_ns", std::to_string(kBase)}},
                                    &error);
  ASSERT_TRUE(dump) << error;
  // Kernel names live in writable copies here, so they can be overwritten after the dump.
  std::vector<std::unique_ptr<std::string>> owned;
  for (CuptiBuffer* buffer : {&s.gpu, &s.host}) {
    std::vector<std::pair<const char*, std::string_view>> strings;
    for_each_record(buffer->data(), buffer->size(), [&](const CUpti_Activity& r) {
      if (r.kind == CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL) {
        auto& k =
            const_cast<CUpti_ActivityKernel10&>(reinterpret_cast<const CUpti_ActivityKernel10&>(r));
        const char* name = k.name;
        owned.push_back(std::make_unique<std::string>(name));
        k.name = owned.back()->c_str();
      }
    });
    for_each_record(buffer->data(), buffer->size(), [&](const CUpti_Activity& r) {
      for (const char* p : record_strings(r)) {
        if (p) strings.emplace_back(p, p);
      }
    });
    ASSERT_TRUE(dump->write_buffer(buffer->data(), buffer->size(), strings, &error)) << error;
  }
  for (auto& name : owned) std::fill(name->begin(), name->end(), 'x');  // the process moved on
  std::string replayed = dir_ + "/replayed.json.gz";
  ASSERT_TRUE(convert_raw_dump(dump->folder(), replayed, &error)) << error;
  auto a = nlohmann::json::parse(kprof::testing::read_gzip_text(direct));
  auto b = nlohmann::json::parse(kprof::testing::read_gzip_text(replayed));
  EXPECT_EQ(a["traceEvents"], b["traceEvents"]);
  EXPECT_EQ(b["kprof"]["pid"], kPid);
  EXPECT_EQ(b["kprof"]["stop_reason"], "raw dump replay");
}

TEST_F(TraceRoundTrip, ReplayRefusesADumpOfAnotherCuptiAndNamesMissingStrings) {
  std::string error;
  auto dump = RawDumpWriter::create(
      dir_, "h", 1, {{"format", "kprof.cupti-raw/1"}, {"cupti_version", "120000"}}, &error);
  ASSERT_TRUE(dump) << error;
  CuptiBuffer buffer;
  buffer.kernel(reinterpret_cast<const char*>(0x10), 1, kT0, kT0 + 1000, 0, 7);  // never read
  ASSERT_TRUE(dump->write_buffer(buffer.data(), buffer.size(), {}, &error));
  EXPECT_FALSE(convert_raw_dump(dump->folder(), dir_ + "/x.json.gz", &error));
  EXPECT_NE(error.find("recorded with CUPTI 120000"), std::string::npos) << error;
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/x.json.gz"));

  std::uint32_t version = 0;
  ASSERT_EQ(cuptiGetVersion(&version), CUPTI_SUCCESS);
  auto same = RawDumpWriter::create(
      dir_, "h", 1, {{"format", "kprof.cupti-raw/1"}, {"cupti_version", std::to_string(version)}},
      &error);
  ASSERT_TRUE(same) << error;
  EXPECT_EQ(same->folder(), dir_ + "/kprof-raw.h.1.2");  // the first one is kept
  ASSERT_TRUE(same->write_buffer(buffer.data(), buffer.size(), {}, &error));
  ASSERT_TRUE(convert_raw_dump(same->folder(), dir_ + "/y.json.gz", &error)) << error;
  auto trace = nlohmann::json::parse(kprof::testing::read_gzip_text(dir_ + "/y.json.gz"));
  EXPECT_EQ(trace["traceEvents"][0]["name"], "<string 0x10 not in the dump>");
}

TEST_F(TraceRoundTrip, ADumpWithABrokenNameTableIsRefusedWithItsLine) {
  std::filesystem::create_directory(dir_ + "/d");
  std::ofstream(dir_ + "/d/meta.txt") << "format kprof.cupti-raw/1\n";
  std::ofstream(dir_ + "/d/names.tsv") << "1\t0x10\tok\n1\t16\tno hex\n";
  RawDump dump;
  std::string error;
  EXPECT_FALSE(read_raw_dump(dir_ + "/d", &dump, &error));
  EXPECT_EQ(error, dir_ + "/d/names.tsv: line 2: expected SEQUENCE<TAB>0xPOINTER<TAB>TEXT");
}

TEST_F(TraceRoundTrip, TraceFilesAppearOnlyWholeAndNeverReplaceAnother) {
  TraceHeader header{kBase, 130001, kPid, "h", 1};
  std::string error, path = dir_ + "/w.json.gz";
  {
    auto file = TraceFile::create(path, header, &error);
    ASSERT_TRUE(file) << error;
    EXPECT_TRUE(std::filesystem::exists(path + ".partial"));
    EXPECT_FALSE(std::filesystem::exists(path));
  }  // never finished (a write failed, say): nothing is left behind
  EXPECT_FALSE(std::filesystem::exists(path + ".partial"));
  EXPECT_FALSE(std::filesystem::exists(path));

  auto file = TraceFile::create(path, header, &error);
  ASSERT_TRUE(file);
  std::ofstream(path) << "someone else's file";  // appeared meanwhile
  WindowSummary summary;
  EXPECT_FALSE(file->finish(summary, &error));
  EXPECT_NE(error.find("complete, but cannot be renamed"), std::string::npos) << error;
  file.reset();
  EXPECT_EQ(kprof::testing::read_gzip_text(path), "someone else's file");
  EXPECT_TRUE(std::filesystem::exists(path + ".partial"));  // complete: kept, not removed

  // A link planted at the .partial name is not written through.
  std::string other = dir_ + "/v.json.gz";
  std::filesystem::create_symlink(dir_ + "/target", other + ".partial");
  EXPECT_FALSE(TraceFile::create(other, header, &error));
  EXPECT_FALSE(std::filesystem::exists(dir_ + "/target"));
}

TEST_F(TraceRoundTrip, WindowNumbersSkipFilesThatExist) {
  std::string path;
  const std::string pattern = "kprof-trace.{host}.{pid}.{window}.json.gz";
  EXPECT_EQ(next_free_window(dir_, pattern, "h", 9, 1, &path), 1u);
  EXPECT_EQ(path, dir_ + "/kprof-trace.h.9.1.json.gz");
  std::ofstream(dir_ + "/kprof-trace.h.9.1.json.gz") << "";
  std::ofstream(dir_ + "/kprof-trace.h.9.2.json.gz.partial") << "";
  EXPECT_EQ(next_free_window(dir_, pattern, "h", 9, 1, &path), 3u);
  EXPECT_EQ(path, dir_ + "/kprof-trace.h.9.3.json.gz");
}

TEST(TraceSummary, TheStderrLineNamesEveryDropAndSaysWhenThereIsNone) {
  TraceHeader header{0, 0, 12, "h", 2};
  WindowSummary summary;
  summary.stop_reason = "duration";
  summary.counts.events = 10;
  EXPECT_EQ(summary_line("/t/x.json.gz", header, summary),
            "pid 12 window 2 (stopped by duration): /t/x.json.gz: 10 events; nothing dropped");
  summary.cupti_dropped = 5;
  summary.buffers_refused = 2;
  summary.counts.incomplete_records = 1;
  summary.counts.over_cap = 7;
  summary.max_events = 10;
  summary.late_records = 3;
  summary.records_lost = 4;
  EXPECT_EQ(
      summary_line("/t/x.json.gz", header, summary),
      "pid 12 window 2 (stopped by duration): /t/x.json.gz: 10 events; DROPPED: 5 records "
      "dropped by CUPTI, 2 buffer requests refused (all buffers in use: raise "
      "KPROF_TRACE_MEMORY_MB), 1 records without timestamps, 7 records over the cap of 10 "
      "events (KPROF_TRACE_MAX_EVENTS), 3 records that arrived between windows, 4 records lost "
      "(the tracer ran out of memory queueing them)");
  auto json = nlohmann::json::parse(summary_json(header, summary));
  EXPECT_EQ(json["cap_hit"], true);
  EXPECT_EQ(json["dropped"]["over_cap_records"], 7);
  EXPECT_EQ(json["dropped"]["buffer_requests_refused"], 2);
  EXPECT_EQ(json["dropped"]["late_records"], 3);
  EXPECT_EQ(json["dropped"]["lost_records"], 4);
  EXPECT_FALSE(json.contains("graph_nodes"));  // a tracer that did not follow graph nodes
}

TEST(TraceSummary, TheGraphNodeTableClosesTheSummaryAndWhatItLostIsSaid) {
  TraceHeader header{0, 0, 12, "h", 2};
  WindowSummary summary;
  summary.stop_reason = "control file";
  summary.counts.events = 10;
  GraphNodeTable table;
  CreatedNode node;
  node.node = 5;
  node.graph = 1;
  node.kind = GraphNodeKind::kMemset;
  table.node_created(node, nullptr);
  summary.graph_nodes = graph_nodes_json(table.snapshot());
  summary.graph_nodes_not_kept = 3;
  summary.graph_clones_not_kept = 1;
  auto json = nlohmann::json::parse(summary_json(header, summary));
  EXPECT_EQ(json["graph_nodes"]["nodes"], nlohmann::json::parse("[[5, 1, 0, 0, 0, 0, 0, 0, 0, 0, "
                                                                "0, 0, 0]]"));
  EXPECT_EQ(json["graph_nodes"]["kernels"], nlohmann::json::parse(R"(["[memset]"])"));
  EXPECT_EQ(json["window"], 2);
  EXPECT_EQ(summary_line("/t/x.json.gz", header, summary),
            "pid 12 window 2 (stopped by control file): /t/x.json.gz: 10 events; DROPPED: 3 graph "
            "nodes not kept in the node table (its bound, or out of memory), 1 graph node clones "
            "not kept in the node table");
}

}  // namespace
}  // namespace kprof::tracer

namespace kprof::tracer {
namespace {

// Buffers recorded on a GPU machine (tools/tracer/gpu-check.sh, case raw) and committed under
// data/h200/tracer-raw/NAME/ with trace.json.gz, the live trace the tracer wrote from the same
// records: the replay must give the same events, and kprof must rank them.
TEST(RecordedDumps, ReplayToTheTraceRecordedWithThem) {
  std::string root = kprof::testing::data_path("h200/tracer-raw");
  if (!std::filesystem::is_directory(root)) {
    GTEST_SKIP() << "no recorded dumps yet under " << root
                 << " (tools/tracer/gpu-check.sh, case raw)";
  }
  int replayed = 0;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    if (!entry.is_directory()) continue;
    SCOPED_TRACE(entry.path().string());
    char pattern[] = "/tmp/kprof-replay-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    std::string out = std::string(pattern) + "/replayed.json.gz", error;
    ASSERT_TRUE(convert_raw_dump(entry.path().string(), out, &error)) << error;
    auto live = nlohmann::json::parse(
        kprof::testing::read_gzip_text((entry.path() / "trace.json.gz").string()));
    auto again = nlohmann::json::parse(kprof::testing::read_gzip_text(out));
    auto sorted = [](const nlohmann::json& events) {
      std::vector<std::string> texts;
      for (const auto& e : events) texts.push_back(e.dump());
      std::sort(texts.begin(), texts.end());
      return texts;
    };
    EXPECT_EQ(sorted(live["traceEvents"]), sorted(again["traceEvents"]));
    static const analysis::StageTable stages = analysis::load_stage_table();
    timeline::RankingBuilder builder(stages, true);
    importers::read_chrome_trace(out, builder);
    EXPECT_GT(builder.finish().kernel_events, 0u);
    std::filesystem::remove_all(pattern);
    ++replayed;
  }
  if (replayed == 0) GTEST_SKIP() << "no dump folders under " << root;
}

}  // namespace
}  // namespace kprof::tracer
