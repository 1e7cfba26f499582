// The findings database through the kprof binary: concurrent imports lose nothing, damaged
// files are refused and left as they were, queries return what was imported.
#include "store/findings_db.h"

#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "support/confined_fs.h"
#include "support/db_import_rounds.h"
#include "support/run_process.h"
#include "support/scratch_dir.h"
#include "support/test_data.h"

namespace kprof {
namespace {

namespace fs = std::filesystem;
using testing::data_path;

// kprof's mark in the SQLite header (PRAGMA application_id): "kprf" (docs/db.md).
constexpr std::int64_t kKprofApplicationId = 0x6B707266;

testing::ProcessResult kprof(std::vector<std::string> args) {
  args.insert(args.begin(), KPROF_BINARY);
  return testing::run_process(args);
}

// In the test process's own scratch folder: two test runs on one machine must not share a
// database file, and none is left behind.
std::string fresh_db(const std::string& name) {
  std::string path = testing::scratch_dir() + "/" + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

using kprof::testing::fresh_dir;

std::vector<std::string> entries(const std::string& dir) {
  std::vector<std::string> names;
  for (const auto& entry : fs::directory_iterator(dir)) {
    names.push_back(entry.path().filename().string());
  }
  std::sort(names.begin(), names.end());
  return names;
}

size_t lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

// Straight SQLite, beside kprof: what a database holds, and damage kprof did not do itself.
void sql(const std::string& path, const std::string& statements) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  char* error = nullptr;
  int rc = sqlite3_exec(db, statements.c_str(), nullptr, nullptr, &error);
  EXPECT_EQ(rc, SQLITE_OK) << (error ? error : "");
  sqlite3_free(error);
  sqlite3_close(db);
}

std::int64_t sql_integer(const std::string& path, const std::string& query) {
  sqlite3* db = nullptr;
  sqlite3_open_v2(path.c_str(), &db, SQLITE_OPEN_READONLY, nullptr);
  sqlite3_stmt* statement = nullptr;
  std::int64_t value = -1;
  if (sqlite3_prepare_v2(db, query.c_str(), -1, &statement, nullptr) == SQLITE_OK &&
      sqlite3_step(statement) == SQLITE_ROW) {
    value = sqlite3_column_int64(statement, 0);
  }
  sqlite3_finalize(statement);
  sqlite3_close(db);
  return value;
}

TEST(FindingsDb, TwoProcessesImportingAtOnceLoseNothing) {
  std::string db = fresh_db("concurrent.db");
  // Create the schema first.
  ASSERT_EQ(kprof({"db", "--db", db, "import", data_path("h200/multi_process_basic.ncu-rep.zst")})
                .exit_code,
            0);
  // Each process imports its reports twice: the second round finds them there (by digest).
  auto importer = [&](const std::vector<std::string>& reports, std::string* errors) {
    *errors = testing::import_each_twice(KPROF_BINARY, db, reports);
  };
  std::string errors_a, errors_b;
  std::thread a(importer,
                std::vector<std::string>{"h200/big_min.ncu-rep.zst", "h200/big_basic.ncu-rep.zst"},
                &errors_a);
  std::thread b(importer,
                std::vector<std::string>{"h200/two_kernels_full.ncu-rep.zst",
                                         "h200/diff_suite_basic_base_a.ncu-rep.zst"},
                &errors_b);
  a.join();
  b.join();
  EXPECT_EQ(errors_a + errors_b, "");
  auto history = nlohmann::json::parse(kprof({"db", "--db", db, "query", "history", "--json"}).out);
  std::set<std::int64_t> runs;
  for (const auto& row : history) runs.insert(row["run"].get<std::int64_t>());
  EXPECT_EQ(runs.size(), 5u);
  EXPECT_EQ(sql_integer(db, "SELECT COUNT(*) FROM runs"), 5);
  EXPECT_EQ(sql_integer(db, "SELECT COUNT(DISTINCT report_digest) FROM runs"), 5);
}

// An import is idempotent by the SHA-256 of the report's file (schema 4): the same report again,
// under its name or another, is the run it was, and nothing is written for it.
TEST(FindingsDb, AnImportIsIdempotentByReportDigest) {
  std::string db = fresh_db("idempotent.db");
  std::string report = data_path("h200/big_min.ncu-rep.zst");
  auto first = kprof({"db", "--db", db, "import", report});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  std::string copy = testing::copy_of_data("h200/big_min.ncu-rep.zst",
                                           testing::scratch_dir() + "/renamed.ncu-rep.zst");
  auto again = kprof(
      {"db", "--db", db, "import", report, copy, data_path("h200/two_kernels_full.ncu-rep.zst")});
  ASSERT_EQ(again.exit_code, 0) << again.err;
  EXPECT_NE(again.out.find(report + ": already imported as run 1 (24 kernels)\n" + copy +
                           ": already imported as run 1 (24 kernels)\n"),
            std::string::npos)
      << again.out;
  EXPECT_NE(again.out.find("two_kernels_full.ncu-rep.zst: run 2 (1 kernels)"), std::string::npos)
      << again.out;
  EXPECT_EQ(sql_integer(db, "SELECT COUNT(*) FROM runs"), 2);
  EXPECT_EQ(sql_integer(db, "SELECT COUNT(*) FROM kernels"), 25);
}

TEST(FindingsDb, QueriesReturnWhatWasImported) {
  std::string db = fresh_db("queries.db");
  auto imported = kprof({"db", "--db", db, "import", data_path("h200/big_full.ncu-rep.zst"),
                         "--campaign", "c1", "--model", "demo"});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  auto worst = nlohmann::json::parse(
      kprof({"db", "--db", db, "query", "worst", "--by", "stage", "-n", "1", "--json"}).out);
  bool found = false;
  for (const auto& row : worst) {
    if (row["stage"] == "gemm") {
      EXPECT_EQ(row["kernel"], "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT");
      EXPECT_NEAR(row["duration_us"].get<double>(), 135.936, 1e-3);
      found = true;
    }
  }
  EXPECT_TRUE(found);
  auto facts = nlohmann::json::parse(kprof({"db", "--db", db, "facts", "--json"}).out);
  bool measured = false;
  for (const auto& row : facts) {
    if (row["fact"] == "dram_peak_bandwidth") {
      measured = true;
      EXPECT_NEAR(std::stod(row["value"].get<std::string>()), 4.81e12, 0.01e12);
    }
  }
  EXPECT_TRUE(measured);
}

TEST(FindingsDb, DiffComparesStoredRuns) {
  std::string db = fresh_db("diff_runs.db");
  auto imported =
      kprof({"db", "--db", db, "import", data_path("h200/diff_suite_basic_base_a.ncu-rep.zst"),
             data_path("h200/diff_suite_basic_base_b.ncu-rep.zst"),
             data_path("h200/diff_suite_basic_slow_fp32.ncu-rep.zst")});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_EQ(kprof({"diff", "--db", db, "1", "2"}).exit_code, 0);
  auto slower = kprof({"diff", "--db", db, "--json", "1", "3"});
  EXPECT_EQ(slower.exit_code, 6);
  auto document = nlohmann::json::parse(slower.out);
  EXPECT_EQ(document["regressions"], 1);
  EXPECT_EQ(document["kernels"][0]["name"], "k_fp32_fma");
  EXPECT_EQ(kprof({"diff", "--db", db, "1", "9"}).exit_code, 5);
}

// A capture imported once from its report and once from ncu's CSV export: its kernels are the
// same, whichever spelling each run stored ("k_dram_stream" against
// "k_dram_stream(const float4 *, float4 *, unsigned long)").
TEST(FindingsDb, RunsOfOneCaptureFromReportAndCsvAreTheSameKernels) {
  std::string db = fresh_db("rep_and_csv.db");
  auto imported =
      kprof({"db", "--db", db, "import", data_path("h200/bottleneck_suite_full.ncu-rep.zst"),
             data_path("h200/bottleneck_suite_full_raw.csv.zst"),
             data_path("h200/decode_eager_full.ncu-rep.zst")});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  auto history = kprof({"db", "--db", db, "query", "history", "-k", "^k_dram_stream$", "--json"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  auto rows = nlohmann::json::parse(history.out);
  ASSERT_EQ(rows.size(), 2u) << history.out;
  EXPECT_EQ(rows[0]["run"], 1);
  EXPECT_EQ(rows[1]["run"], 2);
  // Listed together per kernel: the runs of each of the ten kernels follow each other.
  auto all = nlohmann::json::parse(
      kprof({"db", "--db", db, "query", "history", "-k", "^k_", "--json"}).out);
  ASSERT_EQ(all.size(), 20u);
  for (size_t i = 0; i < all.size(); i += 2) {
    EXPECT_EQ(all[i]["run"], 1);
    EXPECT_EQ(all[i + 1]["run"], 2);
    EXPECT_EQ(all[i + 1]["kernel"].get<std::string>().rfind(all[i]["kernel"].get<std::string>(), 0),
              0u);
  }
  // Stored runs compared: report against CSV, and decode_eager_full against itself: 16 kernel
  // groups by mangled name and launch configuration (13 by function name: the SiLU and Mul
  // instantiations of two elementwise templates share function name, grid and block).
  auto csv_vs_rep = kprof({"diff", "--db", db, "--json", "2", "1"});
  ASSERT_EQ(csv_vs_rep.exit_code, 0) << csv_vs_rep.err;
  EXPECT_EQ(nlohmann::json::parse(csv_vs_rep.out)["kernels"].size(), 10u);
  auto decode = kprof({"diff", "--db", db, "--json", "3", "3"});
  ASSERT_EQ(decode.exit_code, 0) << decode.err;
  EXPECT_EQ(nlohmann::json::parse(decode.out)["kernels"].size(), 16u);
}

// A kernel name copied from a PyTorch trace finds the runs of an ncu capture, which stored ncu's
// spelling of it: data/h200/trace_eager.json.gz (PyTorch's profiler) names the kernel
// "void at::native::vectorized_elementwise_kernel<4, at::native::AUnaryFunctor<long, long, bool,
// at::native::(anonymous namespace)::CompareEqFunctor<long> >, std::array<char*, 2ul> >(...)",
// ncu's report of the same program "...<(int)4, ...<unnamed>::CompareEqFunctor<long>>, ...".
TEST(FindingsDb, HistoryFindsACaptureByTheTracesSpelling) {
  std::string db = fresh_db("trace_spelling.db");
  ASSERT_EQ(kprof({"db", "--db", db, "import", data_path("h200/decode_eager_full.ncu-rep.zst")})
                .exit_code,
            0);
  auto history = [&](const std::string& regex) {
    auto result = kprof({"db", "--db", db, "query", "history", "-k", regex, "--json"});
    EXPECT_EQ(result.exit_code, 0) << result.err;
    return nlohmann::json::parse(result.out);
  };
  auto by_ncu_spelling = history(R"(vectorized_elementwise_kernel<\(int\)4, )"
                                 R"(at::native::AUnaryFunctor<long, long, bool, )"
                                 R"(at::native::<unnamed>::CompareEqFunctor<long>>)");
  auto by_trace_spelling =
      history(R"(vectorized_elementwise_kernel<4, )"
              R"(at::native::AUnaryFunctor<long, long, bool, )"
              R"(at::native::\(anonymous namespace\)::CompareEqFunctor<long> >)");
  ASSERT_EQ(by_ncu_spelling.size(), 3u);  // three launches of it in the capture
  EXPECT_EQ(by_trace_spelling, by_ncu_spelling);
}

TEST(FindingsDb, DamagedFilesAreRefusedAndLeftUntouched) {
  std::string not_sqlite = fresh_db("not_sqlite.db");
  std::ofstream(not_sqlite) << "this is a text file, not a database\n";
  std::string before = read_bytes(not_sqlite);
  auto refused = kprof({"db", "--db", not_sqlite, "import", data_path("h200/big_min.ncu-rep.zst")});
  EXPECT_EQ(refused.exit_code, 4);
  EXPECT_NE(refused.err.find("not a kprof database"), std::string::npos) << refused.err;
  EXPECT_EQ(read_bytes(not_sqlite), before);

  // A real database with its pages overwritten past the header.
  std::string corrupted = fresh_db("corrupted.db");
  ASSERT_EQ(
      kprof({"db", "--db", corrupted, "import", data_path("h200/big_min.ncu-rep.zst")}).exit_code,
      0);
  ASSERT_EQ(kprof({"db", "--db", corrupted, "facts"}).exit_code, 0);  // checkpoint happens on close
  std::string bytes = read_bytes(corrupted);
  ASSERT_GT(bytes.size(), 3 * 4096u);
  for (size_t i = 4096; i < bytes.size(); i += 7) bytes[i] = static_cast<char>(bytes[i] ^ 0x5A);
  std::ofstream(corrupted, std::ios::binary | std::ios::trunc) << bytes;
  for (const char* suffix : {"-wal", "-shm"}) std::remove((corrupted + suffix).c_str());
  auto broken = kprof({"db", "--db", corrupted, "import", data_path("h200/big_min.ncu-rep.zst")});
  EXPECT_EQ(broken.exit_code, 4) << broken.out << broken.err;
  EXPECT_EQ(broken.out, "");
  // One line: the first problem SQLite found and how many there are, not its whole report.
  EXPECT_EQ(lines(broken.err), 1u) << broken.err;
  EXPECT_NE(broken.err.find("corrupted database"), std::string::npos) << broken.err;
  EXPECT_EQ(read_bytes(corrupted), bytes);
  auto query = kprof({"db", "--db", corrupted, "query", "history"});
  EXPECT_EQ(query.exit_code, 4) << query.out << query.err;
  EXPECT_EQ(lines(query.err), 1u) << query.err;
  EXPECT_EQ(read_bytes(corrupted), bytes);
}

TEST(FindingsDb, AnotherApplicationsSqliteFileIsRefusedByteForByte) {
  std::string dir = fresh_dir("foreign-sqlite");
  std::string export_file = dir + "/nsys_decode_steps.sqlite";
  fs::copy_file(data_path("h200/nsys_decode_steps.sqlite"), export_file);
  const std::string before = read_bytes(export_file);
  std::vector<std::vector<std::string>> commands{
      {"db", "--db", export_file, "import", data_path("h200/big_min.ncu-rep.zst")},
      {"db", "--db", export_file, "query", "history"},
      {"db", "--db", export_file, "query", "worst", "--json"},
      {"db", "--db", export_file, "facts"},
      {"diff", "--db", export_file, "1", "2"}};
  for (const auto& command : commands) {
    auto result = kprof(command);
    EXPECT_EQ(result.exit_code, 4) << command[3] << ": " << result.err;
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(lines(result.err), 1u) << result.err;
    EXPECT_NE(result.err.find("not a kprof database"), std::string::npos) << result.err;
    EXPECT_EQ(read_bytes(export_file) == before, true) << "changed by " << command[3];
    EXPECT_EQ(entries(dir), std::vector<std::string>{"nsys_decode_steps.sqlite"});
  }
}

TEST(FindingsDb, AQueryOnAMissingFileCreatesNothing) {
  std::string dir = fresh_dir("missing-db");
  std::string typo = dir + "/kprof-findngs.db";
  for (std::vector<std::string> command :
       {std::vector<std::string>{"db", "--db", typo, "query", "history"},
        {"db", "--db", typo, "query", "worst"},
        {"db", "--db", typo, "facts"},
        {"diff", "--db", typo, "1", "2"}}) {
    auto result = kprof(command);
    EXPECT_EQ(result.exit_code, 3) << result.out << result.err;
    EXPECT_NE(result.err.find(typo), std::string::npos) << result.err;
    EXPECT_EQ(entries(dir), std::vector<std::string>{});
  }
}

// A database as kprof wrote it before it marked its files: schema version 1, no application id,
// the rollback journal a user may have switched it back to.
void make_unmarked_kprof_db(const std::string& path) {
  sql(path, R"(CREATE TABLE runs (
         id INTEGER PRIMARY KEY, imported_at TEXT NOT NULL, source TEXT NOT NULL,
         format TEXT, ncu_version TEXT, command_line TEXT, gpu TEXT, cc TEXT,
         campaign TEXT, cell TEXT, model TEXT, engine TEXT, framework TEXT);
       CREATE TABLE kernels (
         id INTEGER PRIMARY KEY, run_id INTEGER NOT NULL REFERENCES runs(id), launch INTEGER,
         name TEXT NOT NULL, demangled TEXT, grid TEXT, block TEXT, duration_ns REAL, stage TEXT);
       CREATE TABLE verdicts (
         kernel_id INTEGER PRIMARY KEY REFERENCES kernels(id), roofline TEXT, bound_by TEXT,
         sm_pct REAL, memory_pct REAL, tflops REAL, memory_bw_utilization REAL,
         sm_occupancy REAL, occupancy_limiter TEXT, top_stall TEXT, headroom TEXT,
         thresholds TEXT);
       CREATE TABLE metrics (
         kernel_id INTEGER NOT NULL REFERENCES kernels(id), name TEXT NOT NULL, value REAL,
         PRIMARY KEY (kernel_id, name));
       CREATE TABLE hardware_facts (
         gpu TEXT NOT NULL, fact TEXT NOT NULL, value TEXT, unit TEXT, source TEXT,
         PRIMARY KEY (gpu, fact, source));
       CREATE INDEX kernels_by_name ON kernels(name);
       CREATE INDEX kernels_by_run ON kernels(run_id);
       INSERT INTO runs (id, imported_at, source, gpu, campaign)
         VALUES (1, '2025-01-01T00:00:00Z', 'old.ncu-rep', 'NVIDIA H200', 'old campaign');
       INSERT INTO kernels (id, run_id, launch, name, duration_ns, stage)
         VALUES (1, 1, 0, 'old_kernel', 1000, 'gemm');
       INSERT INTO verdicts (kernel_id, roofline, bound_by) VALUES (1, 'memory', 'DRAM');
       PRAGMA user_version = 1;)");
}

TEST(FindingsDb, QueriesNeverWrite) {
  std::string dir = fresh_dir("queries-read-only");
  std::string db = dir + "/old.db";
  make_unmarked_kprof_db(db);
  const std::string before = read_bytes(db);
  auto history = kprof({"db", "--db", db, "query", "history", "--json"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  EXPECT_EQ(nlohmann::json::parse(history.out).at(0)["kernel"], "old_kernel");
  EXPECT_EQ(kprof({"db", "--db", db, "query", "worst"}).exit_code, 0);
  EXPECT_EQ(kprof({"db", "--db", db, "facts"}).exit_code, 0);
  EXPECT_EQ(read_bytes(db) == before, true);  // no WAL switch, no migration, no mark
  EXPECT_EQ(entries(dir), std::vector<std::string>{"old.db"});
}

TEST(FindingsDb, AnUnmarkedKprofDatabaseIsAdoptedOnWriteWithItsRuns) {
  std::string db = fresh_dir("adopt") + "/old.db";
  make_unmarked_kprof_db(db);
  ASSERT_EQ(sql_integer(db, "PRAGMA application_id"), 0);
  auto imported = kprof({"db", "--db", db, "import", data_path("h200/big_min.ncu-rep.zst")});
  ASSERT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_EQ(sql_integer(db, "PRAGMA application_id"), kKprofApplicationId);
  EXPECT_EQ(sql_integer(db, "SELECT COUNT(*) FROM runs"), 2);
  EXPECT_EQ(sql_integer(db, "SELECT COUNT(*) FROM kernels WHERE name = 'old_kernel'"), 1);
  auto history = kprof({"db", "--db", db, "query", "history", "-k", "old_kernel", "--json"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  EXPECT_EQ(nlohmann::json::parse(history.out).at(0)["campaign"], "old campaign");
}

TEST(FindingsDb, NewDatabasesCarryKprofsMark) {
  std::string db = fresh_dir("marked") + "/new.db";
  ASSERT_EQ(kprof({"db", "--db", db, "import", data_path("h200/big_min.ncu-rep.zst")}).exit_code,
            0);
  EXPECT_EQ(sql_integer(db, "PRAGMA application_id"), kKprofApplicationId);
  EXPECT_EQ(sql_integer(db, "PRAGMA user_version"), store::kSchemaVersion);
}

// Schema 2 adds measured_ceilings (kprof calibrate --db): a schema-1 database gets the table on
// its next write, keeps its runs, and a schema-1 database only read still lists its facts.
TEST(FindingsDb, ASchemaOneDatabaseIsMigratedToHoldMeasuredCeilings) {
  std::string dir = fresh_dir("migrate-2");
  std::string db = dir + "/old.db";
  make_unmarked_kprof_db(db);
  EXPECT_EQ(kprof({"db", "--db", db, "facts"}).exit_code, 0);
  EXPECT_EQ(sql_integer(db, "PRAGMA user_version"), 1);
  std::string calibration =
      std::string(KPROF_TESTS_DIR) + "/selftest/data/constructed_h200_calibration.json";
  auto stored = kprof({"calibrate", "--from", calibration, "--db", db});
  ASSERT_EQ(stored.exit_code, 0) << stored.err;
  EXPECT_NE(stored.out.find("stored: 5 ceilings in the findings database"), std::string::npos)
      << stored.out;
  EXPECT_EQ(sql_integer(db, "PRAGMA user_version"), store::kSchemaVersion);
  EXPECT_EQ(sql_integer(db, "SELECT COUNT(*) FROM runs"), 1);
  EXPECT_EQ(sql_integer(db,
                        "SELECT COUNT(*) FROM measured_ceilings WHERE gpu = 'NVIDIA H200' "
                        "AND measured_at = '2026-01-15T12:00:00Z' AND driver_nvidia = "
                        "'580.65.06' AND driver_cuda = '13.0'"),
            5);
  EXPECT_EQ(sql_integer(db,
                        "SELECT figure FROM measured_ceilings WHERE ceiling = "
                        "'dram_bandwidth'"),
            4000000000000);
  // The same calibration stored again replaces its rows.
  ASSERT_EQ(kprof({"calibrate", "--from", calibration, "--db", db}).exit_code, 0);
  EXPECT_EQ(sql_integer(db, "SELECT COUNT(*) FROM measured_ceilings"), 5);
  auto facts = nlohmann::json::parse(kprof({"db", "--db", db, "facts", "--json"}).out);
  std::set<std::string> measured;
  for (const auto& row : facts) {
    std::string fact = row["fact"];
    if (fact.rfind("measured_", 0) == 0) measured.insert(fact);
  }
  EXPECT_EQ(measured,
            (std::set<std::string>{"measured_bf16_tensor_flops", "measured_dram_bandwidth",
                                   "measured_fp32_flops", "measured_fp64_flops",
                                   "measured_launch_back_to_back"}));
}

TEST(FindingsDb, InvalidUtf8InAStoredNameStillGivesJson) {
  std::string db = fresh_dir("invalid-utf8") + "/findings.db";
  ASSERT_EQ(kprof({"db", "--db", db, "import", data_path("h200/big_min.ncu-rep.zst")}).exit_code,
            0);
  // "k_\xff_name": a byte that is never valid UTF-8, as a damaged export can carry.
  sql(db,
      "UPDATE kernels SET name = CAST(X'6B5FFF5F6E616D65' AS TEXT) WHERE id = 1;"
      "UPDATE kernels SET stage = CAST(X'C3' AS TEXT) WHERE id = 1;");
  const std::string replaced = "k_\xEF\xBF\xBD_name";  // U+FFFD in place of the bad byte
  auto history = kprof({"db", "--db", db, "query", "history", "--json"});
  ASSERT_EQ(history.exit_code, 0) << history.err;
  bool found = false;
  for (const auto& row : nlohmann::json::parse(history.out)) found |= row["kernel"] == replaced;
  EXPECT_TRUE(found) << history.out;
  auto worst = kprof({"db", "--db", db, "query", "worst", "--by", "stage", "--json"});
  ASSERT_EQ(worst.exit_code, 0) << worst.err;
  found = false;
  for (const auto& row : nlohmann::json::parse(worst.out)) {
    found |= row["stage"] == "\xEF\xBF\xBD" && row["kernel"] == replaced;
  }
  EXPECT_TRUE(found) << worst.out;
  auto table = kprof({"db", "--db", db, "query", "history"});
  EXPECT_EQ(table.exit_code, 0) << table.err;
  EXPECT_NE(table.out.find(replaced), std::string::npos);
  auto diff = kprof({"diff", "--db", db, "--json", "1", "1"});
  EXPECT_EQ(diff.exit_code, 0) << diff.err;
  EXPECT_TRUE(nlohmann::json::accept(diff.out)) << diff.out;
}

TEST(FindingsDb, AWriteUnderAFileNamesTheRealCause) {
  std::string dir = fresh_dir("db-under-file");
  std::ofstream(dir + "/a-file") << "x";
  auto result = kprof(
      {"db", "--db", dir + "/a-file/findings.db", "import", data_path("h200/big_min.ncu-rep.zst")});
  EXPECT_EQ(result.exit_code, 11) << result.err;
  EXPECT_EQ(lines(result.err), 1u) << result.err;
  EXPECT_NE(result.err.find(std::strerror(ENOTDIR)), std::string::npos) << result.err;
}

TEST(FindingsDb, AnImportIntoAReadOnlyFolderIsAWriteFailure) {
  if (auto reason = testing::confined_fs_unavailable()) GTEST_SKIP() << *reason;
  std::string dir = fresh_dir("db-read-only");
  ASSERT_EQ(
      kprof({"db", "--db", dir + "/findings.db", "import", data_path("h200/big_min.ncu-rep.zst")})
          .exit_code,
      0);
  for (const std::string name : {"new.db", "findings.db"}) {
    auto result =
        testing::run_with_read_only_dir(dir, {KPROF_BINARY, "db", "--db", dir + "/" + name,
                                              "import", data_path("h200/big_min.ncu-rep.zst")});
    EXPECT_EQ(result.exit_code, 11) << name << ": " << result.err;
    EXPECT_EQ(lines(result.err), 1u) << result.err;
    EXPECT_NE(result.err.find(std::strerror(EROFS)), std::string::npos) << result.err;
  }
  EXPECT_EQ(sql_integer(dir + "/findings.db", "SELECT COUNT(*) FROM runs"), 1);
  // Reading needs no write access, even to a WAL database whose folder SQLite cannot write to.
  auto query = testing::run_with_read_only_dir(
      dir, {KPROF_BINARY, "db", "--db", dir + "/findings.db", "query", "history", "--json"});
  EXPECT_EQ(query.exit_code, 0) << query.err;
  EXPECT_EQ(nlohmann::json::parse(query.out).size(), 24u);
}

TEST(FindingsDb, AnImportOfSeveralReportsIsAllOrNothing) {
  if (auto reason = testing::confined_fs_unavailable()) GTEST_SKIP() << *reason;
  std::string dir = fresh_dir("all-or-nothing");
  std::string after = fresh_dir("all-or-nothing-after");
  std::string db = dir + "/findings.db";
  ASSERT_EQ(kprof({"db", "--db", db, "import", data_path("h200/big_min.ncu-rep.zst")}).exit_code,
            0);
  // Room for about two more runs of big_full, not for five reports this size or larger.
  std::string room = std::to_string(fs::file_size(db) / 1024 + 160) + "k";
  std::vector<std::string> command{KPROF_BINARY, "db", "--db", db, "import"};
  // Distinct reports: one report twice is imported once (by its digest).
  for (const char* report : {"big_full", "bottleneck_suite_full", "selftest_h200_full",
                             "compiled_decode_full", "decode_eager_full"}) {
    command.push_back(data_path(std::string("h200/") + report + ".ncu-rep.zst"));
  }
  auto result = testing::run_with_full_disk(dir, room, after, command);
  EXPECT_EQ(result.exit_code, 11) << result.out << result.err;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(lines(result.err), 1u) << result.err;
  EXPECT_NE(result.err.find("nothing was imported"), std::string::npos) << result.err;
  EXPECT_EQ(sql_integer(after + "/findings.db", "SELECT COUNT(*) FROM runs"), 1);
}

}  // namespace
}  // namespace kprof
