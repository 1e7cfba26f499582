// kprof diff on three real --set basic captures of tools/bottleneck_suite (each kernel launched
// three times): two unchanged runs, and one run with SUITE_SLOW=k_fp32_fma, which doubles that
// kernel's loop — a regression of +100% by construction.
#include "analysis/capture_diff.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
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

// Σ over the kernel groups in both reports of median × baseline launches, summed from the raw
// gpu__time_duration.sum of each launch, grouped by mangled name, grid and block (the two
// reports' kernels all have mangled names), in µs.
std::pair<double, double> time_weighted_us(const std::string& a, const std::string& b) {
  using Group = std::tuple<std::string, std::string, std::string>;
  auto durations = [](const std::string& file) {
    std::map<Group, std::vector<double>> groups;
    for (const model::Kernel& k : importers::import_report(data_path(file)).kernels) {
      groups[{k.mangled_name, k.grid.to_string(), k.block.to_string()}].push_back(
          *k.number("gpu__time_duration.sum") / 1000);
    }
    return groups;
  };
  auto middle = [](std::vector<double> v) {
    std::sort(v.begin(), v.end());
    return v.size() % 2 ? v[v.size() / 2] : (v[v.size() / 2 - 1] + v[v.size() / 2]) / 2;
  };
  auto base = durations(a), cand = durations(b);
  double base_total = 0, cand_total = 0;
  for (const auto& [group, values] : base) {
    auto other = cand.find(group);
    if (other == cand.end()) continue;
    base_total += middle(values) * static_cast<double>(values.size());
    cand_total += middle(other->second) * static_cast<double>(values.size());
  }
  return {base_total, cand_total};
}

// big_basic and big_min hold the same eager step's kernels, captured with two metric sets: no
// change. Judged at 2%, nvjet_sm90_tst_256x16 — launched once on each side — moved +1.95 µs
// (+3.1%) and nvjet_sm90_tst_128x16_64x11_4x1 -0.77 µs (-2.6%), less than one launch moves
// between captures (up to 1.98 µs across big_full, big_basic, big_min). The first used to be a
// regression that failed the gate; with no noise estimate both are not enough samples to judge,
// and the time-weighted whole is unchanged.
TEST(CaptureDiff, ASingleLaunchUnderTheFloorIsNotEnoughSamplesNotARegression) {
  DiffOptions options;
  options.threshold_pct = 2;
  CaptureDiff diff = diff_files("h200/big_basic.ncu-rep.zst", "h200/big_min.ncu-rep.zst", options);
  EXPECT_EQ(diff.regressions, 0u);
  EXPECT_FALSE(diff.regressed());
  ASSERT_EQ(diff.not_enough_samples, 2u);
  EXPECT_EQ(diff.kernels[1].change, Change::kNotEnoughSamples);
  EXPECT_NEAR(*diff.kernels[1].change_pct, -2.6, 0.05);
  EXPECT_EQ(diff.overall.change, Change::kUnchanged);
  const KernelDiff& moved = diff.kernels.front();
  EXPECT_EQ(moved.change, Change::kNotEnoughSamples);
  EXPECT_EQ(moved.name.rfind("nvjet_sm90_tst_256x16_64x6_2x1", 0), 0u) << moved.name;
  EXPECT_EQ(moved.baseline_launches, 1u);
  EXPECT_NEAR(*moved.change_pct, 3.1, 0.05);
  ASSERT_TRUE(moved.floor_us);
  // The same kernel past a 1 µs floor is judged.
  options.single_sample_floor_us = 1;
  CaptureDiff strict =
      diff_files("h200/big_basic.ncu-rep.zst", "h200/big_min.ncu-rep.zst", options);
  EXPECT_EQ(strict.regressions, 1u);
  EXPECT_TRUE(strict.regressed());
}

TEST(CaptureDiff, TheTimeWeightedTotalIsTheMediansTimesBaselineLaunches) {
  for (auto [a, b] :
       {std::pair{"h200/big_basic.ncu-rep.zst", "h200/big_min.ncu-rep.zst"},
        {"h200/diff_suite_basic_base_a.ncu-rep.zst", "h200/diff_suite_basic_slow_fp32.ncu-rep.zst"},
        {"h200/diff_suite_basic_base_a.ncu-rep.zst", "h200/diff_suite_basic_base_b.ncu-rep.zst"}}) {
    SCOPED_TRACE(std::string(a) + " " + b);
    auto [base_us, cand_us] = time_weighted_us(a, b);
    CaptureDiff diff = diff_files(a, b);
    EXPECT_NEAR(diff.overall.baseline_us, base_us, 1e-6 * base_us);
    EXPECT_NEAR(diff.overall.candidate_us, cand_us, 1e-6 * cand_us);
    EXPECT_NEAR(*diff.overall.change_pct, (cand_us - base_us) / base_us * 100, 1e-6);
  }
  // The same kernels, unchanged: within ±1%.
  EXPECT_EQ(diff_files("h200/big_basic.ncu-rep.zst", "h200/big_min.ncu-rep.zst").overall.change,
            Change::kUnchanged);
  // k_fp32_fma doing twice the work is most of the suite's time: the whole regressed.
  CaptureDiff slow = diff_of("base_a", "slow_fp32");
  EXPECT_EQ(slow.overall.change, Change::kRegression);
  EXPECT_TRUE(slow.regressed());
}

// Launched once, but moved by milliseconds: a single sample past the floor is still judged. The
// selftest's k_* kernels do less work than the suite's of the same name (selftest_h200_full has
// smaller launches), four of them far less.
TEST(CaptureDiff, ASingleLaunchPastTheFloorIsJudged) {
  CaptureDiff diff =
      diff_files("h200/bottleneck_suite_full.ncu-rep.zst", "h200/selftest_h200_full.ncu-rep.zst");
  EXPECT_EQ(diff.improvements, 4u);
  EXPECT_EQ(diff.not_enough_samples, 0u);
  EXPECT_EQ(diff.overall.change, Change::kImprovement);
  EXPECT_FALSE(diff.regressed());
}

}  // namespace
}  // namespace kprof::analysis

namespace kprof::analysis {
namespace {

// A retune (ESMM-Research's 1D warptiling kernel went (16,16,1)/(128,1,1) → (8,8,1)/(256,1,1),
// 324.8 → 221.2 us): the slowed run of the suite with k_fp32_fma's grid changed in the
// candidate. Each side has that name in one configuration only, so it is matched by name and
// judged (+100%, the slowdown), with both configurations, not split into "only in baseline" and
// "only in candidate". Another name's configurations are left alone.
TEST(CaptureDiff, ARetunedKernelIsMatchedByNameWithBothLaunchConfigurations) {
  static const hardware::GpuDatabase gpus = hardware::load_gpu_database();
  static const StageTable stages = load_stage_table();
  static const ExpectationTable expectations = load_expectations();
  AnalysisConfig config{{}, &stages, &expectations, &gpus};
  model::Report base =
      importers::import_report(data_path("h200/diff_suite_basic_base_a.ncu-rep.zst"));
  model::Report slow =
      importers::import_report(data_path("h200/diff_suite_basic_slow_fp32.ncu-rep.zst"));
  model::Dim3 retuned_grid;
  for (model::Kernel& k : slow.kernels) {
    if (k.display_name().find("k_fp32_fma") != std::string::npos) {
      k.grid.x *= 2;
      retuned_grid = k.grid;
    }
  }
  CaptureDiff diff = diff_captures(base, slow, {}, config);
  EXPECT_EQ(diff.kernels.size(), 10u);
  EXPECT_EQ(diff.in_both, 10u);
  const KernelDiff* fma = nullptr;
  for (const KernelDiff& d : diff.kernels) {
    EXPECT_NE(d.change, Change::kOnlyInBaseline) << d.name;
    EXPECT_NE(d.change, Change::kOnlyInCandidate) << d.name;
    if (d.name.find("k_fp32_fma") != std::string::npos) fma = &d;
    if (d.name.find("k_fp32_fma") == std::string::npos) {
      EXPECT_FALSE(d.candidate_grid) << d.name;
    }
  }
  ASSERT_NE(fma, nullptr);
  EXPECT_EQ(fma->change, Change::kRegression);
  ASSERT_TRUE(fma->candidate_grid);
  EXPECT_EQ(*fma->candidate_grid, retuned_grid);
  EXPECT_NE(fma->grid, retuned_grid);
  EXPECT_GT(*fma->change_pct, 90);
}

}  // namespace
}  // namespace kprof::analysis
