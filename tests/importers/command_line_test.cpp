#include <gtest/gtest.h>

#include "importers/ncu_rep/profiler_command_line.h"

namespace kprof::importers {
namespace {

// The command line as ncu 2025.3.1 recorded it in data/h200/big_full.ncu-rep.zst.
constexpr const char* kBigFull =
    "/opt/nvidia/nsight-compute/2025.3.1/target/linux-desktop-glibc_2_11_3-x64/ncu --set full "
    "--kernel-name regex:nvjet|flash|fmha|attention|cutlass|gemm|sm90 --launch-count 24 "
    "--clock-control none -f --export big_full python3 workload.py eager 2 ";

TEST(SettingsFromCommandLine, RecoversFiltersSetsAndApplication) {
  model::ProfilerSettings s = settings_from_command_line(kBigFull);
  EXPECT_EQ(s.settings_source, "command line");
  EXPECT_EQ(s.sets, std::vector<std::string>{"full"});
  EXPECT_EQ(s.kernel_name, "regex:nvjet|flash|fmha|attention|cutlass|gemm|sm90");
  EXPECT_EQ(s.launch_count, 24u);
  EXPECT_FALSE(s.launch_skip.has_value());
  EXPECT_EQ(s.clock_control, "none");
  EXPECT_EQ(s.export_path, "big_full");
  EXPECT_EQ(s.application, (std::vector<std::string>{"python3", "workload.py", "eager", "2"}));
}

TEST(SettingsFromCommandLine, ShortOptionsMetricListsAndFlags) {
  model::ProfilerSettings s = settings_from_command_line(
      "ncu -k regex:gemm -s 300 -c 5 --metrics a.sum,b.avg --nvtx --target-processes all "
      "--replay-mode application --disable-profiler-start-stop --section=SpeedOfLight -- ./app x");
  EXPECT_EQ(s.kernel_name, "regex:gemm");
  EXPECT_EQ(s.launch_skip, 300u);
  EXPECT_EQ(s.launch_count, 5u);
  EXPECT_EQ(s.metrics, (std::vector<std::string>{"a.sum", "b.avg"}));
  EXPECT_EQ(s.nvtx, "on");
  EXPECT_EQ(s.target_processes, "all");
  EXPECT_EQ(s.replay_mode, "application");
  EXPECT_TRUE(s.disable_profiler_start_stop);
  EXPECT_EQ(s.sections, std::vector<std::string>{"SpeedOfLight"});
  EXPECT_EQ(s.application, (std::vector<std::string>{"./app", "x"}));
}

TEST(SettingsFromCommandLine, EmptyLineMeansNothingRecorded) {
  EXPECT_EQ(settings_from_command_line("").settings_source, "");
}

}  // namespace
}  // namespace kprof::importers
