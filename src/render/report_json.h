// JSON for automation: the report model inside a versioned envelope ("kprof.report/1").
// Field names are stable; a breaking change bumps the schema version.
#pragma once

#include <functional>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "model/report.h"
#include "render/json_writer.h"

namespace kprof::render {

struct JsonOptions {
  // Metrics to include per kernel; all when unset.
  std::function<bool(const std::string&)> include_metric;
  bool include_instances = false;
  bool include_device_attributes = true;
};

nlohmann::json value_json(const model::MetricValue& value);
nlohmann::json optional_json(const std::optional<double>& value);  // null when absent or NaN
nlohmann::json rules_json(const model::Kernel& kernel);            // ncu's rule findings
// What the reader said of the file (Report::reading_note, Report::format_note): an array of
// lines, empty when the file was read whole in a format version kprof knows.
nlohmann::json reading_notes_json(const model::Report& report);
nlohmann::json kernel_json(const model::Report& report, const model::Kernel& kernel,
                           const JsonOptions& options);
nlohmann::json report_json(const model::Report& report, const std::vector<size_t>& kernels,
                           const JsonOptions& options);
nlohmann::json envelope(const std::vector<std::string>& argv);  // schema + tool

// report_json, streamed: the same bytes without building the document (a --set full kernel has
// ~2,200 metrics, each with its instances under --instances).
void write_report(JsonWriter& writer, const model::Report& report,
                  const std::vector<size_t>& kernels, const JsonOptions& options);
// The inspect --json document: json_text of envelope(argv) with "reports" holding report_json
// of each report and its selected kernels, byte for byte, streamed.
std::string report_document_text(const std::vector<std::string>& argv,
                                 const std::vector<model::Report>& reports,
                                 const std::vector<std::vector<size_t>>& kernels,
                                 const JsonOptions& options);

// A document as kprof prints it (indent 1, final newline). Importers hand over valid UTF-8; a
// string from elsewhere that is not (argv, a file name) gets U+FFFD rather than failing the
// whole output.
std::string json_text(const nlohmann::json& document);

}  // namespace kprof::render
