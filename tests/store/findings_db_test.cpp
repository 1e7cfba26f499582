// The findings database through the kprof binary: concurrent imports lose nothing, damaged
// files are refused and left as they were, queries return what was imported.
#include <gtest/gtest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <thread>
#include <unistd.h>

#include "support/run_process.h"
#include "support/test_data.h"

namespace kprof {
namespace {

using testing::data_path;

testing::ProcessResult kprof(std::vector<std::string> args) {
  args.insert(args.begin(), KPROF_BINARY);
  return testing::run_process(args);
}

// Unique per test process: two test runs on one machine must not share a database file.
std::string fresh_db(const std::string& name) {
  std::string path = ::testing::TempDir() + "/" + std::to_string(::getpid()) + "-" + name;
  for (const char* suffix : {"", "-wal", "-shm"}) std::remove((path + suffix).c_str());
  return path;
}

std::string read_bytes(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

TEST(FindingsDb, TwoProcessesImportingAtOnceLoseNothing) {
  std::string db = fresh_db("concurrent.db");
  ASSERT_EQ(kprof({"db", "--db", db, "facts"}).exit_code, 0);  // create the schema first
  auto importer = [&](const std::string& report, std::string* errors) {
    for (int i = 0; i < 5; ++i) {
      auto result = kprof({"db", "--db", db, "import", data_path(report)});
      if (result.exit_code != 0) *errors += result.err;
    }
  };
  std::string errors_a, errors_b;
  std::thread a(importer, "h200/big_min.ncu-rep.zst", &errors_a);
  std::thread b(importer, "h200/multi_process_basic.ncu-rep.zst", &errors_b);
  a.join();
  b.join();
  EXPECT_EQ(errors_a + errors_b, "");
  auto history = nlohmann::json::parse(
      kprof({"db", "--db", db, "query", "history", "--json"}).out);
  EXPECT_EQ(history.size(), 5u * 24 + 5u * 2);  // every kernel of every import
  std::set<std::int64_t> runs;
  for (const auto& row : history) runs.insert(row["run"].get<std::int64_t>());
  EXPECT_EQ(runs.size(), 10u);
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
  auto imported = kprof({"db", "--db", db, "import",
                         data_path("h200/diff_suite_basic_base_a.ncu-rep.zst"),
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
  ASSERT_EQ(kprof({"db", "--db", corrupted, "import", data_path("h200/big_min.ncu-rep.zst")}).exit_code, 0);
  ASSERT_EQ(kprof({"db", "--db", corrupted, "facts"}).exit_code, 0);  // checkpoint happens on close
  std::string bytes = read_bytes(corrupted);
  ASSERT_GT(bytes.size(), 3 * 4096u);
  for (size_t i = 4096; i < bytes.size(); i += 7) bytes[i] = static_cast<char>(bytes[i] ^ 0x5A);
  std::ofstream(corrupted, std::ios::binary | std::ios::trunc) << bytes;
  for (const char* suffix : {"-wal", "-shm"}) std::remove((corrupted + suffix).c_str());
  auto broken = kprof({"db", "--db", corrupted, "import", data_path("h200/big_min.ncu-rep.zst")});
  EXPECT_EQ(broken.exit_code, 4) << broken.out << broken.err;
  EXPECT_EQ(broken.out, "");
  EXPECT_EQ(read_bytes(corrupted), bytes);
}

}  // namespace
}  // namespace kprof
