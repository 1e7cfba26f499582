// libkprof_tracer.so running for real — its threads, pool, windows, control file, cap, flushes
// and exit — inside fake_app, a program whose "GPU" is fake_cupti (a libcupti.so.13 stand-in
// that follows CUPTI's documented buffer protocol). Each test scripts what the program does and
// checks the files and the stderr lines the tracer leaves, with kprof's own reader and budget.
// What only a GPU can show is tools/tracer/gpu-check.sh.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>

#include "importers/chrome_trace/chrome_trace_reader.h"
#include "support/confined_fs.h"
#include "support/run_process.h"
#include "support/test_data.h"
#include "timeline/step_budget.h"
#include "tracer/cupti_support.h"

namespace kprof::tracer {
namespace {

namespace fs = std::filesystem;
using kprof::testing::ProcessResult;

class TracerLive : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/kprof-live-XXXXXX";
    ASSERT_NE(mkdtemp(pattern), nullptr);
    dir_ = pattern;
    traces_ = dir_ + "/traces";
    fs::create_directory(traces_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  std::vector<std::string> argv(std::vector<std::string> settings,
                                const std::vector<std::string>& script) const {
    std::vector<std::string> args = {KPROF_FAKE_APP, KPROF_TRACER_LIBRARY,
                                     std::string("CUDA_INJECTION64_PATH=") + KPROF_TRACER_LIBRARY,
                                     std::string("NVTX_INJECTION64_PATH=") + KPROF_TRACER_LIBRARY,
                                     "KPROF_TRACE_DIR=" + traces_};
    args.insert(args.end(), settings.begin(), settings.end());
    args.push_back("--");
    args.insert(args.end(), script.begin(), script.end());
    return args;
  }
  ProcessResult run(std::vector<std::string> settings, const std::vector<std::string>& script) {
    return kprof::testing::run_process(argv(std::move(settings), script));
  }

  std::vector<std::string> files() const {
    std::vector<std::string> out;
    for (const auto& e : fs::directory_iterator(traces_)) out.push_back(e.path().string());
    std::sort(out.begin(), out.end());
    return out;
  }

  // The tracer's own stderr lines (a sanitizer build may add its own).
  static std::vector<std::string> lines(const std::string& text) {
    std::vector<std::string> out;
    std::istringstream in(text);
    for (std::string line; std::getline(in, line);) {
      if (line.rfind("kprof-tracer:", 0) == 0) out.push_back(line);
    }
    return out;
  }

  static nlohmann::json load(const std::string& path) {
    return nlohmann::json::parse(kprof::testing::read_gzip_text(path));
  }
  static size_t count(const nlohmann::json& trace, const std::string& category) {
    return static_cast<size_t>(std::count_if(
        trace["traceEvents"].begin(), trace["traceEvents"].end(),
        [&](const nlohmann::json& e) { return e["ph"] == "X" && e["cat"] == category; }));
  }

  std::string dir_, traces_;
};

TEST_F(TracerLive, OneWindowFromStartToExitReadByKprofBudget) {
  auto result = run({}, {"init", "wait:on", "steps:20"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  std::string name = fs::path(written[0]).filename().string();
  EXPECT_EQ(name.rfind("kprof-trace.", 0), 0u) << name;
  EXPECT_EQ(name.substr(name.size() - 10), ".1.json.gz") << name;
  auto said = lines(result.err);
  ASSERT_EQ(said.size(), 1u) << result.err;
  EXPECT_EQ(said[0].rfind("kprof-tracer: pid ", 0), 0u) << said[0];
  EXPECT_NE(said[0].find(" window 1 (stopped by process exit): " + written[0] +
                         ": 140 events; nothing dropped"),
            std::string::npos)
      << said[0];
  auto trace = load(written[0]);
  // 20 steps of 3 launches: 60 kernels, 60 launch calls, 20 NVTX ranges = 140 events.
  EXPECT_EQ(count(trace, "kernel"), 60u);
  EXPECT_EQ(count(trace, "cuda_runtime"), 60u);
  EXPECT_EQ(count(trace, "user_annotation"), 20u);
  EXPECT_EQ(trace["kprof"]["stop_reason"], "process exit");
  timeline::BudgetBuilder builder;
  importers::read_chrome_trace(written[0], builder);
  auto budget = builder.finish("", {});
  ASSERT_EQ(budget.steps.size(), 20u);
  for (const auto& step : budget.steps) {
    EXPECT_EQ(step.kernel_launches, 3u) << step.name;
    EXPECT_EQ(step.gpu_activities, 3u) << step.name;
  }
}

TEST_F(TracerLive, WithoutApiRecordsOnlyGpuWorkAndRangesAreWritten) {
  auto result = run({"KPROF_TRACE_API=0"}, {"init", "wait:on", "steps:20"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  auto said = lines(result.err);
  ASSERT_EQ(said.size(), 1u) << result.err;
  EXPECT_NE(said[0].find(": 80 events; nothing dropped"), std::string::npos) << said[0];
  auto trace = load(written[0]);
  EXPECT_EQ(count(trace, "kernel"), 60u);
  EXPECT_EQ(count(trace, "cuda_runtime"), 0u);  // no launch call was enabled in CUPTI
  EXPECT_EQ(count(trace, "cuda_driver"), 0u);
  EXPECT_EQ(count(trace, "user_annotation"), 20u);
}

TEST_F(TracerLive, TheControlFileOpensAndClosesWindowsAndInactiveRecordsNothing) {
  std::string control = dir_ + "/control";
  auto result = run(
      {"KPROF_TRACE_START=on-control", "KPROF_TRACE_CONTROL=" + control},
      {"init", "steps:5", "control:start", "wait:on", "steps:4", "control:stop", "wait:off",
       "steps:5", "control:start", "wait:on", "steps:3", "control:stop", "wait:off", "sleep:300"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 2u) << result.err;
  auto first = load(written[0]), second = load(written[1]);
  EXPECT_EQ(count(first, "kernel"), 12u);
  EXPECT_EQ(count(first, "user_annotation"), 4u);
  EXPECT_EQ(count(second, "kernel"), 9u);
  EXPECT_EQ(first["kprof"]["window"], 1);
  EXPECT_EQ(second["kprof"]["window"], 2);
  EXPECT_EQ(first["kprof"]["stop_reason"], "control file");
  EXPECT_EQ(second["kprof"]["stop_reason"], "control file");
  EXPECT_EQ(lines(result.err).size(), 2u) << result.err;
}

TEST_F(TracerLive, DelayAndDuration) {
  auto result = run({"KPROF_TRACE_DELAY_S=0.3", "KPROF_TRACE_DURATION_S=1"},
                    {"init", "launch:5", "wait:on", "launch:10", "wait:off", "launch:5"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  auto trace = load(written[0]);
  EXPECT_EQ(count(trace, "kernel"), 10u);
  EXPECT_EQ(trace["kprof"]["stop_reason"], "duration");
  const auto& k = trace["kprof"];
  double window_s = (k["window_stop"]["monotonic_ns"].get<double>() -
                     k["window_start"]["monotonic_ns"].get<double>()) /
                    1e9;
  EXPECT_GE(window_s, 1.0);
}

TEST_F(TracerLive, TheCapClosesTheWindowAndTheRestIsCounted) {
  auto result = run({"KPROF_TRACE_MAX_EVENTS=50"}, {"init", "wait:on", "launch:100", "wait:off"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  auto trace = load(written[0]);
  EXPECT_EQ(trace["kprof"]["stop_reason"], "event cap");
  EXPECT_EQ(trace["kprof"]["events"], 50);
  EXPECT_EQ(trace["kprof"]["cap_hit"], true);
  EXPECT_EQ(trace["kprof"]["dropped"]["over_cap_records"], 150);  // 200 records, 50 written
  EXPECT_NE(result.err.find("DROPPED: 150 records over the cap of 50 events"), std::string::npos)
      << result.err;
}

TEST_F(TracerLive, AnEmptyPoolDropsRecordsAndSaysSo) {
  // 16 MB: two buffers; three threads each want their own at once.
  auto result = run({"KPROF_TRACE_MEMORY_MB=16"}, {"init", "wait:on", "threads:3:10"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  auto trace = load(written[0]);
  const auto& dropped = trace["kprof"]["dropped"];
  std::uint64_t refused = dropped["buffer_requests_refused"],
                lost = dropped["cupti_dropped_records"];
  EXPECT_GE(refused, 1u);
  EXPECT_EQ(lost, refused);  // the stand-in drops one record per refused request
  EXPECT_EQ(count(trace, "kernel") + count(trace, "cuda_runtime") + lost, 60u);
  EXPECT_NE(result.err.find("records dropped by CUPTI"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("buffer requests refused (all buffers in use: raise "
                            "KPROF_TRACE_MEMORY_MB)"),
            std::string::npos)
      << result.err;
}

TEST_F(TracerLive, AnotherSubscriberOrAnOldLibcuptiKeepsItOff) {
  auto held = run({"FAKE_CUPTI_HOLDER=Nsight Systems"}, {"init", "launch:5"});
  EXPECT_EQ(held.out, "InitializeInjection returned 1\n");
  EXPECT_EQ(held.err,
            "kprof-tracer: another CUPTI client is attached to this process (Nsight Systems): the "
            "tracer stays off\n");
  auto old = run({"FAKE_CUPTI_VERSION=120000"}, {"init", "launch:5"});
  EXPECT_EQ(old.err, "kprof-tracer: libcupti reports version 120000, older than the " +
                         std::to_string(CUPTI_API_VERSION) +
                         " this tracer was built for: the tracer stays off\n");
  EXPECT_TRUE(files().empty());
}

TEST_F(TracerLive, TheRawDumpReplaysToTheSameEvents) {
  std::string raw = dir_ + "/raw";
  fs::create_directory(raw);
  auto result = run({"KPROF_TRACE_DUMP_RAW=" + raw}, {"init", "wait:on", "steps:5"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u);
  std::vector<fs::path> dumps{fs::directory_iterator(raw), fs::directory_iterator()};
  ASSERT_EQ(dumps.size(), 1u);
  std::string replayed = dir_ + "/replayed.json.gz", error;
  ASSERT_TRUE(convert_raw_dump(dumps[0].string(), replayed, &error)) << error;
  auto sorted = [](const nlohmann::json& trace) {
    std::vector<std::string> texts;
    for (const auto& e : trace["traceEvents"]) texts.push_back(e.dump());
    std::sort(texts.begin(), texts.end());
    return texts;
  };
  auto live = load(written[0]);
  EXPECT_EQ(sorted(live), sorted(load(replayed)));
  EXPECT_EQ(count(live, "kernel"), 15u);
}

TEST_F(TracerLive, AForkedChildIsLeftAloneAndTheParentTraced) {
  // The pause lets the tracer's writer finish opening the window first: a fork copies no thread,
  // and what only a busy thread's stack referenced would look leaked to LeakSanitizer in the
  // child of a sanitizer build.
  auto result = run({}, {"init", "wait:on", "steps:2", "sleep:200", "fork", "steps:2"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.out.find("child exited 0"), std::string::npos) << result.out;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  EXPECT_EQ(count(load(written[0]), "kernel"), 12u);
  EXPECT_EQ(lines(result.err).size(), 1u) << result.err;
}

TEST_F(TracerLive, AFullDiskAbandonsTheWindowAndLeavesNothing) {
  if (auto why = kprof::testing::confined_fs_unavailable()) GTEST_SKIP() << *why;
  std::string copy_back = dir_ + "/after";
  fs::create_directory(copy_back);
  auto result = kprof::testing::run_with_full_disk(traces_, "8k", copy_back,
                                                   argv({}, {"init", "wait:on", "steps:2000"}));
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
  EXPECT_NE(result.err.find("No space left on device"), std::string::npos) << result.err;
  EXPECT_NE(result.err.find("window 1 abandoned"), std::string::npos) << result.err;
  EXPECT_TRUE(fs::is_empty(copy_back)) << "a partial trace was left behind";
}

// ---- the capture-time graph node table ----------------------------------------------------

// The ranges of a row's stack ("domain:name", or "name" in NVTX's default domain), outermost first.
std::vector<std::string> stack_names(const nlohmann::json& table, const nlohmann::json& row) {
  std::vector<std::string> out;
  for (const auto& id : table["stacks"][row[12].get<size_t>()]) {
    const auto& range = table["ranges"][id.get<size_t>()];
    std::string domain = range["domain"];
    out.push_back((domain.empty() ? "" : domain + ":") + range["name"].get<std::string>());
  }
  return out;
}

std::map<std::uint64_t, nlohmann::json> rows_by_node(const nlohmann::json& table) {
  std::map<std::uint64_t, nlohmann::json> out;
  for (const auto& row : table["nodes"]) out[row[0].get<std::uint64_t>()] = row;
  return out;
}

// A serving engine's start-up in miniature: graphs captured on two threads under NVTX ranges (the
// default domain, a registered domain, a registered string), instantiated (each node cloned),
// and windows opened only afterwards, on request. Every window carries the whole table.
TEST_F(TracerLive, GraphNodesCapturedAtStartUpAreNamedInEveryLaterWindow) {
  std::string control = dir_ + "/control";
  auto result = run({"KPROF_TRACE_START=on-control", "KPROF_TRACE_CONTROL=" + control},
                    {"cuda:" KPROF_FAKE_CUDA,
                     "init",
                     "domain:vllm",
                     "string:vllm:decoder layer",
                     "push:CUDAGraph bs 8",
                     "dpush:vllm:model.layers.0",
                     "kernel:3:11:128,1,1:256,1,1:0:_Z6kernelPf",
                     "memcpy:3:12",
                     "dpop:vllm",
                     "dpushr:vllm:decoder layer",
                     "kern:3:13:4,2,1:64,1,1:2048:_Z4gemmv",
                     "memset:3:14",
                     "host:3:15",
                     "dpop:vllm",
                     "thread:w:push:other thread",
                     "thread:w:kernel:4:21:1,1,1:32,1,1:0:_Z6kernelPf",
                     "pop",
                     "clone:9:57:11",
                     "clone:9:58:12",
                     "clone:9:59:13",
                     "clone:9:60:14",
                     "clone:9:61:15",
                     "sleep:300",
                     "control:start",
                     "wait:on",
                     "launch:3",
                     "control:stop",
                     "wait:off",
                     "files:1",
                     "thread:w:pop",
                     "thread:w:kernel:4:22:1,1,1:32,1,1:0:_Z6kernelPf",
                     "control:start",
                     "wait:on",
                     "control:stop",
                     "wait:off",
                     "sleep:300"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 2u) << result.err;
  auto first = load(written[0]), second = load(written[1]);
  EXPECT_EQ(count(first, "kernel"), 3u);
  ASSERT_TRUE(first["kprof"].contains("graph_nodes")) << first["kprof"].dump();
  const auto& table = first["kprof"]["graph_nodes"];
  EXPECT_EQ(table["version"], 1);
  auto rows = rows_by_node(table);
  ASSERT_EQ(rows.size(), 5u) << table.dump();  // 15 is a host node; 57-61 are clones
  std::uint64_t pid = first["kprof"]["pid"];
  auto kernel_of = [&](const nlohmann::json& row) {
    return table["kernels"][row[4].get<size_t>()].get<std::string>();
  };
  // node, graph, order, tid (the main thread's is the pid), kernel, grid, block, shared, stack
  EXPECT_EQ(rows[11][1], 3);
  EXPECT_EQ(rows[11][2], 0);
  EXPECT_EQ(rows[11][3], pid);
  EXPECT_EQ(kernel_of(rows[11]), "_Z6kernelPf");
  EXPECT_EQ(rows[11],
            nlohmann::json::parse("[11, 3, 0, " + std::to_string(pid) + ", " + rows[11][4].dump() +
                                  ", 128, 1, 1, 256, 1, 1, 0, " + rows[11][12].dump() + "]"));
  EXPECT_EQ(stack_names(table, rows[11]),
            (std::vector<std::string>{"CUDAGraph bs 8", "vllm:model.layers.0"}));
  EXPECT_EQ(kernel_of(rows[12]), "[memcpy]");
  EXPECT_EQ(rows[12][2], 1);
  EXPECT_EQ(stack_names(table, rows[12]), stack_names(table, rows[11]));
  EXPECT_EQ(kernel_of(rows[13]), "_Z4gemmv");  // a CUkernel handle: cuKernelGetName
  EXPECT_EQ(rows[13][2], 2);
  std::vector<std::uint32_t> shape;
  for (size_t column = 5; column <= 11; ++column) shape.push_back(rows[13][column]);
  EXPECT_EQ(shape, (std::vector<std::uint32_t>{4, 2, 1, 64, 1, 1, 2048}));
  EXPECT_EQ(stack_names(table, rows[13]),
            (std::vector<std::string>{"CUDAGraph bs 8", "vllm:decoder layer"}));
  EXPECT_EQ(kernel_of(rows[14]), "[memset]");
  EXPECT_EQ(rows[14][2], 3);
  // The other thread: its own tid and its own ranges only.
  EXPECT_NE(rows[21][3], pid);
  EXPECT_EQ(rows[21][1], 4);
  EXPECT_EQ(rows[21][2], 0);
  EXPECT_EQ(stack_names(table, rows[21]), (std::vector<std::string>{"other thread"}));
  EXPECT_EQ(table["clones"], nlohmann::json::parse("[[57, 11], [58, 12], [59, 13], [60, 14]]"));
  EXPECT_EQ(table["counts"], nlohmann::json::parse(R"({"kernel_nodes": 3, "copy_nodes": 2,
      "other_nodes": 1, "not_kept": 0, "unnamed": 0, "ranges_cut": 0, "clones_not_kept": 0})"));

  // The second window: the same table, and the node made between the windows.
  ASSERT_TRUE(second["kprof"].contains("graph_nodes"));
  const auto& later = second["kprof"]["graph_nodes"];
  auto later_rows = rows_by_node(later);
  ASSERT_EQ(later_rows.size(), 6u);
  for (const auto& [node, row] : rows) EXPECT_EQ(later_rows[node], row) << node;
  EXPECT_EQ(later_rows[22][2], 1);
  EXPECT_EQ(later_rows[22][12], 0);  // popped before: no range open
  EXPECT_EQ(later["clones"], table["clones"]);
  EXPECT_EQ(later["ranges"], table["ranges"]);
  auto said = lines(result.err);
  EXPECT_EQ(said.size(), 2u) << result.err;
}

TEST_F(TracerLive, KernelNamesTheDriverCannotGiveAreEmptyAndCounted) {
  // A driver without cuFuncGetName/cuKernelGetName: shapes are read, names are not.
  auto result =
      run({}, {"cuda:" KPROF_FAKE_CUDA_WITHOUT_NAMES, "init", "wait:on",
               "kernel:1:1:8,1,1:128,1,1:0:_Z1av", "kern:1:2:8,1,1:128,1,1:0:_Z1bv", "memcpy:1:3"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  const auto table = load(written[0])["kprof"]["graph_nodes"];
  EXPECT_EQ(table["kernels"], nlohmann::json::parse(R"(["", "[memcpy]"])"));
  EXPECT_EQ(table["nodes"][0][5], 8);
  EXPECT_EQ(table["nodes"][1][8], 128);
  EXPECT_EQ(table["counts"]["unnamed"], 2);
  EXPECT_EQ(table["counts"]["kernel_nodes"], 2);

  // No driver loaded at all (the tracer found no libcuda when CUDA started it): neither.
  fs::remove(written[0]);
  auto bare = run({}, {"init", "wait:on", "kernel:1:1:8,1,1:128,1,1:0:_Z1av"});
  ASSERT_EQ(bare.exit_code, 0) << bare.out << bare.err;
  written = files();
  ASSERT_EQ(written.size(), 1u) << bare.err;
  const auto bare_table = load(written[0])["kprof"]["graph_nodes"];
  ASSERT_EQ(bare_table["nodes"].size(), 1u);
  EXPECT_EQ(bare_table["nodes"][0],
            nlohmann::json::parse("[1, 1, 0, " + bare_table["nodes"][0][3].dump() +
                                  ", 0, 0, 0, 0, 0, 0, 0, 0, 0]"));
  EXPECT_EQ(bare_table["kernels"], nlohmann::json::parse(R"([""])"));
  EXPECT_EQ(bare_table["counts"]["unnamed"], 1);
}

TEST_F(TracerLive, ATraceWithoutGraphsCarriesAnEmptyTable) {
  auto result = run({}, {"init", "wait:on", "steps:2"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  const auto table = load(written[0])["kprof"]["graph_nodes"];
  EXPECT_TRUE(table["nodes"].empty()) << table.dump();
  EXPECT_EQ(table["stacks"], nlohmann::json::parse("[[]]"));
  EXPECT_TRUE(table["clones"].empty());
  EXPECT_EQ(table["counts"]["kernel_nodes"], 0);
}

TEST_F(TracerLive, WhereCuptiWillNotReportGraphNodesTheTableIsLeftOutAndSaid) {
  auto result = run({"FAKE_CUPTI_REFUSE_RESOURCE_CALLBACKS=1"},
                    {"init", "wait:on", "kernel:1:1:1,1,1:1,1,1:0:k", "launch:2"});
  ASSERT_EQ(result.exit_code, 0) << result.out << result.err;
  auto written = files();
  ASSERT_EQ(written.size(), 1u) << result.err;
  auto trace = load(written[0]);
  EXPECT_FALSE(trace["kprof"].contains("graph_nodes"));  // not "no graphs": not followed
  EXPECT_EQ(count(trace, "kernel"), 2u);
  auto said = lines(result.err);
  ASSERT_EQ(said.size(), 2u) << result.err;
  EXPECT_EQ(said[0],
            "kprof-tracer: cannot follow CUDA graph nodes (CUPTI_ERROR_FAKE): traces carry no "
            "graph node table");
}

}  // namespace
}  // namespace kprof::tracer
