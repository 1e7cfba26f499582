// Issue 43, "Records the profiler dropped": launch calls whose work no GPU record carries, and
// what the producer itself says it lost. On the H200 Nsight Systems export with kernel rows
// deleted as CUPTI drops them (whole buffers: a contiguous run of correlation ids) and a
// diagnostic added, and on Chrome traces written here; the expected counts come from SQL over the
// same database and from the JSON written here, not from kprof.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <fstream>
#include <string>

#include "importers/common/read_trace.h"
#include "render/trace_render.h"
#include "support/test_data.h"
#include "timeline/kernel_ranking.h"
#include "timeline/step_budget.h"

namespace kprof::timeline {
namespace {

using testing::data_path;

const std::string kExport = "h200/nsys_decode_steps.sqlite";

std::int64_t scalar(const std::string& db_path, const std::string& sql) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(db_path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* statement = nullptr;
  sqlite3_prepare_v2(db, sql.c_str(), -1, &statement, nullptr);
  std::int64_t value = -1;
  if (sqlite3_step(statement) == SQLITE_ROW) value = sqlite3_column_int64(statement, 0);
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return value;
}

// Kernel and graph launch calls (distinct ids) and those without a kernel, copy or fill row.
const char* kLaunches =
    "SELECT COUNT(DISTINCT r.correlationId) FROM CUPTI_ACTIVITY_KIND_RUNTIME r JOIN StringIds s "
    "ON s.id = r.nameId WHERE (s.value LIKE '%LaunchKernel%' OR s.value LIKE "
    "'%LaunchCooperativeKernel%' OR s.value LIKE '%GraphLaunch%')";
std::string launches_without_rows(const std::string& db_path) {
  std::string work = "SELECT correlationId FROM CUPTI_ACTIVITY_KIND_KERNEL";
  for (const char* table : {"CUPTI_ACTIVITY_KIND_MEMCPY", "CUPTI_ACTIVITY_KIND_MEMSET"}) {
    if (scalar(db_path, std::string("SELECT COUNT(*) FROM sqlite_master WHERE name = '") + table +
                            "'") == 1) {
      work += std::string(" UNION SELECT correlationId FROM ") + table;
    }
  }
  return std::string(kLaunches) + " AND r.correlationId NOT IN (" + work + ")";
}

struct Read {
  importers::TraceReadStats stats;
  LaunchRecords ranked, budgeted;
  Budget budget;
};

Read read_both(const std::string& path) {
  static const analysis::StageTable stages = analysis::load_stage_table();
  RankingBuilder ranking(stages, true);
  BudgetBuilder budget;
  Read read;
  read.stats = importers::read_trace(path, ranking);
  importers::read_trace(path, budget);
  read.ranked = ranking.finish().launch_records;
  read.budget = budget.finish("", {});
  read.budgeted = read.budget.launch_records;
  return read;
}

TEST(DroppedRecords, ACompleteExportHasEveryLaunchsWork) {
  const std::string path = data_path(kExport);
  Read read = read_both(path);
  EXPECT_EQ(read.ranked.launch_calls, static_cast<std::uint64_t>(scalar(path, kLaunches)));
  EXPECT_EQ(read.ranked.without_gpu_record,
            static_cast<std::uint64_t>(scalar(path, launches_without_rows(path))));
  EXPECT_FALSE(read.ranked.incomplete());
  EXPECT_EQ(read.budgeted.launch_calls, read.ranked.launch_calls);
  EXPECT_EQ(read.budgeted.without_gpu_record, read.ranked.without_gpu_record);
  EXPECT_TRUE(read.stats.producer_drops.empty());  // its 12 diagnostics are all Info
}

TEST(DroppedRecords, KernelRowsLostInBuffersAreCountedAndTheDiagnosticIsRead) {
  std::string copy = testing::copy_of_data(kExport, ::testing::TempDir() + "/dropped.sqlite");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(copy.c_str(), &db), SQLITE_OK);
  // A lost buffer: the kernel rows of the middle third of the correlation ids.
  ASSERT_EQ(sqlite3_exec(db,
                         "DELETE FROM CUPTI_ACTIVITY_KIND_KERNEL WHERE correlationId BETWEEN "
                         "(SELECT MIN(correlationId) + (MAX(correlationId) - MIN(correlationId)) "
                         "/ 3 FROM CUPTI_ACTIVITY_KIND_KERNEL) AND (SELECT MIN(correlationId) + 2 "
                         "* (MAX(correlationId) - MIN(correlationId)) / 3 FROM "
                         "CUPTI_ACTIVITY_KIND_KERNEL);"
                         "INSERT INTO DIAGNOSTIC_EVENT (timestamp, timestampType, source, "
                         "severity, text, globalPid) VALUES (900000000, 1, 1, 2, 'CUPTI dropped "
                         "24806 events: the CUDA trace buffers were full', NULL);"
                         "INSERT INTO DIAGNOSTIC_EVENT (timestamp, timestampType, source, "
                         "severity, text, globalPid) VALUES (900000001, 1, 1, 4, 'Verbose: 0 "
                         "events dropped', NULL);",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  const std::int64_t missing = scalar(copy, launches_without_rows(copy));
  ASSERT_GT(missing, 20);
  Read read = read_both(copy);
  EXPECT_EQ(read.ranked.launch_calls, static_cast<std::uint64_t>(scalar(copy, kLaunches)));
  EXPECT_EQ(read.ranked.without_gpu_record, static_cast<std::uint64_t>(missing));
  EXPECT_EQ(read.budgeted.without_gpu_record, static_cast<std::uint64_t>(missing));
  EXPECT_TRUE(read.ranked.incomplete());
  EXPECT_TRUE(read.budgeted.incomplete());
  // The warning, not the verbose line.
  ASSERT_EQ(read.stats.producer_drops.size(), 1u);
  EXPECT_NE(read.stats.producer_drops[0].find("CUPTI dropped 24806 events"), std::string::npos);

  render::TraceSource source{copy, {"kprof", "budget", copy}, read.stats};
  std::string warnings = render::trace_warnings(source, &read.budgeted);
  EXPECT_NE(warnings.find("the profiler reports lost records: Nsight Systems diagnostic: CUPTI "
                          "dropped 24806 events"),
            std::string::npos)
      << warnings;
  EXPECT_NE(warnings.find(std::to_string(missing) + " of " +
                          std::to_string(read.budgeted.launch_calls) + " launch calls"),
            std::string::npos)
      << warnings;
  nlohmann::json json = render::budget_json(read.budget, {}, source);
  EXPECT_EQ(json["records"]["launches_without_gpu_record"], missing);
  EXPECT_EQ(json["records"]["complete"], false);
  EXPECT_EQ(json["advice"].get<std::string>().rfind("On incomplete records: ", 0), 0u)
      << json["advice"];
}

std::string write_trace(const std::string& name, const std::string& text) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary | std::ios::trunc) << text;
  return path;
}

std::string launch(const std::string& call, int correlation, double ts) {
  return "{\"ph\": \"X\", \"cat\": \"cuda_runtime\", \"name\": \"" + call +
         "\", \"pid\": 1, \"tid\": 1, \"ts\": " + std::to_string(ts) +
         ", \"dur\": 2, \"args\": {\"correlation\": " + std::to_string(correlation) + "}}";
}
std::string kernel(int correlation, double ts) {
  return "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\", \"pid\": 0, \"tid\": 7, \"ts\": " +
         std::to_string(ts) +
         ", \"dur\": 3, \"args\": {\"device\": 0, \"stream\": 7, "
         "\"correlation\": " +
         std::to_string(correlation) + "}}";
}

// 30 kernel launches of which 25 ran (5 without a row: under the count that is said), 10 launched
// inside a stream capture (no rows: they enqueue nothing), 40 zero-byte memsets without rows.
std::string capture_and_memsets(int lost) {
  std::string events;
  int id = 1;
  double ts = 1000;
  auto add = [&](const std::string& e) { events += (events.empty() ? "" : ",\n") + e; };
  for (int i = 0; i < 30 + lost; ++i, ++id, ts += 10) {
    add(launch("cudaLaunchKernel", id, ts));
    if (i >= 5 + lost) add(kernel(id, ts + 5));
  }
  add(launch("cudaStreamBeginCapture", id++, ts += 10));
  for (int i = 0; i < 10; ++i) add(launch("cudaLaunchKernel", id++, ts += 10));
  add(launch("cudaStreamEndCapture", id++, ts += 10));
  for (int i = 0; i < 40; ++i) add(launch("cudaMemsetAsync", id++, ts += 10));
  return "{\"traceEvents\": [\n" + events + "\n]}";
}

TEST(DroppedRecords, CapturedLaunchesAndEmptyFillsAreNotDrops) {
  Read read = read_both(write_trace("capture.json", capture_and_memsets(0)));
  EXPECT_EQ(read.ranked.launch_calls, 30u);
  EXPECT_EQ(read.ranked.without_gpu_record, 5u);
  EXPECT_FALSE(read.ranked.incomplete());
  EXPECT_EQ(read.budgeted.launch_calls, 30u);
  EXPECT_EQ(read.budgeted.without_gpu_record, 5u);
  // 25 more lost: 30 of 55.
  Read lossy = read_both(write_trace("capture_lossy.json", capture_and_memsets(25)));
  EXPECT_EQ(lossy.ranked.launch_calls, 55u);
  EXPECT_EQ(lossy.ranked.without_gpu_record, 30u);
  EXPECT_TRUE(lossy.ranked.incomplete());
  EXPECT_EQ(lossy.budgeted.without_gpu_record, 30u);
}

// kprof's tracer counts what it dropped: its summary is read, and its word is taken over the
// comparison (its traces do not record stream captures).
TEST(DroppedRecords, TheTracersOwnCountsAreItsWord) {
  std::string trace = capture_and_memsets(25);
  trace.pop_back();  // the closing brace
  trace +=
      ", \"kprof\": {\"format\": \"kprof.trace/1\", \"dropped\": {\"cupti_dropped_records\": 7, "
      "\"buffer_requests_refused\": 0, \"late_records\": 2}}}";
  Read read = read_both(write_trace("tracer.json", trace));
  EXPECT_TRUE(read.stats.producer_counts_drops);
  ASSERT_EQ(read.stats.producer_drops.size(), 2u);
  EXPECT_EQ(read.stats.producer_drops[0], "kprof tracer: 7 cupti dropped records");
  EXPECT_EQ(read.stats.producer_drops[1], "kprof tracer: 2 late records");
  read.ranked.producer_counts_drops = read.stats.producer_counts_drops;
  EXPECT_EQ(read.ranked.without_gpu_record, 30u);
  EXPECT_FALSE(read.ranked.incomplete());
}

}  // namespace
}  // namespace kprof::timeline
