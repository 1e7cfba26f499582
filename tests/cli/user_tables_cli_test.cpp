// User tables as a user meets them: a wrong table is exit 4 and one line naming the file and the
// entry, with nothing on stdout — before any report is analysed.
#include <gtest/gtest.h>
#include <unistd.h>

#include <fstream>

#include "support/run_process.h"
#include "support/scratch_dir.h"
#include "support/test_data.h"

namespace kprof {
namespace {

using testing::data_path;

testing::ProcessResult kprof(std::vector<std::string> args) {
  args.insert(args.begin(), KPROF_BINARY);
  return testing::run_process(args);
}

std::string table_file(const std::string& name, const std::string& text) {
  std::string path = testing::scratch_dir() + "/" + name;
  std::ofstream(path) << text;
  return path;
}

TEST(UserTablesCli, AnExpectationOutsideTheDocumentedSetIsExitFour) {
  std::string path = table_file(
      "expectations.json",
      R"({"expectations": [{"platform": "H200", "kernel": "nvjet", "expected": "DRAM"}]})");
  auto result = kprof({"analyze", "--expectations", path, data_path("h200/big_min.ncu-rep.zst")});
  EXPECT_EQ(result.exit_code, 4) << result.out;
  EXPECT_EQ(result.out, "");
  EXPECT_EQ(result.err.rfind(
                "kprof: " + path +
                    R"(: expectations[0] (kernel "nvjet"): expected: "DRAM" is not one of: )",
                0),
            0u)
      << result.err;
  EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1);
}

TEST(UserTablesCli, EveryTableOptionIsChecked) {
  std::string gpus = table_file("gpus.json", R"({"gpus": [{"name": "X", "sms": "132"}]})");
  auto bad_gpus = kprof({"gpus", "--gpus", gpus});
  EXPECT_EQ(bad_gpus.exit_code, 4);
  EXPECT_NE(bad_gpus.err.find(gpus + R"(: gpus[0] (name "X"): sms: expected a number)"),
            std::string::npos)
      << bad_gpus.err;
  auto bad_gpus_analyze = kprof({"analyze", "--gpus", gpus, data_path("h200/big_min.ncu-rep.zst")});
  EXPECT_EQ(bad_gpus_analyze.exit_code, 4);
  EXPECT_EQ(bad_gpus_analyze.out, "");

  std::string stages =
      table_file("stages.json", R"({"rules": [{"stage": "gemm", "regex": "gemm", "flags": "i"}]})");
  auto bad_stages = kprof({"rank", "--stages", stages, data_path("h200/budget_eager_b1.json.gz")});
  EXPECT_EQ(bad_stages.exit_code, 4);
  EXPECT_NE(bad_stages.err.find(R"(rules[0] (stage "gemm"): unknown key "flags")"),
            std::string::npos)
      << bad_stages.err;
  EXPECT_EQ(bad_stages.out, "");
}

}  // namespace
}  // namespace kprof
