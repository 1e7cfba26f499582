#include "analysis/kernel_summary.h"

#include <gtest/gtest.h>

#include "common/text.h"
#include "importers/importer.h"
#include "support/csv_text.h"
#include "support/test_data.h"

namespace kprof::analysis {
namespace {

// Expected numbers are ncu's own: the details page of the same capture (2 decimals).
TEST(KernelSummary, MatchesNcuDetailsPageForThePrefillGemm) {
  model::Report report = importers::import_report(testing::data_path("h200/big_full.ncu-rep.zst"));
  const model::Kernel& gemm = report.kernels.at(22);
  ASSERT_EQ(gemm.function_name, "nvjet_sm90_tst_256x128_64x4_1x2_h_bz_coopA_NNT");
  std::map<std::string, double> printed;
  for (const auto& record : testing::read_csv("h200/big_full_details.csv.zst")) {
    if (record.fields.at(0) == "22" && record.fields.size() >= 15 && !record.fields[12].empty()) {
      auto value = parse_ncu_number(record.fields[14]);
      if (value) printed[record.fields[11] + "/" + record.fields[12]] = *value;
    }
  }
  KernelSummary s = summarize(report, gemm);
  EXPECT_TRUE(s.missing.empty());
  EXPECT_NEAR(*s.duration_ns / 1e3, printed.at("GPU Speed Of Light Throughput/Duration"), 0.005);
  EXPECT_NEAR(*s.sm_throughput_pct,
              printed.at("GPU Speed Of Light Throughput/Compute (SM) Throughput"), 0.005);
  EXPECT_NEAR(*s.memory_throughput_pct,
              printed.at("GPU Speed Of Light Throughput/Memory Throughput"), 0.005);
  EXPECT_NEAR(*s.dram_throughput_pct, printed.at("GPU Speed Of Light Throughput/DRAM Throughput"),
              0.005);
  EXPECT_NEAR(*s.achieved_occupancy_pct, printed.at("Occupancy/Achieved Occupancy"), 0.005);
  EXPECT_NEAR(*s.theoretical_occupancy_pct, printed.at("Occupancy/Theoretical Occupancy"), 0.005);
  EXPECT_EQ(*s.registers_per_thread, printed.at("Launch Statistics/Registers Per Thread"));
}

TEST(KernelSummary, UncollectedMetricsAreMissingNotZero) {
  model::Report report;
  model::Kernel kernel;
  model::Metric duration;
  duration.name = "gpu__time_duration.sum";
  duration.value = model::MetricValue::of_double(1000);
  kernel.metrics.push_back(duration);
  KernelSummary s = summarize(report, kernel);
  EXPECT_EQ(s.duration_ns, 1000);
  EXPECT_FALSE(s.sm_throughput_pct.has_value());
  EXPECT_EQ(s.missing.size(), 6u);
}

}  // namespace
}  // namespace kprof::analysis
