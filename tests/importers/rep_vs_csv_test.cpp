// Cross-checks on real captures: the .ncu-rep reader against ncu's own CSV exports of the same
// report, value by value, to the precision ncu printed; and the CSV importers against both.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "analysis/stages.h"
#include "common/file_bytes.h"
#include "common/text.h"
#include "importers/importer.h"
#include "model/kernel_names.h"
#include "support/crosscheck.h"
#include "support/csv_text.h"
#include "support/test_data.h"

namespace kprof::importers {
namespace {

using testing::data_path;

using testing::not_collected;
using testing::printed_tolerance;

double printed_unit_factor(const std::string& unit) {
  double factor = testing::printed_unit_factor(unit);
  EXPECT_NE(factor, 0) << "unit not covered: " << unit;
  return factor;
}

// Every metric present both in big_full.ncu-rep and in its raw CSV export agrees to the CSV's
// printed precision.
TEST(RepVsCsv, BigFullRawExportAgreesWithTheReportEverywhere) {
  model::Report report = import_report(data_path("h200/big_full.ncu-rep.zst"));
  auto csv = testing::read_csv("h200/big_full_raw.csv.zst");
  testing::Crosscheck result = testing::crosscheck_raw_csv(report, csv);
  EXPECT_EQ(result.kernels, 24u);
  EXPECT_TRUE(result.mismatches.empty()) << result.mismatches.front();
  EXPECT_TRUE(result.uncovered_units.empty());
  EXPECT_EQ(result.absent_from_report, 0u);
  // ncu prints a negative counter (sampling noise on an idle unit) as 0; the report keeps -2.
  EXPECT_EQ(result.clamped,
            std::vector<std::string>{
                "kernel 23 lts__t_sectors_srcunit_tex_aperture_device_op_red_lookup_miss.sum"});
  // 24 kernels x ~2,200 collected metrics: the check covers the whole export, not a sample.
  EXPECT_GT(result.compared, 49000u);
  for (size_t row = 2; row < csv.size(); ++row) {
    const auto& fields = csv[row].fields;
    const model::Kernel& kernel = report.kernels.at(std::stoul(fields.at(0)));
    EXPECT_EQ(fields.at(4),
              kernel.demangled_name.empty() ? kernel.function_name : kernel.demangled_name);
    EXPECT_EQ(fields.at(7), kernel.block.to_string());
    EXPECT_EQ(fields.at(8), kernel.grid.to_string());
  }
}

struct Comparison {
  size_t compared = 0;
  size_t mismatched = 0;
  std::string first_mismatch;
};

// The raw-page CSV importer yields the same model values as the report, to printed precision.
TEST(RepVsCsv, RawCsvImporterAgreesWithTheReport) {
  for (std::string stem : {"big_full", "multi_process_basic"}) {
    std::string csv_name =
        stem == "big_full" ? "h200/big_full_raw.csv.zst" : "h200/multi_process_basic_raw.csv";
    model::Report rep = import_report(data_path("h200/" + stem + ".ncu-rep.zst"));
    model::Report csv = import_report(data_path(csv_name));
    EXPECT_EQ(csv.format, model::SourceFormat::kNcuCsvRaw);
    ASSERT_EQ(csv.kernels.size(), rep.kernels.size());
    auto text = testing::read_csv(csv_name);
    const auto& header = text[0].fields;
    const auto& units = text[1].fields;
    Comparison result;
    for (size_t k = 0; k < csv.kernels.size(); ++k) {
      const model::Kernel& from_csv = csv.kernels[k];
      const model::Kernel& from_rep = rep.kernels[k];
      EXPECT_EQ(from_csv.id, from_rep.id);
      EXPECT_EQ(from_csv.process_id, from_rep.process_id);
      EXPECT_EQ(from_csv.grid, from_rep.grid);
      EXPECT_EQ(from_csv.block, from_rep.block);
      const auto& fields = text[2 + k].fields;
      for (size_t c = 11; c < header.size(); ++c) {
        if (not_collected(fields[c])) {
          EXPECT_EQ(from_csv.find(header[c]), nullptr) << header[c] << " is missing, not zero";
          continue;
        }
        const model::Metric* metric = from_csv.find(header[c]);
        ASSERT_NE(metric, nullptr) << header[c];
        const model::Metric* reference = rep.find(from_rep, header[c]);
        ASSERT_NE(reference, nullptr) << header[c];
        // The CSV model against the report value, within what the CSV's printing lost.
        ++result.compared;
        const model::MetricValue& a = metric->value;
        const model::MetricValue& b = reference->value;
        bool ok;
        if (a.is_number() && b.is_number()) {
          double x = *a.number(), y = *b.number();
          // ncu prints a negative counter as 0 (see the test above).
          ok = (std::isnan(x) && std::isnan(y)) || (y < 0 && x == 0) ||
               std::fabs(x - y) <= printed_tolerance(fields[c], printed_unit_factor(units[c])) +
                                       1e-12 * std::fabs(y);
        } else {
          ok = a == b;
        }
        if (!ok && result.mismatched++ == 0) {
          result.first_mismatch = stem + " kernel " + std::to_string(k) + " " + header[c] +
                                  ": csv " + a.to_string() + " vs report " + b.to_string();
        }
      }
    }
    EXPECT_EQ(result.mismatched, 0u) << result.first_mismatch;
    EXPECT_GT(result.compared, 0u);
  }
}

// The details page names header metrics by label; mapped to metric names, they agree with
// the report, and its rule rows are the report's rule findings.
TEST(RepVsCsv, DetailsPageAgreesWithTheReport) {
  model::Report rep = import_report(data_path("h200/big_full.ncu-rep.zst"));
  model::Report details = import_report(data_path("h200/big_full_details.csv.zst"));
  EXPECT_EQ(details.format, model::SourceFormat::kNcuCsvDetails);
  ASSERT_EQ(details.kernels.size(), rep.kernels.size());
  size_t mapped = 0, rules = 0;
  for (size_t k = 0; k < rep.kernels.size(); ++k) {
    const model::Kernel& d = details.kernels[k];
    const model::Kernel& r = rep.kernels[k];
    for (const model::Metric& metric : d.metrics) {
      if (metric.name.str().find("__") == std::string::npos) continue;  // unmapped label
      const model::Metric* reference = r.find(metric.name);
      ASSERT_NE(reference, nullptr) << metric.name;
      ++mapped;
      if (!reference->value.is_number()) {
        EXPECT_EQ(metric.value.text(), reference->value.text()) << metric.name;
        continue;
      }
      // The details page prints 2 decimals of the scaled value; allow one unit in the last
      // printed digit of a value as large as the reference.
      double value = *metric.value.number();
      double expected = *reference->value.number();
      EXPECT_LE(std::fabs(value - expected), 0.006 * std::max(1.0, std::fabs(expected)) + 0.006)
          << "kernel " << k << " " << metric.name;
    }
    // ncu prints rules in section order, the report stores them in rule order: compare as sets.
    auto key = [](const model::RuleFinding& f) {
      return std::make_tuple(f.section, f.rule, f.message, f.type, f.speedup_type);
    };
    std::vector<model::RuleFinding> printed = d.rules, stored = r.rules;
    auto by_key = [&](const model::RuleFinding& a, const model::RuleFinding& b) {
      return key(a) < key(b);
    };
    std::sort(printed.begin(), printed.end(), by_key);
    std::sort(stored.begin(), stored.end(), by_key);
    ASSERT_EQ(printed.size(), stored.size()) << "kernel " << k;
    for (size_t i = 0; i < printed.size(); ++i) {
      ++rules;
      EXPECT_EQ(key(printed[i]), key(stored[i])) << "kernel " << k << ": " << printed[i].message;
      ASSERT_EQ(printed[i].estimated_speedup.has_value(), stored[i].estimated_speedup.has_value());
      if (printed[i].estimated_speedup) {
        EXPECT_NEAR(*printed[i].estimated_speedup, *stored[i].estimated_speedup, 0.005);
      }
    }
  }
  EXPECT_GT(mapped, 24u * 60);  // the header metrics of every section of --set full
  EXPECT_GT(rules, 24u * 5);
}

TEST(RepVsCsv, MetricListCaptureReadsTheSameInAllThreeForms) {
  model::Report rep = import_report(data_path("h200/big_min.ncu-rep.zst"));
  model::Report raw = import_report(data_path("h200/big_min_raw.csv"));
  model::Report details = import_report(data_path("h200/big_min_details.csv.zst"));
  ASSERT_EQ(rep.kernels.size(), 24u);
  ASSERT_EQ(raw.kernels.size(), 24u);
  ASSERT_EQ(details.kernels.size(), 24u);
  for (size_t k = 0; k < 24; ++k) {
    // --metrics puts real metric names in the details page ("Command line profiler metrics").
    auto duration = rep.kernels[k].number("gpu__time_duration.sum");
    ASSERT_TRUE(duration.has_value());
    EXPECT_NEAR(*raw.kernels[k].number("gpu__time_duration.sum"), *duration, 0.5e-3 * 1e3);
    EXPECT_NEAR(*details.kernels[k].number("gpu__time_duration.sum"), *duration, 0.005 * 1e3);
  }
}

// ncu --import R --csv --page raw --print-kernel-base mangled prints each Kernel Name as the
// report's mangled name (data/h200/kernel_names_two_mangled.csv shows it for a C++ kernel). Here
// the suite's real raw export gets those names from its own report: the CSV importer demangles
// them, and its function names are ncu's own (the report's), its stages the report's.
TEST(RepVsCsv, MangledKernelNamesAreDemangled) {
  model::Report rep = import_report(data_path("h200/bottleneck_suite_full.ncu-rep.zst"));
  std::string csv = read_input_file(data_path("h200/bottleneck_suite_full_raw.csv.zst")).bytes;
  for (const model::Kernel& kernel : rep.kernels) {
    ASSERT_TRUE(model::is_mangled_name(kernel.mangled_name)) << kernel.mangled_name;
    std::string quoted = "\"" + kernel.demangled_name + "\"";
    size_t at = csv.find(quoted);
    ASSERT_NE(at, std::string::npos) << kernel.demangled_name;
    for (; at != std::string::npos; at = csv.find(quoted, at)) {
      csv.replace(at, quoted.size(), "\"" + kernel.mangled_name + "\"");
    }
  }
  model::Report mangled = import_bytes("mangled.csv", csv);
  ASSERT_EQ(mangled.kernels.size(), rep.kernels.size());
  analysis::StageTable stages = analysis::load_stage_table();
  for (size_t i = 0; i < rep.kernels.size(); ++i) {
    const model::Kernel& expected = rep.kernels[i];
    const model::Kernel& k = mangled.kernels[i];
    SCOPED_TRACE(expected.mangled_name);
    EXPECT_EQ(k.mangled_name, expected.mangled_name);
    EXPECT_EQ(k.function_name, expected.function_name);
    EXPECT_EQ(k.display_name(), expected.display_name());
    // libstdc++'s spelling ("float const*") where ncu's demangled base writes "const float *".
    EXPECT_EQ(k.demangled_name, model::demangle(expected.mangled_name).value());
    EXPECT_EQ(model::canonical_kernel_name(k), model::canonical_kernel_name(expected));
    EXPECT_EQ(stages.stage_of(k), stages.stage_of(expected));
  }
  EXPECT_EQ(mangled.kernels[0].demangled_name,
            "k_dram_stream(float4 const*, float4*, unsigned long)");
}

}  // namespace
}  // namespace kprof::importers
