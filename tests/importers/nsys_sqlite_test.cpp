// The Nsight Systems SQLite export recorded on the H200 (tools/traces/nsys_decode_steps.py),
// read through kprof and checked against SQL run directly on the same database.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <map>

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
