// kprof report --trace: a join that found none of the captured kernels in the trace answers
// nothing, and says so instead of ranking every kernel "not in trace" with exit 0.
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

// The bottleneck suite (k_* kernels of tools/bottleneck_suite) never ran in the vLLM step the
// eager trace recorded.
TEST(ReportCommand, NoCapturedKernelInTheTraceIsExitFive) {
  std::string trace = data_path("h200/trace_eager.json.gz");
  std::string report = data_path("h200/bottleneck_suite_full.ncu-rep.zst");
  for (std::vector<std::string> args :
       {std::vector<std::string>{"report", "--trace", trace, report},
        {"report", "--json", "--trace", trace, report},
        {"analyze", "--trace", trace, report}}) {
    auto result = kprof(args);
    SCOPED_TRACE(args[0] + " " + args[1]);
    EXPECT_EQ(result.exit_code, 5) << result.out;
    EXPECT_EQ(result.out, "");
    EXPECT_EQ(std::count(result.err.begin(), result.err.end(), '\n'), 1) << result.err;
    EXPECT_EQ(result.err.rfind("kprof: nothing in common: ", 0), 0u) << result.err;
    EXPECT_NE(result.err.find(trace), std::string::npos);
    EXPECT_NE(result.err.find("k_atomic_one_address"), std::string::npos);  // a captured kernel
    EXPECT_NE(result.err.find("nvjet_sm90"), std::string::npos);  // what the trace ran most
  }
}

TEST(ReportCommand, KernelsMissingFromTheTraceAreMarkedWhenOthersJoin) {
  auto result = kprof({"report", "--trace", data_path("h200/trace_eager.json.gz"),
                       data_path("h200/big_full.ncu-rep.zst"),
                       data_path("h200/bottleneck_suite_full.ncu-rep.zst")});
  ASSERT_EQ(result.exit_code, 0) << result.err;
  EXPECT_NE(result.out.find("not in trace"), std::string::npos);
}

}  // namespace
}  // namespace kprof
