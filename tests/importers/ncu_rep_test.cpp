// The native .ncu-rep reader on real H200 captures. Expected values come from sources other
// than our reader: ncu's own CSV exports of the same reports and ncu's console log.
#include <gtest/gtest.h>

#include <algorithm>

#include "importers/importer.h"
#include "support/csv_text.h"
#include "support/test_data.h"

namespace kprof::importers {
namespace {

using testing::data_path;

const model::Report& big_full() {
  static const model::Report report = import_report(data_path("h200/big_full.ncu-rep.zst"));
  return report;
}

TEST(NcuRep, BigFullSessionAndDevice) {
  const model::Report& report = big_full();
  EXPECT_EQ(report.format, model::SourceFormat::kNcuRep);
  EXPECT_EQ(report.format_version, 7u);
  ASSERT_EQ(report.kernels.size(), 24u);  // --launch-count 24
  EXPECT_EQ(report.session.ncu_version, "2025.3.1.0 (build 36398880) (public-release)");
  EXPECT_EQ(report.session.cuda_version, "13.0");
  EXPECT_EQ(report.session.command_line,
            "/opt/nvidia/nsight-compute/2025.3.1/target/linux-desktop-glibc_2_11_3-x64/ncu "
            "--set full --kernel-name regex:nvjet|flash|fmha|attention|cutlass|gemm|sm90 "
            "--launch-count 24 --clock-control none -f --export big_full python3 workload.py "
            "eager 2 ");
  EXPECT_EQ(report.session.settings.clock_control, "none");
  EXPECT_EQ(report.session.settings.launch_count, 24u);
  ASSERT_EQ(report.devices.size(), 1u);
  const model::Device& device = report.devices[0];
  EXPECT_EQ(device.name, "NVIDIA H200");
  EXPECT_EQ(device.compute_capability(), "9.0");
  EXPECT_EQ(device.number("device__attribute_multiprocessor_count"), 132);
  ASSERT_EQ(report.processes.size(), 1u);
  EXPECT_EQ(report.processes[0].name, "/usr/bin/python3.12");
  for (const model::Kernel& kernel : report.kernels) {
    EXPECT_EQ(kernel.process_id, report.processes[0].id);
    EXPECT_EQ(kernel.device_id, 0u);
    EXPECT_GT(kernel.metrics.size(), 2000u);  // --set full: ~2,240 metrics per kernel
  }
}

// ncu prints each name base on request (--print-kernel-base): those exports are the reference.
void expect_names_match_ncu(const model::Report& report, const std::string& stem) {
  auto function = testing::read_kernel_names("h200/kernel_names_" + stem + "_function.csv");
  auto demangled = testing::read_kernel_names("h200/kernel_names_" + stem + "_demangled.csv");
  auto mangled = testing::read_kernel_names("h200/kernel_names_" + stem + "_mangled.csv");
  ASSERT_EQ(function.size(), report.kernels.size());
  for (const model::Kernel& kernel : report.kernels) {
    EXPECT_EQ(kernel.function_name, function.at(kernel.id));
    EXPECT_EQ(kernel.mangled_name, mangled.at(kernel.id));
    // ncu stores no demangled name for extern "C" kernels and prints the function name then.
    const std::string& shown =
        kernel.demangled_name.empty() ? kernel.function_name : kernel.demangled_name;
    EXPECT_EQ(shown, demangled.at(kernel.id));
  }
}

TEST(NcuRep, KernelNamesAreExactlyWhatNcuStored) {
  expect_names_match_ncu(big_full(), "big_full");
  model::Report two = import_report(data_path("h200/two_kernels_full.ncu-rep.zst"));
  ASSERT_EQ(two.kernels.size(), 1u);
  EXPECT_EQ(two.kernels[0].mangled_name, "_Z13k_stream_copyPK6float4PS_m");
  expect_names_match_ncu(two, "two");
}

TEST(NcuRep, LaunchConfigurationMatchesLaunchMetrics) {
  for (const model::Kernel& kernel : big_full().kernels) {
    EXPECT_EQ(kernel.grid.x * kernel.grid.y * kernel.grid.z, kernel.number("launch__grid_size"));
    EXPECT_EQ(kernel.block.x * kernel.block.y * kernel.block.z,
              kernel.number("launch__block_size"));
  }
}

TEST(NcuRep, InstancedMetricsKeepTheirInstances) {
  model::Report report = import_report(data_path("h200/big_min.ncu-rep.zst"));
  const model::Metric* per_register =
      report.kernels.at(0).find("launch__occupancy_per_register_count");
  ASSERT_NE(per_register, nullptr);
  EXPECT_EQ(per_register->instances.size(), 257u);  // one per register count 0..256
  EXPECT_EQ(per_register->instances.front().correlation_id.number(), 0);
  EXPECT_EQ(per_register->instances.back().correlation_id.number(), 256);
}

TEST(NcuRep, RuleResultsCarryTypeAndEstimatedSpeedup) {
  const model::Kernel& kernel = big_full().kernels.at(0);
  auto sol = std::find_if(kernel.rules.begin(), kernel.rules.end(),
                          [](const model::RuleFinding& r) { return r.rule == "SOLBottleneck"; });
  ASSERT_NE(sol, kernel.rules.end());
  EXPECT_EQ(sol->type, model::RuleType::kOptimization);
  EXPECT_EQ(sol->section, "SpeedOfLight");
  EXPECT_EQ(sol->message.rfind("Memory is more heavily utilized than Compute", 0), 0u);
}

// Recorded for kprof: `ncu --target-processes all --set basic -- bash -c "./m a; ./m b"`.
// ncu's log (multi_process_basic.ncu.log) says k_first_process ran in pid 518 and
// k_second_process in pid 516; its CSV export numbers pid 516's kernel ID 0.
TEST(NcuRep, ReportsFromSeveralProcesses) {
  model::Report report = import_report(data_path("h200/multi_process_basic.ncu-rep.zst"));
  ASSERT_EQ(report.kernels.size(), 2u);
  ASSERT_EQ(report.processes.size(), 2u);
  auto csv = testing::read_csv("h200/multi_process_basic_raw.csv");
  ASSERT_EQ(csv.size(), 4u);  // header, units, two kernels
  for (const model::Kernel& kernel : report.kernels) {
    if (kernel.function_name == "k_first_process") {
      EXPECT_EQ(kernel.process_id, 518u);
    } else {
      EXPECT_EQ(kernel.function_name, "k_second_process");
      EXPECT_EQ(kernel.process_id, 516u);
    }
    const auto& row = csv.at(2 + kernel.id).fields;
    EXPECT_EQ(row.at(0), std::to_string(kernel.id));
    EXPECT_EQ(row.at(1), std::to_string(kernel.process_id));
    EXPECT_EQ(row.at(4), kernel.demangled_name);
  }
}

// A --set full kernel has ~2,200 metrics and every kernel the same names: each name's text is
// stored once per report (issue 17: a copy per metric was ~60 MB of a 1 GB report's model).
void expect_names_shared(const model::Report& report) {
  ASSERT_GE(report.kernels.size(), 2u);
  const model::Kernel& first = report.kernels.front();
  const model::Kernel& last = report.kernels.back();
  size_t shared = 0;
  for (const model::Metric& metric : first.metrics) {
    const model::Metric* other = last.find(metric.name);
    if (other == nullptr) continue;
    EXPECT_EQ(&other->name.str(), &metric.name.str()) << metric.name;
    ++shared;
  }
  EXPECT_GT(shared, 50u);  // the details page lists 86 per kernel
}

TEST(NcuRep, MetricNamesAreStoredOncePerReport) {
  model::Report rep = import_report(testing::data_path("h200/big_full.ncu-rep.zst"));
  expect_names_shared(rep);
  expect_names_shared(import_report(testing::data_path("h200/big_full_raw.csv.zst")));
  expect_names_shared(import_report(testing::data_path("h200/big_full_details.csv.zst")));
  // A kernel taken out of its report keeps its names.
  model::Kernel kernel = rep.kernels[3];
  std::string first_name = kernel.metrics.front().name;
  rep = model::Report{};
  EXPECT_EQ(kernel.metrics.front().name, first_name);
  EXPECT_TRUE(kernel.number("gpu__time_duration.sum").has_value());
}

}  // namespace
}  // namespace kprof::importers
