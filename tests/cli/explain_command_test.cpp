// kprof explain on real ncu output (data/h200/ncu-outputs) with the exit statuses a shell
// reports: a non-zero status is never "healthy", and the output follows capture's rule —
// the result on stdout, the diagnoses on stderr.
#include <gtest/gtest.h>

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

// ok_basic is a healthy run's output (4 kernels, a report); here the status says otherwise:
// ncu crashed at the very end, or the shell saw it killed.
testing::ProcessResult explain_ok_output_with(int exit_code, std::vector<std::string> extra = {}) {
  std::vector<std::string> args = {"explain", data_path("h200/ncu-outputs/ok_basic.out"),
                                   "--exit-code", std::to_string(exit_code)};
  args.insert(args.end(), extra.begin(), extra.end());
  for (const char* arg : {"--", "ncu", "--set", "basic", "--clock-control", "none", "-f",
                          "--export", "/tmp/ok_basic", "./diag", "plain"}) {
    args.push_back(arg);
  }
  return kprof(args);
}

TEST(ExplainCommand, ANonZeroExitIsAFailureEvenWithoutAKnownCause) {
  for (int code : {1, 2, 255, 139}) {
    SCOPED_TRACE(code);
    auto result = explain_ok_output_with(code);
    EXPECT_EQ(result.exit_code, 7) << result.out << result.err;
    EXPECT_EQ(result.out.find("looks healthy"), std::string::npos) << result.out;
    EXPECT_NE(result.err.find("FAILED [ncu_failed] ncu exited " + std::to_string(code)),
              std::string::npos)
        << result.err;
    EXPECT_NE(result.err.find("its last line: ==PROF== Report: /tmp/ok_basic.ncu-rep"),
              std::string::npos)
        << result.err;
  }
  auto segfault = explain_ok_output_with(139);
  EXPECT_NE(segfault.err.find("killed by signal 11 (SIGSEGV: a segmentation fault)"),
            std::string::npos)
      << segfault.err;
  auto json = explain_ok_output_with(255, {"--json"});
  EXPECT_EQ(json.exit_code, 7);
  nlohmann::json document = nlohmann::json::parse(json.out);
  EXPECT_EQ(document["failed"], true);
  ASSERT_EQ(document["diagnoses"].size(), 1u);
  EXPECT_EQ(document["diagnoses"][0]["id"], "ncu_failed");
}

TEST(ExplainCommand, ResultOnStdoutDiagnosesOnStderr) {
  std::string dir = data_path("h200/ncu-outputs/");
  std::vector<std::string> env_wrapper = {"explain",
                                          dir + "env_wrapper.out",
                                          "--exit-code",
                                          "0",
                                          "--",
                                          "ncu",
                                          "--target-processes",
                                          "application-only",
                                          "--launch-count",
                                          "1",
                                          "--clock-control",
                                          "none",
                                          "--",
                                          "env",
                                          "FOO=1",
                                          "./diag",
                                          "plain"};
  auto text = kprof(env_wrapper);
  EXPECT_EQ(text.exit_code, 7);
  EXPECT_EQ(text.out.rfind("ncu exited 0; 0 processes profiled", 0), 0u) << text.out;
  EXPECT_EQ(text.out.find("FAILED"), std::string::npos) << text.out;
  EXPECT_EQ(text.err.rfind("FAILED [env_wrapper] ", 0), 0u) << text.err;
  EXPECT_NE(text.err.find("\n    → "), std::string::npos);

  env_wrapper.insert(env_wrapper.begin() + 1, "--json");
  auto json = kprof(env_wrapper);
  EXPECT_EQ(json.exit_code, 7);
  EXPECT_EQ(nlohmann::json::parse(json.out)["diagnoses"][0]["id"], "env_wrapper");
  EXPECT_EQ(json.err, text.err);  // the same diagnoses on stderr in either mode

  auto healthy = explain_ok_output_with(0);
  EXPECT_EQ(healthy.exit_code, 0) << healthy.err;
  EXPECT_NE(healthy.out.find("nothing to report: the run looks healthy"), std::string::npos);
  EXPECT_EQ(healthy.err, "");
}

}  // namespace
}  // namespace kprof
