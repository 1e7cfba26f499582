// kprof as a user runs it on hostile or odd inputs: short CSV rows, control characters and
// invalid UTF-8 in names, absurd trace durations, options out of range (issue 11).
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "support/run_process.h"
#include "support/test_data.h"

namespace kprof {
namespace {

using testing::data_path;
using testing::run_process;

testing::ProcessResult kprof(std::vector<std::string> args) {
  args.insert(args.begin(), KPROF_BINARY);
  return run_process(args);
}

std::string write_temp(const std::string& name, const std::string& bytes) {
  std::string path = ::testing::TempDir() + "/" + name;
  std::ofstream(path, std::ios::binary) << bytes;
  return path;
}

// ncu's details-page header with "Metric Unit" moved after "Metric Value".
const std::string kUnitAfterValueHeader =
    "\"ID\",\"Process ID\",\"Process Name\",\"Host Name\",\"Kernel Name\",\"Context\",\"Stream\","
    "\"Block Size\",\"Grid Size\",\"Device\",\"CC\",\"Section Name\",\"Metric Name\","
    "\"Metric Value\",\"Metric Unit\",\"Rule Name\",\"Rule Type\",\"Rule Description\","
    "\"Estimated Speedup Type\",\"Estimated Speedup\"\n";

TEST(OutputHardening, CsvRowEndingBeforeTheUnitColumnIsExitFourWithItsLine) {
  std::string path = write_temp(
      "unit_after_value.csv",
      kUnitAfterValueHeader +
          "\"0\",\"516\",\"m\",\"127.0.0.1\",\"k(float *)\",\"1\",\"7\",\"(256, 1, 1)\","
          "\"(4, 1, 1)\",\"0\",\"9.0\",\"GPU Speed Of Light Throughput\",\"DRAM Frequency\","
          "\"3.14\"\n");
  for (const char* verb : {"analyze", "inspect"}) {
    auto result = kprof({verb, path});
    EXPECT_EQ(result.exit_code, 4) << verb << ": " << result.err;
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(result.err.rfind("kprof: " + path + ": line 2: ", 0), 0u) << result.err;
  }
}

}  // namespace
}  // namespace kprof
