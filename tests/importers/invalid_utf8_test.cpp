// Names that are not UTF-8 (a program may name kernels and ranges with any bytes; ncu, nsys and
// the PyTorch profiler store them as they are): every importer hands over valid UTF-8, the bad
// bytes replaced by U+FFFD, so that every JSON output can print them.
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "common/error.h"
#include "common/file_bytes.h"
#include "common/utf8.h"
#include "importers/chrome_trace/chrome_trace_reader.h"
#include "importers/common/read_trace.h"
#include "importers/importer.h"
#include "importers/nsys_sqlite/nsys_sqlite_reader.h"
#include "render/report_json.h"
#include "support/test_data.h"
#include "timeline/kernel_ranking.h"

namespace kprof::importers {
namespace {

using testing::data_path;

const std::string kFffd = "\xEF\xBF\xBD";

std::string replace_all(std::string text, const std::string& from, const std::string& to) {
  for (size_t at = text.find(from); at != std::string::npos; at = text.find(from, at + to.size())) {
    text.replace(at, from.size(), to);
  }
  return text;
}

// Every string the JSON of the whole report holds is valid UTF-8: dump() without a lenient
// error handler throws otherwise.
void expect_report_json_dumps(const model::Report& report) {
  std::vector<size_t> all(report.kernels.size());
  for (size_t i = 0; i < all.size(); ++i) all[i] = i;
  render::JsonOptions options;
  options.include_instances = true;
  std::string text;
  EXPECT_NO_THROW(text = render::report_json(report, all, options).dump());
  EXPECT_TRUE(is_valid_utf8(text));
}

TEST(InvalidUtf8, NcuRepNamesAreRepaired) {
  // Same-length replacement keeps every protobuf length prefix right.
  std::string bytes = read_input_file(data_path("h200/multi_process_basic.ncu-rep.zst")).bytes;
  bytes = replace_all(bytes, "k_second_process",
                      "k_s\xFF"
                      "cond_process");
  model::Report report = import_bytes("names.ncu-rep", bytes);
  bool found = false;
  for (const model::Kernel& kernel : report.kernels) {
    EXPECT_TRUE(is_valid_utf8(kernel.function_name)) << kernel.function_name;
    EXPECT_TRUE(is_valid_utf8(kernel.mangled_name));
    if (kernel.function_name == "k_s" + kFffd + "cond_process") found = true;
  }
  EXPECT_TRUE(found);
  expect_report_json_dumps(report);
}

TEST(InvalidUtf8, NcuCsvNamesUnitsAndValuesAreRepaired) {
  std::string bytes = read_input_file(data_path("h200/multi_process_basic_raw.csv")).bytes;
  bytes =
      replace_all(bytes, "k_second_process", "k_s\xC3(cond_process");  // C3 needs a continuation
  bytes = replace_all(bytes, "NVIDIA H200", "NVIDIA H\xE2\x82");       // a cut 3-byte sequence
  model::Report report = import_bytes("names.csv", bytes);
  ASSERT_EQ(report.kernels.size(), 2u);
  EXPECT_EQ(report.kernels[0].demangled_name, "k_s" + kFffd + "(cond_process(float *)");
  EXPECT_EQ(report.devices.at(0).name, "NVIDIA H" + kFffd);
  const model::Metric* display = report.kernels[0].find("device__attribute_display_name");
  ASSERT_NE(display, nullptr);
  EXPECT_EQ(display->value.text(), "NVIDIA H" + kFffd);
  expect_report_json_dumps(report);

  std::string details = read_input_file(data_path("h200/multi_process_basic_details.csv")).bytes;
  details =
      replace_all(details, "GPU Speed Of Light Throughput", "GPU Speed Of Light \xFFhroughput");
  model::Report from_details = import_bytes("details.csv", details);
  // The damaged section's labels map to no metric name: they are named "section: label", so
  // the replacement shows in their names.
  size_t named_by_section = 0;
  for (const model::Kernel& kernel : from_details.kernels) {
    for (const model::Metric& metric : kernel.metrics) {
      EXPECT_TRUE(is_valid_utf8(metric.name)) << metric.name;
      EXPECT_TRUE(is_valid_utf8(metric.unit));
      named_by_section +=
          metric.name.str().rfind("GPU Speed Of Light " + kFffd + "hroughput: ", 0) == 0;
    }
  }
  EXPECT_GT(named_by_section, 0u);
  expect_report_json_dumps(from_details);
}

class NameCollector final : public TraceEventSink {
 public:
  void on_event(const TraceEvent& event) override { names.emplace_back(event.name); }
  bool wants_category(std::string_view category) const override { return category == "kernel"; }
  std::vector<std::string> names;
};

TEST(InvalidUtf8, ChromeTraceNamesAreRepairedNotRefused) {
  // Raw bytes as a C++ profiler writes them, and lone surrogates as Python's json module writes
  // names it decoded with surrogateescape; a valid pair stays the character it encodes.
  std::string trace =
      "{\"traceEvents\": ["
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"k\xFF\xFEx\", \"ts\": 1, \"dur\": 2},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"lo\\udc80ne\", \"ts\": 3, \"dur\": 2},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"hi\\ud800\\\\ud800\", \"ts\": 5, \"dur\": "
      "1},"
      "{\"ph\": \"X\", \"cat\": \"kernel\", \"name\": \"pair\\ud83d\\ude00\", \"ts\": 7, \"dur\": "
      "1}"
      "]}";
  NameCollector sink;
  TraceReadStats stats = read_chrome_trace_bytes("names.json", trace, sink);
  EXPECT_EQ(stats.events, 4u);
  ASSERT_EQ(sink.names.size(), 4u);
  EXPECT_EQ(sink.names[0], "k" + kFffd + kFffd + "x");
  EXPECT_EQ(sink.names[1], "lo" + kFffd + "ne");
  EXPECT_EQ(sink.names[2], "hi" + kFffd + "\\ud800");  // an escaped backslash is no escape
  EXPECT_EQ(sink.names[3], "pair\xF0\x9F\x98\x80");
  // Still refused: JSON that is broken for another reason.
  EXPECT_THROW(
      read_chrome_trace_bytes(
          "bad.json", "[{\"ph\": \"X\", \"name\": \"a\\q\xFF\", \"cat\": \"kernel\"}]", sink),
      InputError);
}

TEST(InvalidUtf8, NsysSqliteNamesAreRepaired) {
  std::string path = ::testing::TempDir() + "/names.sqlite";
  std::filesystem::copy_file(data_path("h200/nsys_decode_steps.sqlite"), path,
                             std::filesystem::copy_options::overwrite_existing);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  // Every kernel's names (demangled and mangled) get a byte that is never UTF-8 in front.
  char* error = nullptr;
  ASSERT_EQ(sqlite3_exec(db,
                         "UPDATE StringIds SET value = CAST(X'FF' || CAST(value AS BLOB) AS TEXT) "
                         "WHERE id IN (SELECT demangledName FROM CUPTI_ACTIVITY_KIND_KERNEL) "
                         "OR id IN (SELECT mangledName FROM CUPTI_ACTIVITY_KIND_KERNEL) "
                         "OR id IN (SELECT textId FROM NVTX_EVENTS)",
                         nullptr, nullptr, &error),
            SQLITE_OK)
      << (error ? error : "");
  sqlite3_close(db);
  analysis::StageTable stages = analysis::load_stage_table();
  timeline::RankingBuilder ranking(stages, false);
  read_trace(path, ranking);
  timeline::Ranking result = ranking.finish();
  ASSERT_FALSE(result.kernels.empty());
  for (const auto& kernel : result.kernels) {
    EXPECT_TRUE(is_valid_utf8(kernel.name)) << kernel.name;
    if (kernel.kind == std::string("kernel")) {
      EXPECT_EQ(kernel.name.rfind(kFffd, 0), 0u);
    }
  }
}

}  // namespace
}  // namespace kprof::importers
