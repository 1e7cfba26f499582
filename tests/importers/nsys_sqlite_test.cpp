// The Nsight Systems SQLite export recorded on the H200 (tools/traces/nsys_decode_steps.py),
// read through kprof and checked against SQL run directly on the same database.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <map>
#include <optional>
#include <vector>

#include "common/error.h"
#include "importers/common/read_trace.h"
#include "importers/nsys_sqlite/nsys_sqlite_reader.h"
#include "model/kernel_names.h"
#include "support/test_data.h"
#include "timeline/kernel_ranking.h"
#include "timeline/step_budget.h"

namespace kprof::importers {
namespace {

using testing::data_path;

const std::string kExport = "h200/nsys_decode_steps.sqlite";

std::vector<std::vector<std::string>> query(const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(data_path(kExport).c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  std::vector<std::vector<std::string>> rows;
  sqlite3_exec(
      db, sql.c_str(),
      [](void* out, int n, char** values, char**) {
        auto* table = static_cast<std::vector<std::vector<std::string>>*>(out);
        table->emplace_back();
        for (int i = 0; i < n; ++i) table->back().emplace_back(values[i] ? values[i] : "");
        return 0;
      },
      &rows, nullptr);
  sqlite3_close(db);
  return rows;
}

TEST(NsysSqlite, KernelTotalsEqualTheExportsOwnSums) {
  static const analysis::StageTable stages = analysis::load_stage_table();
  timeline::RankingBuilder builder(stages, /*normalize=*/false);
  read_trace(data_path(kExport), builder);
  timeline::Ranking ranking = builder.finish();
  // Grouped by mangled name; the name kprof shows is libstdc++'s demangling of it (PyTorch's
  // spelling), which must name the same kernel as nsys's own demangledName.
  auto rows = query(
      "SELECT d.value, m.value, COUNT(*), SUM(k.end - k.start) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
      "JOIN StringIds d ON d.id = k.demangledName JOIN StringIds m ON m.id = k.mangledName "
      "GROUP BY m.value");
  ASSERT_FALSE(rows.empty());
  std::map<std::string, const timeline::KernelStats*> by_name;
  for (const auto& k : ranking.kernels) by_name[k.name] = &k;
  size_t templated = 0;
  for (const auto& row : rows) {
    const std::string& nsys_name = row[0];
    const std::string& mangled = row[1];
    std::string name = model::demangle(mangled).value_or(nsys_name);
    templated += name != nsys_name;
    ASSERT_TRUE(by_name.count(name)) << name;
    EXPECT_EQ(model::canonical_kernel_name(name), model::canonical_kernel_name(nsys_name));
    EXPECT_EQ(by_name[name]->count, std::stoull(row[2]));
    EXPECT_NEAR(by_name[name]->total_us, std::stod(row[3]) / 1000, 1e-6);
  }
  size_t kernel_rows = 0;
  for (const auto& k : ranking.kernels) kernel_rows += k.kind == "kernel";
  EXPECT_EQ(kernel_rows, rows.size());
  EXPECT_GT(templated, 0u);
  EXPECT_EQ(ranking.kernel_events, 321u);
  EXPECT_EQ(ranking.memcpy_events, 32u);
}

TEST(NsysSqlite, NvtxRangesAreStepsAndLaunchesAttributeTheirKernels) {
  timeline::BudgetBuilder builder;
  read_trace(data_path(kExport), builder);
  timeline::Budget budget = builder.finish("^decode_step$", {});
  auto ranges = query(
      "SELECT n.start, n.end, (SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL k "
      "JOIN CUPTI_ACTIVITY_KIND_RUNTIME r ON r.correlationId = k.correlationId "
      "WHERE r.start >= n.start AND r.start <= n.end) FROM NVTX_EVENTS n "
      "WHERE n.text = 'decode_step' ORDER BY n.start");
  ASSERT_EQ(ranges.size(), 5u);
  ASSERT_EQ(budget.steps.size(), 5u);
  for (size_t i = 0; i < ranges.size(); ++i) {
    EXPECT_EQ(budget.steps[i].source, "cpu annotation");
    EXPECT_EQ(budget.steps[i].gpu_activities, std::stoull(ranges[i][2]));
    EXPECT_NEAR(budget.steps[i].host_duration_us,
                (std::stod(ranges[i][1]) - std::stod(ranges[i][0])) / 1000, 1e-6);
  }
}

// The export's deviceId reaches the events: the ranking's one device is the export's one device,
// with all of its kernels.
TEST(NsysSqlite, DeviceIdsReachTheEvents) {
  static const analysis::StageTable stages = analysis::load_stage_table();
  timeline::RankingBuilder builder(stages, /*normalize=*/false);
  read_trace(data_path(kExport), builder);
  timeline::Ranking ranking = builder.finish();
  auto devices = query(
      "SELECT deviceId, COUNT(*) FROM CUPTI_ACTIVITY_KIND_KERNEL GROUP BY deviceId ORDER BY 1");
  ASSERT_EQ(devices.size(), 1u);
  ASSERT_EQ(ranking.devices.size(), 1u);
  EXPECT_EQ(ranking.devices[0].device, std::stoll(devices[0][0]));
  EXPECT_EQ(ranking.devices[0].kernel_events, std::stoull(devices[0][1]));
}

// data/h200/engine_steps_trtllm.sqlite: this export with its decode_step NVTX ranges renamed
// _forward_step, TensorRT-LLM's per-step NVTX range (tools/traces/rename_steps.py). Found without
// --step, with the figures the original's ranges give.
TEST(NsysSqlite, TensorRtLlmForwardStepRangesAreSteps) {
  timeline::BudgetBuilder engine_builder;
  read_trace(data_path("h200/engine_steps_trtllm.sqlite"), engine_builder);
  timeline::Budget engine = engine_builder.finish("", {});
  timeline::BudgetBuilder original_builder;
  read_trace(data_path(kExport), original_builder);
  timeline::Budget original = original_builder.finish("^decode_step$", {});
  EXPECT_EQ(engine.step_selector, "TensorRT-LLM step annotations");
  ASSERT_EQ(engine.steps.size(), 5u);
  ASSERT_EQ(original.steps.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(engine.steps[i].name, "_forward_step");
    EXPECT_EQ(engine.steps[i].gpu_activities, original.steps[i].gpu_activities);
    EXPECT_EQ(engine.steps[i].gpu_busy_us, original.steps[i].gpu_busy_us);
    EXPECT_EQ(engine.steps[i].host_gap_us, original.steps[i].host_gap_us);
  }
}

// Every event the reader hands over, copied out of the sink call.
struct HeldEvent {
  std::string category, name;
  double start_us = 0;
  std::int64_t tid = 0;
  std::optional<std::int64_t> process, stream, correlation;
};
struct HoldingSink : TraceEventSink {
  std::vector<HeldEvent> events;
  void on_event(const TraceEvent& event) override {
    events.push_back({std::string(event.category), std::string(event.name), event.timestamp_us,
                      event.tid, event.process, event.stream, event.correlation});
  }
};

// What the file was read as, the GPU it names, and its stream waits (the export's 32
// cudaStreamWaitEvent synchronization rows), each checked against SQL over the same file.
TEST(NsysSqlite, TheSchemaTheGpuAndTheStreamWaitsAreRead) {
  HoldingSink sink;
  TraceReadStats stats = read_trace(data_path(kExport), sink);
  auto meta = query(
      "SELECT (SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_SCHEMA_VERSION'), "
      "(SELECT value FROM META_DATA_EXPORT WHERE name = 'EXPORT_PRODUCT_VERSION')");
  ASSERT_EQ(meta.size(), 1u);
  EXPECT_EQ(stats.format,
            "Nsight Systems SQLite export, schema " + meta[0][0] + " (nsys " + meta[0][1] + ")");
  auto gpus = query("SELECT id, name FROM TARGET_INFO_GPU ORDER BY id");
  ASSERT_EQ(stats.device_names.size(), gpus.size());
  for (size_t i = 0; i < gpus.size(); ++i) {
    EXPECT_EQ(stats.device_names[i].first, std::stoll(gpus[i][0]));
    EXPECT_EQ(stats.device_names[i].second, gpus[i][1]);
  }
  auto waits = query(
      "SELECT y.streamId, y.correlationId FROM CUPTI_ACTIVITY_KIND_SYNCHRONIZATION y JOIN "
      "ENUM_CUPTI_SYNC_TYPE e ON e.id = y.syncType WHERE e.name = "
      "'CUPTI_ACTIVITY_SYNCHRONIZATION_TYPE_STREAM_WAIT_EVENT' ORDER BY y.start");
  std::vector<std::pair<std::int64_t, std::int64_t>> read_waits;
  for (const HeldEvent& event : sink.events) {
    if (event.category != "cuda_sync") continue;
    EXPECT_EQ(event.name, "Stream Wait Event");
    read_waits.emplace_back(event.stream.value_or(-1), event.correlation.value_or(-1));
  }
  ASSERT_EQ(read_waits.size(), waits.size());
  EXPECT_EQ(waits.size(), 32u);
  for (size_t i = 0; i < waits.size(); ++i) {
    EXPECT_EQ(read_waits[i].first, std::stoll(waits[i][0]));
    EXPECT_EQ(read_waits[i].second, std::stoll(waits[i][1]));
  }
  // Launch calls carry their thread (globalTid's low 24 bits), as budget's waits need.
  auto threads = query(
      "SELECT DISTINCT globalTid % 16777216, (globalTid / 16777216) % 16777216 FROM "
      "CUPTI_ACTIVITY_KIND_RUNTIME");
  ASSERT_EQ(threads.size(), 1u);
  size_t runtime = 0;
  for (const HeldEvent& event : sink.events) {
    if (event.category != "cuda_runtime") continue;
    ++runtime;
    EXPECT_EQ(event.tid, std::stoll(threads[0][0]));
    EXPECT_EQ(event.process, std::stoll(threads[0][1]));
  }
  EXPECT_EQ(runtime, std::stoull(query("SELECT COUNT(*) FROM CUPTI_ACTIVITY_KIND_RUNTIME")[0][0]));
  // Each table in time order, launches before the GPU work they launched.
  double last_kernel = -1;
  for (const HeldEvent& event : sink.events) {
    if (event.category != "kernel") continue;
    EXPECT_GE(event.start_us, last_kernel);
    last_kernel = event.start_us;
  }
}

// Newer exports revise a table's name (NVTX_EVENTS_V2…): the highest revision is read where the
// plain name is absent.
TEST(NsysSqlite, ARevisedTableNameIsRead) {
  std::string copy = testing::copy_of_data(kExport, ::testing::TempDir() + "/revised.sqlite");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(copy.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL RENAME TO "
                         "CUPTI_ACTIVITY_KIND_KERNEL_V3; ALTER TABLE NVTX_EVENTS RENAME TO "
                         "NVTX_EVENTS_V2;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  timeline::BudgetBuilder revised_builder, original_builder;
  read_trace(copy, revised_builder);
  read_trace(data_path(kExport), original_builder);
  timeline::Budget revised = revised_builder.finish("^decode_step$", {});
  timeline::Budget original = original_builder.finish("^decode_step$", {});
  ASSERT_EQ(revised.steps.size(), 5u);
  for (size_t i = 0; i < 5; ++i) {
    EXPECT_EQ(revised.steps[i].gpu_activities, original.steps[i].gpu_activities);
    EXPECT_EQ(revised.steps[i].gpu_busy_us, original.steps[i].gpu_busy_us);
  }
}

// `nsys profile --cuda-graph-trace=graph` (the default) records a replay as one GRAPH_TRACE row,
// not a KERNEL row per node (data/h200/nsys_graph_capture_graph.sqlite: 5 replays of an 8-layer
// block): each replay is one activity named for its graph, its time the row's.
TEST(NsysSqlite, WholeGraphReplaysCountAsOneActivityEach) {
  const std::string file = "h200/nsys_graph_capture_graph.sqlite";
  static const analysis::StageTable stages = analysis::load_stage_table();
  timeline::RankingBuilder builder(stages, /*normalize=*/true);
  read_trace(data_path(file), builder);
  timeline::Ranking ranking = builder.finish();
  sqlite3* db = nullptr;
  sqlite3_open_v2(data_path(file).c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* statement = nullptr;
  sqlite3_prepare_v2(db,
                     "SELECT graphId, COUNT(*), SUM(end - start) FROM "
                     "CUPTI_ACTIVITY_KIND_GRAPH_TRACE GROUP BY graphId",
                     -1, &statement, nullptr);
  ASSERT_EQ(sqlite3_step(statement), SQLITE_ROW);
  std::string name = "CUDA graph " + std::to_string(sqlite3_column_int64(statement, 0)) +
                     " [whole replay: --cuda-graph-trace=graph]";
  std::uint64_t count = sqlite3_column_int64(statement, 1);
  double total_us = sqlite3_column_double(statement, 2) / 1000;
  EXPECT_EQ(sqlite3_step(statement), SQLITE_DONE);  // one graph
  sqlite3_finalize(statement);
  sqlite3_close(db);
  EXPECT_EQ(count, 5u);
  const timeline::KernelStats* replays = nullptr;
  for (const auto& k : ranking.kernels) {
    if (k.name == name) replays = &k;
  }
  ASSERT_NE(replays, nullptr) << name;
  EXPECT_EQ(replays->count, count);
  EXPECT_NEAR(replays->total_us, total_us, 1e-6);
}

// A minimal export (nsys-ai's synthetic files: times, ids, names and the launch configuration,
// no resource columns) was refused ("no such column: k.registersPerThread"); it reads as the
// full one does, without the registers and shared memory it does not record.
TEST(NsysSqlite, AnExportWithoutTheKernelResourceColumnsIsRead) {
  std::string copy = testing::copy_of_data(kExport, ::testing::TempDir() + "/minimal.sqlite");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(copy.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN registersPerThread;"
                         "ALTER TABLE CUPTI_ACTIVITY_KIND_KERNEL DROP COLUMN staticSharedMemory;",
                         nullptr, nullptr, nullptr),
            SQLITE_OK)
      << sqlite3_errmsg(db);
  sqlite3_close(db);
  static const analysis::StageTable stages = analysis::load_stage_table();
  timeline::RankingBuilder minimal_builder(stages, true), full_builder(stages, true);
  read_trace(copy, minimal_builder);
  read_trace(data_path(kExport), full_builder);
  timeline::Ranking minimal = minimal_builder.finish(), full = full_builder.finish();
  ASSERT_EQ(minimal.kernels.size(), full.kernels.size());
  EXPECT_EQ(minimal.kernel_events, full.kernel_events);
  EXPECT_DOUBLE_EQ(minimal.gpu_time_us, full.gpu_time_us);
}

TEST(NsysSqlite, OtherDatabasesAndDamagedFilesAreRejected) {
  std::string other = ::testing::TempDir() + "/other.sqlite";
  std::remove(other.c_str());
  sqlite3* db = nullptr;
  sqlite3_open(other.c_str(), &db);
  sqlite3_exec(db, "CREATE TABLE t (x INTEGER)", nullptr, nullptr, nullptr);
  sqlite3_close(db);
  class Discard final : public TraceEventSink {
    void on_event(const TraceEvent&) override {}
  } sink;
  try {
    read_trace(other, sink);
    FAIL() << "no error";
  } catch (const InputError& error) {
    EXPECT_EQ(error.code(), ExitCode::kInputInvalid);
    EXPECT_NE(error.message().find("not an Nsight Systems export"), std::string::npos);
  }
  // The first 8 KiB of the real export: the SQLite header survives, the tables do not.
  std::string damaged = ::testing::TempDir() + "/damaged.sqlite";
  {
    std::ifstream in(data_path(kExport), std::ios::binary);
    std::string bytes(8192, '\0');
    in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()));
    std::ofstream(damaged, std::ios::binary) << bytes;
  }
  EXPECT_THROW(read_trace(damaged, sink), InputError);
}

}  // namespace
}  // namespace kprof::importers
