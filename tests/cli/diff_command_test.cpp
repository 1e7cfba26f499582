// kprof diff as a CI gate: a comparison that compared nothing must not pass.
#include <gtest/gtest.h>

#include <algorithm>
#include <nlohmann/json.hpp>

#include "support/run_process.h"
#include "support/test_data.h"

namespace kprof {
namespace {

using testing::data_path;

testing::ProcessResult kprof(std::vector<std::string> args) {
  args.insert(args.begin(), KPROF_BINARY);
  return testing::run_process(args);
}

// The bottleneck suite (k_* kernels) against the vLLM step of big_min (nvjet/cudnn kernels):
// not one kernel has the same name, grid and block in both.
TEST(DiffCommand, NoKernelInCommonIsExitFiveNamingBothSides) {
  std::string baseline = data_path("h200/diff_suite_basic_base_a.ncu-rep.zst");
  std::string candidate = data_path("h200/big_min.ncu-rep.zst");
  for (std::vector<std::string> extra :
       {std::vector<std::string>{}, {"--json"}, {"--no-fail"}, {"--threshold", "0"}}) {
    std::vector<std::string> args = {"diff", baseline, candidate};
    args.insert(args.end(), extra.begin(), extra.end());
    auto result = kprof(args);
    SCOPED_TRACE(args.back());
    EXPECT_EQ(result.exit_code, 5) << result.out;
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_EQ(result.err.rfind("kprof: nothing in common: ", 0), 0u) << result.err;
    EXPECT_NE(result.err.find(baseline), std::string::npos);
    EXPECT_NE(result.err.find(candidate), std::string::npos);
    EXPECT_NE(result.err.find("k_atomic_one_address"), std::string::npos);  // baseline's names
    EXPECT_NE(result.err.find("cudnn_generated_fort_native_sdpa"), std::string::npos);
  }
}

TEST(DiffCommand, HelpDocumentsExitFive) {
  auto help = kprof({"diff", "--help"});
  EXPECT_NE(help.out.find("Exit 6 when something regressed, 5 when"), std::string::npos)
      << help.out;
}

}  // namespace
}  // namespace kprof
