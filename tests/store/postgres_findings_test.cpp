// The findings database on a real PostgreSQL server the tests start themselves (issue 42): the
// db golden cases give the same output as on SQLite, concurrent importers lose nothing and
// readers never see half an import, a server killed mid-import leaves nothing half-written and a
// retry is safe, a role without CREATE and bad URLs are refused in one line. One server for the
// whole binary (one ctest: tests/CMakeLists.txt), a fresh database per test.
#include <gtest/gtest.h>
#include <libpq-fe.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>

#include "support/db_import_rounds.h"
#include "support/postgres_server.h"
#include "support/run_process.h"
#include "support/scratch_dir.h"
#include "support/test_data.h"

namespace kprof {
namespace {

using testing::data_path;
using testing::PostgresServer;

// The one server of this binary, started by the first test that needs it.
PostgresServer* server() {
  static std::unique_ptr<PostgresServer> instance;
  if (!instance) instance = std::make_unique<PostgresServer>();
  return instance.get();
}

#define NEED_SERVER()                                                                \
  do {                                                                               \
    if (auto reason = PostgresServer::unavailable_reason()) GTEST_SKIP() << *reason; \
  } while (0)

testing::ProcessResult kprof(std::vector<std::string> args) {
  args.insert(args.begin(), KPROF_BINARY);
  return testing::run_process(args);
}

// A fresh database on the server; its URL.
std::string fresh_database(const std::string& name) {
  server()->sql("DROP DATABASE IF EXISTS " + name + " WITH (FORCE)");
  server()->sql("CREATE DATABASE " + name);
  return server()->url(name);
}

std::int64_t count(const std::string& database, const std::string& table) {
  return std::stoll(server()->sql("SELECT COUNT(*) FROM kprof." + table, database));
}

size_t lines(const std::string& text) { return std::count(text.begin(), text.end(), '\n'); }

TEST(PostgresFindingsDb, GoldenDbCasesAreTheSameAsOnSqlite) {
  NEED_SERVER();
  // Each case of tests/golden/cases.txt that works on the database f.db, run against a fresh
  // PostgreSQL database instead: stdout, stderr and exit status must be its expected files,
  // written from the SQLite runs, byte for byte (the URL read back as f.db).
  std::vector<std::string> cases = {"db_import",
                                    "db_history",
                                    "db_history_json",
                                    "db_worst",
                                    "db_worst_json",
                                    "db_facts",
                                    "db_facts_json",
                                    "db_facts_measured_json",
                                    "db_predictions",
                                    "db_predictions_json",
                                    "db_worst_several_runs_json"};
  std::vector<std::string> command = {SYSTEM_PYTHON, KPROF_SOURCE_DIR "/tests/golden/run_golden.py",
                                      "--kprof",     KPROF_BINARY,
                                      "--repo",      KPROF_SOURCE_DIR,
                                      "--db-url",    server()->url("{case}")};
  for (const std::string& name : cases) {
    fresh_database(name);
    command.push_back(name);
  }
  auto result = testing::run_process(command);
  EXPECT_EQ(result.exit_code, 0) << result.out << result.err;
}

TEST(PostgresFindingsDb, ConcurrentImportersLoseNothingAndReadersSeeWholeImports) {
  NEED_SERVER();
  std::string db = fresh_database("concurrent");
  std::map<std::string, size_t> kernels_of = {{"h200/big_min.ncu-rep.zst", 24},
                                              {"h200/multi_process_basic.ncu-rep.zst", 2},
                                              {"h200/two_kernels_full.ncu-rep.zst", 1},
                                              {"h200/big_basic.ncu-rep.zst", 24}};
  // Each importer imports its reports twice: the second round finds them there (by digest).
  auto importer = [&](const std::vector<std::string>& reports, std::string* errors) {
    *errors = testing::import_each_twice(KPROF_BINARY, db, reports);
  };
  std::atomic<bool> done{false};
  std::string torn;
  // A reader meanwhile: every run it sees has all its kernels.
  std::thread reader([&] {
    while (!done) {
      auto result = kprof({"db", "--db", db, "query", "history", "--json"});
      if (result.exit_code != 0) continue;  // before the first import made the schema
      std::map<std::int64_t, size_t> per_run;
      for (const auto& row : nlohmann::json::parse(result.out)) {
        ++per_run[row["run"].get<std::int64_t>()];
      }
      std::set<size_t> whole;
      for (const auto& [report, kernels] : kernels_of) whole.insert(kernels);
      for (const auto& [run, kernels] : per_run) {
        if (!whole.count(kernels))
          torn +=
              "run " + std::to_string(run) + " seen with " + std::to_string(kernels) + " kernels\n";
      }
    }
  });
  std::string errors_a, errors_b;
  std::thread a(
      importer,
      std::vector<std::string>{"h200/big_min.ncu-rep.zst", "h200/multi_process_basic.ncu-rep.zst"},
      &errors_a);
  std::thread b(
      importer,
      std::vector<std::string>{"h200/two_kernels_full.ncu-rep.zst", "h200/big_basic.ncu-rep.zst"},
      &errors_b);
  a.join();
  b.join();
  done = true;
  reader.join();
  EXPECT_EQ(errors_a + errors_b, "");
  EXPECT_EQ(torn, "");
  EXPECT_EQ(count("concurrent", "runs"), 4);
  EXPECT_EQ(count("concurrent", "kernels"), 24 + 2 + 1 + 24);
}

TEST(PostgresFindingsDb, AServerKilledMidImportLeavesNothingAndARetryIsSafe) {
  NEED_SERVER();
  std::string db = fresh_database("killed");
  ASSERT_EQ(kprof({"db", "--db", db, "import", data_path("h200/big_min.ncu-rep.zst")}).exit_code,
            0);
  // Another session holds the kernels table: the import writes its run and then waits there,
  // mid-transaction, until the server goes.
  PGconn* holder = PQconnectdb(server()->url("killed").c_str());
  ASSERT_EQ(PQstatus(holder), CONNECTION_OK);
  PQclear(PQexec(holder, "BEGIN; LOCK TABLE kprof.kernels IN ACCESS EXCLUSIVE MODE"));
  testing::ProcessResult interrupted;
  std::thread import([&] {
    interrupted = kprof({"db", "--db", db, "import", data_path("h200/big_full.ncu-rep.zst"),
                         data_path("h200/two_kernels_full.ncu-rep.zst")});
  });
  bool waiting = false;
  for (int i = 0; i < 600 && !waiting; ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    waiting = server()->sql(
                  "SELECT COUNT(*) FROM pg_stat_activity WHERE application_name = "
                  "'kprof' AND wait_event_type = 'Lock'",
                  "killed") == "1\n";
  }
  EXPECT_TRUE(waiting) << "the import never waited on the held table";
  server()->stop_immediately();
  import.join();
  PQfinish(holder);
  server()->start();
  EXPECT_EQ(interrupted.exit_code, 11) << interrupted.err;
  EXPECT_EQ(interrupted.out, "");
  EXPECT_EQ(lines(interrupted.err), 1u) << interrupted.err;
  EXPECT_NE(interrupted.err.find("the database server went away"), std::string::npos)
      << interrupted.err;
  EXPECT_NE(interrupted.err.find("nothing was imported"), std::string::npos) << interrupted.err;
  EXPECT_EQ(count("killed", "runs"), 1);
  EXPECT_EQ(count("killed", "kernels"), 24);
  auto retried = kprof({"db", "--db", db, "import", data_path("h200/big_full.ncu-rep.zst"),
                        data_path("h200/two_kernels_full.ncu-rep.zst")});
  EXPECT_EQ(retried.exit_code, 0) << retried.err;
  EXPECT_EQ(count("killed", "runs"), 3);
}

TEST(PostgresFindingsDb, ARoleWithoutCreateIsRefusedInOneLineAndNothingIsMade) {
  NEED_SERVER();
  fresh_database("roles");
  server()->sql("DROP ROLE IF EXISTS importer; CREATE ROLE importer LOGIN");
  std::string as_importer = server()->url("roles", "importer");
  auto refused =
      kprof({"db", "--db", as_importer, "import", data_path("h200/big_min.ncu-rep.zst")});
  EXPECT_EQ(refused.exit_code, 11) << refused.err;
  EXPECT_EQ(refused.out, "");
  EXPECT_EQ(lines(refused.err), 1u) << refused.err;
  EXPECT_NE(refused.err.find("the role \"importer\""), std::string::npos) << refused.err;
  EXPECT_NE(refused.err.find("CREATE on the database"), std::string::npos) << refused.err;
  EXPECT_EQ(server()->sql("SELECT COUNT(*) FROM pg_namespace WHERE nspname = 'kprof'", "roles"),
            "0\n");
  // A schema made for it by someone else, without CREATE on it for this role: named as such.
  server()->sql("CREATE SCHEMA kprof; GRANT USAGE ON SCHEMA kprof TO importer", "roles");
  refused = kprof({"db", "--db", as_importer, "import", data_path("h200/big_min.ncu-rep.zst")});
  EXPECT_EQ(refused.exit_code, 11) << refused.err;
  EXPECT_NE(refused.err.find("CREATE on it (GRANT CREATE ON SCHEMA kprof TO importer)"),
            std::string::npos)
      << refused.err;
  // Given CREATE on the schema, it imports; and a role with no more than reading reads.
  server()->sql("GRANT CREATE ON SCHEMA kprof TO importer", "roles");
  auto imported =
      kprof({"db", "--db", as_importer, "import", data_path("h200/big_min.ncu-rep.zst")});
  EXPECT_EQ(imported.exit_code, 0) << imported.err;
  server()->sql(
      "DROP ROLE IF EXISTS reader; CREATE ROLE reader LOGIN; GRANT USAGE ON SCHEMA "
      "kprof TO reader; GRANT SELECT ON ALL TABLES IN SCHEMA kprof TO reader",
      "roles");
  auto read = kprof({"db", "--db", server()->url("roles", "reader"), "query", "worst", "--json"});
  // A team's importers need no CREATE once the schema is there: USAGE, SELECT, INSERT, UPDATE.
  server()->sql(
      "DROP ROLE IF EXISTS writer; CREATE ROLE writer LOGIN; GRANT USAGE ON SCHEMA "
      "kprof TO writer; GRANT SELECT, INSERT, UPDATE ON ALL TABLES IN SCHEMA kprof TO "
      "writer",
      "roles");
  auto written = kprof({"db", "--db", server()->url("roles", "writer"), "import",
                        data_path("h200/two_kernels_full.ncu-rep.zst")});
  EXPECT_EQ(written.exit_code, 0) << written.err;
  EXPECT_EQ(read.exit_code, 0) << read.err;
  // A report the database does not hold (one it holds is skipped, nothing to write).
  auto not_written = kprof({"db", "--db", server()->url("roles", "reader"), "import",
                            data_path("h200/big_basic.ncu-rep.zst")});
  EXPECT_EQ(not_written.exit_code, 11) << not_written.err;
  EXPECT_EQ(lines(not_written.err), 1u) << not_written.err;
  EXPECT_NE(not_written.err.find("permission denied"), std::string::npos) << not_written.err;
  EXPECT_EQ(count("roles", "runs"), 2);
}

TEST(PostgresFindingsDb, BadUrlsAndForeignSchemasAreRefusedInOneLine) {
  NEED_SERVER();
  std::string report = data_path("h200/big_min.ncu-rep.zst");
  // A password in the URL: refused before anything is tried, and never printed.
  for (const std::string& url :
       {std::string("postgresql://kprof:hunter2secret@localhost/kprof"),
        std::string("postgres://kprof@localhost/kprof?password=hunter2secret")}) {
    auto refused = kprof({"db", "--db", url, "import", report});
    EXPECT_EQ(refused.exit_code, 2) << url << ": " << refused.err;
    EXPECT_EQ(lines(refused.err), 1u) << refused.err;
    EXPECT_NE(refused.err.find("PGPASSWORD or ~/.pgpass"), std::string::npos) << refused.err;
    EXPECT_EQ(refused.err.find("hunter2secret"), std::string::npos) << refused.err;
  }
  auto unparsable = kprof({"db", "--db", "postgresql://kprof@[::1/kprof", "facts"});
  EXPECT_EQ(unparsable.exit_code, 2) << unparsable.err;
  EXPECT_EQ(lines(unparsable.err), 1u) << unparsable.err;
  auto bad_schema =
      kprof({"db", "--db", server()->url(), "--db-schema", "Robert'); DROP", "facts"});
  EXPECT_EQ(bad_schema.exit_code, 2) << bad_schema.err;
  // Nothing listens there: a read is exit 3, a write 11, each in one line, within the timeout.
  auto began = std::chrono::steady_clock::now();
  auto unreachable = kprof({"db", "--db", "postgresql://kprof@127.0.0.1:1/kprof", "facts"});
  EXPECT_EQ(unreachable.exit_code, 3) << unreachable.err;
  EXPECT_EQ(lines(unreachable.err), 1u) << unreachable.err;
  EXPECT_NE(unreachable.err.find("cannot connect to the database server"), std::string::npos)
      << unreachable.err;
  unreachable = kprof({"db", "--db", "postgresql://kprof@127.0.0.1:1/kprof", "import", report});
  EXPECT_EQ(unreachable.exit_code, 11) << unreachable.err;
  // An address that drops the packets (TEST-NET-1, RFC 5737): given up after connect_timeout.
  auto blackhole =
      kprof({"db", "--db", "postgresql://kprof@192.0.2.1:5432/kprof?connect_timeout=2", "facts"});
  EXPECT_EQ(blackhole.exit_code, 3) << blackhole.err;
  EXPECT_LT(std::chrono::steady_clock::now() - began, std::chrono::seconds(15));
  // A schema `kprof` of another application's tables: refused and left as it was.
  std::string foreign = fresh_database("foreign_tables");
  server()->sql(
      "CREATE SCHEMA kprof; CREATE TABLE kprof.orders (id int); INSERT INTO kprof.orders "
      "VALUES (7)",
      "foreign_tables");
  for (const char* verb : {"import", "facts"}) {
    std::vector<std::string> args = {"db", "--db", foreign, verb};
    if (std::string(verb) == "import") args.push_back(report);
    auto refused = kprof(args);
    EXPECT_EQ(refused.exit_code, 4) << refused.err;
    EXPECT_EQ(lines(refused.err), 1u) << refused.err;
    EXPECT_NE(refused.err.find("is not kprof's (tables: orders)"), std::string::npos)
        << refused.err;
  }
  EXPECT_EQ(server()->sql("SELECT string_agg(tablename, ',') FROM pg_tables WHERE schemaname = "
                          "'kprof'",
                          "foreign_tables"),
            "orders\n");
  // Another schema is kprof's own; a query where none was ever written is exit 3.
  auto elsewhere = kprof({"db", "--db", foreign, "--db-schema", "team_findings", "import", report});
  EXPECT_EQ(elsewhere.exit_code, 0) << elsewhere.err;
  auto missing = kprof({"db", "--db", fresh_database("empty"), "facts"});
  EXPECT_EQ(missing.exit_code, 3) << missing.err;
  EXPECT_NE(missing.err.find("kprof db import creates it"), std::string::npos) << missing.err;
}

// A schema-3 kprof schema (before report digests) is migrated on the next write, keeping its runs.
TEST(PostgresFindingsDb, AnOlderSchemaIsMigratedOnTheNextWrite) {
  NEED_SERVER();
  std::string db = fresh_database("older");
  ASSERT_EQ(kprof({"db", "--db", db, "import", data_path("h200/big_min.ncu-rep.zst")}).exit_code,
            0);
  // As a kprof of schema 3 left it.
  server()->sql(
      "DROP INDEX kprof.runs_by_report_digest; ALTER TABLE kprof.runs DROP COLUMN "
      "report_digest; UPDATE kprof.kprof_schema SET version = 3",
      "older");
  auto read = kprof({"db", "--db", db, "query", "worst", "--json"});
  EXPECT_EQ(read.exit_code, 0) << read.err;
  EXPECT_EQ(server()->sql("SELECT version FROM kprof.kprof_schema", "older"), "3\n");
  auto imported =
      kprof({"db", "--db", db, "import", data_path("h200/two_kernels_full.ncu-rep.zst")});
  EXPECT_EQ(imported.exit_code, 0) << imported.err;
  EXPECT_EQ(server()->sql("SELECT version FROM kprof.kprof_schema", "older"), "4\n");
  EXPECT_EQ(server()->sql("SELECT COUNT(report_digest) FROM kprof.runs", "older"), "1\n");
  EXPECT_EQ(count("older", "runs"), 2);
  // A schema newer than this kprof is refused, untouched.
  server()->sql("UPDATE kprof.kprof_schema SET version = 99", "older");
  auto newer = kprof({"db", "--db", db, "import", data_path("h200/big_basic.ncu-rep.zst")});
  EXPECT_EQ(newer.exit_code, 4) << newer.err;
  EXPECT_NE(newer.err.find("newer than this kprof reads"), std::string::npos) << newer.err;
  EXPECT_EQ(count("older", "runs"), 2);
}

// kprof db sync: a person's SQLite history into the team's database, idempotent, counted; the
// team's database then answers as the person's did.
TEST(PostgresFindingsDb, SyncCopiesALocalDatabaseOnceAndAnswersAlike) {
  NEED_SERVER();
  std::string db = fresh_database("synced");
  std::string local = testing::fresh_dir("sync") + "/mine.db";
  ASSERT_EQ(kprof({"db", "--db", local, "import", data_path("h200/big_full.ncu-rep.zst"),
                   data_path("h200/two_kernels_full.ncu-rep.zst"), "--model", "llama"})
                .exit_code,
            0);
  ASSERT_EQ(kprof({"calibrate", "--from", data_path("h200/h200_calibration.json"), "--db", local})
                .exit_code,
            0);
  auto first = kprof({"db", "--db", db, "sync", local});
  ASSERT_EQ(first.exit_code, 0) << first.err;
  EXPECT_NE(first.out.find(": runs 2 added, 0 skipped; hardware facts "), std::string::npos)
      << first.out;
  EXPECT_NE(first.out.find("0 skipped; measured ceilings "), std::string::npos) << first.out;
  auto second = kprof({"db", "--db", db, "sync", local});
  ASSERT_EQ(second.exit_code, 0) << second.err;
  EXPECT_NE(second.out.find(": runs 0 added, 2 skipped; hardware facts 0 added, "),
            std::string::npos)
      << second.out;
  EXPECT_NE(second.out.find("measured ceilings 0 added, "), std::string::npos) << second.out;
  for (std::vector<std::string> query :
       {std::vector<std::string>{"query", "history", "--json"},
        std::vector<std::string>{"query", "worst", "--by", "stage", "-n", "3", "--json"},
        std::vector<std::string>{"facts", "--json"}}) {
    std::vector<std::string> on_sqlite = {"db", "--db", local};
    std::vector<std::string> on_postgres = {"db", "--db", db};
    on_sqlite.insert(on_sqlite.end(), query.begin(), query.end());
    on_postgres.insert(on_postgres.end(), query.begin(), query.end());
    auto expected = kprof(on_sqlite);
    auto actual = kprof(on_postgres);
    EXPECT_EQ(actual.exit_code, 0) << actual.err;
    EXPECT_EQ(actual.out, expected.out) << query[0];
  }
  // A database of schema 3 (runs without digests): its runs are known by what they recorded.
  std::string older = testing::fresh_dir("sync-older") + "/old.db";
  ASSERT_EQ(kprof({"db", "--db", older, "import", data_path("h200/big_min.ncu-rep.zst")}).exit_code,
            0);
  auto downgraded = testing::run_process(
      {"/usr/bin/python3", "-c",
       "import sqlite3, sys; c = sqlite3.connect(sys.argv[1]); c.executescript('DROP INDEX "
       "runs_by_report_digest; ALTER TABLE runs DROP COLUMN report_digest; PRAGMA user_version "
       "= 3'); c.close()",
       older});
  ASSERT_EQ(downgraded.exit_code, 0) << downgraded.err;
  EXPECT_NE(kprof({"db", "--db", db, "sync", older}).out.find(": runs 1 added, 0 skipped"),
            std::string::npos);
  EXPECT_NE(kprof({"db", "--db", db, "sync", older}).out.find(": runs 0 added, 1 skipped"),
            std::string::npos);
  EXPECT_EQ(count("synced", "runs"), 3);
}

}  // namespace
}  // namespace kprof
