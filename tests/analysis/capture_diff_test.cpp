// kprof diff on three real --set basic captures of tools/bottleneck_suite (each kernel launched
// three times): two unchanged runs, and one run with SUITE_SLOW=k_fp32_fma, which doubles that
// kernel's loop — a regression of +100% by construction.
#include "analysis/capture_diff.h"

#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "importers/importer.h"
#include "support/test_data.h"

namespace kprof::analysis {
namespace {

using testing::data_path;

CaptureDiff diff_files(const std::string& a, const std::string& b, DiffOptions options = {}) {
  static const hardware::GpuDatabase gpus = hardware::load_gpu_database();
  static const StageTable stages = load_stage_table();
  static const ExpectationTable expectations = load_expectations();
  AnalysisConfig config{{}, &stages, &expectations, &gpus};
  return diff_captures(importers::import_report(data_path(a)),
                       importers::import_report(data_path(b)), options, config);
}

CaptureDiff diff_of(const std::string& a, const std::string& b, DiffOptions options = {}) {
  return diff_files("h200/diff_suite_basic_" + a + ".ncu-rep.zst",
                    "h200/diff_suite_basic_" + b + ".ncu-rep.zst", options);
}

TEST(CaptureDiff, TwoCapturesOfTheSameKernelsShowNoRegression) {
  CaptureDiff diff = diff_of("base_a", "base_b");
  ASSERT_EQ(diff.kernels.size(), 10u);
  EXPECT_EQ(diff.in_both, 10u);
  EXPECT_EQ(diff.regressions, 0u);
  EXPECT_EQ(diff.improvements, 0u);
  for (const KernelDiff& k : diff.kernels) {
    EXPECT_EQ(k.baseline_launches, 3u);
    EXPECT_EQ(k.candidate_launches, 3u);
    ASSERT_TRUE(k.noise_pct.has_value());  // measured from the repeated launches
    EXPECT_LT(*k.noise_pct, 2.0) << k.name;
  }
}

TEST(CaptureDiff, TheKernelMadeSlowerOnPurposeIsTheOnlyRegression) {
  CaptureDiff diff = diff_of("base_a", "slow_fp32");
  EXPECT_EQ(diff.regressions, 1u);
  const KernelDiff& first = diff.kernels.front();
  EXPECT_EQ(first.name, "k_fp32_fma");
  EXPECT_EQ(first.change, Change::kRegression);
  EXPECT_NEAR(*first.change_pct, 100.0, 2.0);  // twice the loop, twice the time
  // Seen the other way round, it is an improvement.
  CaptureDiff reverse = diff_of("slow_fp32", "base_a");
  EXPECT_EQ(reverse.regressions, 0u);
  EXPECT_EQ(reverse.improvements, 1u);
  EXPECT_NEAR(*reverse.kernels.front().change_pct, -50.0, 1.0);
}

TEST(CaptureDiff, NoiseRaisesTheBar) {
  // With a 0% threshold, only changes beyond twice each kernel's own noise count.
  CaptureDiff diff = diff_of("base_a", "base_b", {0.0, 2.0});
  for (const KernelDiff& k : diff.kernels) {
    EXPECT_GE(k.threshold_pct, 2.0 * k.noise_pct.value_or(0) - 1e-12);
    if (k.change == Change::kRegression) {
      EXPECT_GT(*k.change_pct, k.threshold_pct);
    }
  }
}

// The bottleneck suite against a vLLM step: every kernel is only on one side, nothing compared.
TEST(CaptureDiff, UnrelatedCapturesHaveNothingInBoth) {
  CaptureDiff diff =
      diff_files("h200/diff_suite_basic_base_a.ncu-rep.zst", "h200/big_min.ncu-rep.zst");
  EXPECT_EQ(diff.in_both, 0u);
  EXPECT_EQ(diff.kernels.size(), 20u);  // 10 suite kernels, 10 launch configurations of big_min
  for (const KernelDiff& k : diff.kernels) {
    EXPECT_TRUE(k.change == Change::kOnlyInBaseline || k.change == Change::kOnlyInCandidate);
  }
}

// A report and ncu's CSV export of it name kernels differently (function name against ncu's
// demangled base): they are still the same ten kernels.
TEST(CaptureDiff, AReportAndItsCsvExportHoldTheSameKernels) {
  CaptureDiff diff = diff_files("h200/bottleneck_suite_full.ncu-rep.zst",
                                "h200/bottleneck_suite_full_raw.csv.zst");
  EXPECT_EQ(diff.kernels.size(), 10u);
  EXPECT_EQ(diff.in_both, 10u);
  EXPECT_EQ(diff.regressions, 0u);
  EXPECT_EQ(diff.improvements, 0u);
}

// Two instantiations of one template (at::native::elementwise_kernel for SiLU and for Mul) share
// function name, grid and block in decode_eager_full; their mangled names tell them apart.
TEST(CaptureDiff, InstantiationsOfOneTemplateAreDifferentKernels) {
  model::Report report = importers::import_report(data_path("h200/decode_eager_full.ncu-rep.zst"));
  std::set<std::tuple<std::string, std::string, std::string>> groups;
  for (const model::Kernel& k : report.kernels) {
    groups.insert({k.mangled_name, k.grid.to_string(), k.block.to_string()});
  }
  CaptureDiff diff =
      diff_files("h200/decode_eager_full.ncu-rep.zst", "h200/decode_eager_full.ncu-rep.zst");
  EXPECT_EQ(diff.kernels.size(), groups.size());
  EXPECT_EQ(diff.in_both, groups.size());
}

}  // namespace
}  // namespace kprof::analysis
