// The streamed inspect --json document must be the DOM's bytes exactly: nlohmann's key order,
// indentation, number formatting and escaping. Held to nlohmann's own dump of report_json on
// every real report in data/h200 and on a model built to reach the corners (escapes, bad UTF-8,
// NaN, duplicate and unsorted names, empty containers).
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <limits>

#include "importers/importer.h"
#include "render/report_json.h"
#include "support/test_data.h"

namespace kprof::render {
namespace {

std::string dom_document_text(const std::vector<std::string>& argv,
                              const std::vector<model::Report>& reports,
                              const std::vector<std::vector<size_t>>& kernels,
                              const JsonOptions& options) {
  nlohmann::json document = envelope(argv);
  document["reports"] = nlohmann::json::array();
  for (size_t r = 0; r < reports.size(); ++r) {
    document["reports"].push_back(report_json(reports[r], kernels[r], options));
  }
  return json_text(document);
}

std::vector<size_t> all_kernels(const model::Report& report) {
  std::vector<size_t> indices(report.kernels.size());
  for (size_t i = 0; i < indices.size(); ++i) indices[i] = i;
  return indices;
}

// Where the texts first differ, for a readable failure on multi-megabyte documents.
std::string first_difference(const std::string& expected, const std::string& actual) {
  size_t at = 0;
  while (at < expected.size() && at < actual.size() && expected[at] == actual[at]) ++at;
  if (at == expected.size() && at == actual.size()) return "";
  size_t from = at < 80 ? 0 : at - 80;
  return "byte " + std::to_string(at) + "\nDOM:      " + expected.substr(from, 160) +
         "\nstreamed: " + actual.substr(from, 160);
}

void expect_same_text(const std::vector<std::string>& argv,
                      const std::vector<model::Report>& reports,
                      const std::vector<std::vector<size_t>>& kernels, const JsonOptions& options) {
  std::string dom = dom_document_text(argv, reports, kernels, options);
  std::string streamed = report_document_text(argv, reports, kernels, options);
  EXPECT_EQ(first_difference(dom, streamed), "");
  EXPECT_EQ(dom.size(), streamed.size());
}

std::vector<std::string> real_reports() {
  std::vector<std::string> paths;
  for (const auto& entry : std::filesystem::directory_iterator(testing::data_path("h200"))) {
    std::string name = entry.path().filename().string();
    bool report = name.find(".ncu-rep") != std::string::npos ||
                  ((name.ends_with(".csv") || name.ends_with(".csv.zst")) &&
                   !name.starts_with("kernel_names_"));
    if (report) paths.push_back(entry.path().string());
  }
  std::sort(paths.begin(), paths.end());
  return paths;
}

TEST(ReportJsonStream, EveryRealReportMatchesTheDomWithAndWithoutInstances) {
  std::vector<std::string> paths = real_reports();
  ASSERT_GE(paths.size(), 18u);  // the .ncu-rep files and CSV exports of data/h200
  importers::ImportOptions import;
  import.instances = true;
  size_t with_instances = 0;
  for (const std::string& path : testing::sanitizer_sample(paths)) {
    SCOPED_TRACE(path);
    std::vector<model::Report> reports{importers::import_report(path, import)};
    std::vector<std::vector<size_t>> kernels{all_kernels(reports[0])};
    for (const auto& kernel : reports[0].kernels) {
      for (const auto& metric : kernel.metrics) with_instances += !metric.instances.empty();
    }
    JsonOptions options;
    expect_same_text({"kprof", "inspect", "--json", path}, reports, kernels, options);
    options.include_instances = true;
    expect_same_text({"kprof", "inspect", "--json", "--instances", path}, reports, kernels,
                     options);
    options.include_metric = [](const std::string& name) {
      return name.find("dram") != std::string::npos;
    };
    expect_same_text({"kprof", "inspect", "-m", "dram", path}, reports, kernels, options);
  }
  EXPECT_GT(with_instances, 1000u);  // --instances had something to write
}

TEST(ReportJsonStream, SeveralReportsAndSelectionsMatchTheDom) {
  std::vector<model::Report> reports;
  reports.push_back(importers::import_report(testing::data_path("h200/big_min.ncu-rep.zst")));
  reports.push_back(importers::import_report(testing::data_path("h200/big_min_raw.csv")));
  reports.push_back(
      importers::import_report(testing::data_path("h200/two_kernels_full.ncu-rep.zst")));
  ASSERT_GE(reports[0].kernels.size(), 3u);
  ASSERT_GE(reports[2].kernels.size(), 1u);
  std::vector<std::vector<size_t>> kernels{{2, 0}, {}, {0}};
  expect_same_text({"kprof"}, reports, kernels, {});
  expect_same_text({"kprof"}, {}, {}, {});  // no report: "reports": []
}

model::Metric metric(std::string name, model::MetricValue value, std::string unit = "") {
  model::Metric m;
  m.name = std::move(name);
  m.value = std::move(value);
  m.unit = std::move(unit);
  return m;
}

TEST(ReportJsonStream, EscapesNumbersAndOddModelsMatchTheDom) {
  model::Report report;
  report.path = "dir/\"quoted\"\\ \x7f \xc3\xa9 \xe2\x80\xae.ncu-rep";
  report.session.versions = {{"z", "1"}, {"a", "2"}, {"z", "3"}};  // unsorted, repeated
  report.session.command_line = std::string("ncu\t--set\nfull\r\b\f\x01\x1f", 19);
  report.session.comments = "bad \xff\xfe utf-8";
  report.devices.emplace_back();
  report.devices[0].name = "NVIDIA H200";
  model::Kernel kernel;
  kernel.function_name = "k<\"T\">\\";
  const double nan = std::numeric_limits<double>::quiet_NaN();
  const double inf = std::numeric_limits<double>::infinity();
  for (double v : {0.0, -0.0, 1.0, -1.5, 0.1, 1e-5, 1e15, 1e16, 1e17, 1.7976931348623157e308,
                   4.9e-324, 123456789.125, nan, inf, -inf}) {
    kernel.metrics.push_back(metric("d" + std::to_string(kernel.metrics.size() + 10),
                                    model::MetricValue::of_double(v), "ns"));
  }
  kernel.metrics.push_back(metric("u", model::MetricValue::of_uint(UINT64_MAX)));
  kernel.metrics.push_back(
      metric("s", model::MetricValue::of_string(
                      "a\"b\\c/\n\r\t\b\f\x02\x1b\x1f\x7f \xc3\xa9 \xf0\x9f\x98\x80")));
  kernel.metrics.push_back(metric("s\x1b[1m\"\\", model::MetricValue::of_uint(5), "\x0b\x0e\\"));
  kernel.metrics.push_back(metric("bad \xc3", model::MetricValue::of_string("\xed\xa0\x80")));
  // Unsorted and repeated names, as a hand-built model may have them: nlohmann keeps the last.
  kernel.metrics.push_back(metric("b", model::MetricValue::of_uint(1), "byte"));
  kernel.metrics.push_back(metric("a", model::MetricValue::of_uint(2)));
  kernel.metrics.push_back(metric("b", model::MetricValue::of_uint(3)));
  kernel.metrics.back().instances.push_back(
      {model::MetricValue::of_uint(7), model::MetricValue::of_double(0.5)});
  kernel.metrics.push_back(metric("\xc3\xa9", model::MetricValue::of_uint(4)));  // sorts last
  report.kernels.push_back(kernel);
  report.kernels.emplace_back();  // no metrics, no name
  std::vector<std::vector<size_t>> kernels{{0, 1}};
  std::vector<std::string> argv{"kprof", "inspect", "\xff argv \x80", "\x1b[31m"};
  JsonOptions options;
  expect_same_text(argv, {report}, kernels, options);
  options.include_instances = true;
  expect_same_text(argv, {report}, kernels, options);
  options.include_device_attributes = false;
  options.include_metric = [](const std::string& name) { return name != "b"; };
  expect_same_text(argv, {report}, kernels, options);
}

}  // namespace
}  // namespace kprof::render
