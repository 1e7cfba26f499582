#include "importers/ncu_csv/ncu_csv_importer.h"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <optional>

#include "common/error.h"
#include "common/text.h"
#include "importers/ncu_csv/csv_records.h"
#include "importers/ncu_csv/section_labels.h"
#include "importers/ncu_csv/units.h"
#include "model/kernel_names.h"

namespace kprof::importers {
namespace {

// The identity columns ncu puts before the metrics; older versions omit some, so columns are
// found by name and only ID and Kernel Name are required.
constexpr std::string_view kIdentityColumns[] = {
    "ID",     "Process ID", "Process Name", "Host Name", "Kernel Name", "Context",
    "Stream", "Block Size", "Grid Size",    "Device",    "CC"};
constexpr std::string_view kDevicePrefix = "device__attribute_";

bool is_identity_column(std::string_view name) {
  return std::find(std::begin(kIdentityColumns), std::end(kIdentityColumns), name) !=
         std::end(kIdentityColumns);
}

// --- where ncu's table is in what was captured ---
//
// `ncu --csv ./app > out.csv` captures more than the CSV: an NGC container's licence banner
// (which starts with an empty line), the program's own output, ncu's "==PROF== Connected",
// "==PROF== Profiling …" and "==WARNING==" lines before the table, and "==PROF== Disconnected"
// or the program's output after it. The table is found by its header and read from there; what
// is skipped is counted for the report's reading note.

bool starts_with_id_column(std::string_view line) {
  return line.substr(0, 5) == "\"ID\"," || line.substr(0, 3) == "ID,";
}

std::string_view line_at(std::string_view text, size_t offset) {
  size_t end = text.find('\n', offset);
  std::string_view line =
      text.substr(offset, end == std::string_view::npos ? text.npos : end - offset);
  if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
  return line;
}

bool has_column(const std::vector<std::string>& fields, std::string_view name) {
  return std::find(fields.begin(), fields.end(), name) != fields.end();
}

struct HeaderLine {
  size_t offset = 0;  // where the header line starts
  size_t line = 1;    // its number in the file
};

// The header is the first line that is one ncu writes: the quoted "ID" first (ncu --csv quotes
// every field), "Kernel Name" among its columns, and then either the details page's "Section
// Name", "Metric Name", "Metric Unit" and "Metric Value" or, on the raw page, the units row right
// after it (quoted, empty under "ID"). Program output that merely starts with "ID", is no header.
// Where no line is, the first line that is neither blank nor ncu's own ("==…") is the header if it
// starts with the "ID" column, as before (an unquoted or partial export: what it lacks, the page's
// reader names, at its line).
//
// `whole` is false for the first bytes of a compressed or piped input, which may end inside the
// header line or before the units row: such a header is accepted there and checked whole by
// parse().
std::optional<HeaderLine> find_header(std::string_view text, bool whole) {
  std::optional<HeaderLine> first_with_id;
  bool first = true;
  size_t line_number = 1;
  for (size_t i = 0; i < text.size();) {
    size_t end = text.find('\n', i);
    std::string_view line = line_at(text, i);
    if (!trim(line).empty() && line.substr(0, 2) != "==") {
      if (first && starts_with_id_column(line)) first_with_id = HeaderLine{i, line_number};
      first = false;
      if (line.substr(0, 5) == "\"ID\",") {
        if (end == std::string_view::npos && !whole) return HeaderLine{i, line_number};
        std::optional<std::vector<std::string>> fields;
        try {
          std::vector<CsvRecord> records = parse_csv_records("", line);
          if (records.size() == 1) fields = std::move(records[0].fields);
        } catch (const InputError&) {
        }
        if (fields && has_column(*fields, "Kernel Name")) {
          bool details = has_column(*fields, "Section Name") &&
                         has_column(*fields, "Metric Name") && has_column(*fields, "Metric Unit") &&
                         has_column(*fields, "Metric Value");
          std::string_view next =
              end == std::string_view::npos ? std::string_view{} : text.substr(end + 1);
          if (details || next.substr(0, 3) == "\"\"," || (next.empty() && !whole)) {
            return HeaderLine{i, line_number};
          }
        }
      }
    }
    if (end == std::string_view::npos) break;
    i = end + 1;
    ++line_number;
  }
  return first_with_id;
}

// ncu's console lines without a table after them: `ncu ./app` run without --csv, or a capture
// cut before the table. Recognised so that the error can say so, rather than "not a format".
bool has_ncu_console_line(std::string_view text) {
  for (size_t i = 0; i < text.size();) {
    if (text.substr(i, 9) == "==PROF== ") return true;
    size_t end = text.find('\n', i);
    if (end == std::string_view::npos) break;
    i = end + 1;
  }
  return false;
}

// Where a record of the table may start: ncu quotes every field, so each record's line starts
// with a quote; an unquoted export's rows start with their ID, a whole number (its units row
// with the empty field under "ID").
bool starts_a_record(std::string_view rest, bool quoted) {
  if (quoted) return !rest.empty() && rest.front() == '"';
  size_t digits = 0;
  while (digits < rest.size() && rest[digits] >= '0' && rest[digits] <= '9') ++digits;
  return !rest.empty() &&
         (rest.front() == ',' || (digits > 0 && digits < rest.size() && rest[digits] == ','));
}

size_t count_nonblank_lines(std::string_view text) {
  size_t count = 0;
  for (size_t i = 0; i < text.size();) {
    if (!trim(line_at(text, i)).empty()) ++count;
    size_t end = text.find('\n', i);
    if (end == std::string_view::npos) break;
    i = end + 1;
  }
  return count;
}

std::string lines_text(size_t count) {
  return fmt::format("{} line{}", count, count == 1 ? "" : "s");
}

class Columns {
 public:
  explicit Columns(const CsvRecord& header) : header_(header.fields), line_(header.line) {
    for (size_t i = 0; i < header_.size(); ++i) index_.emplace(header_[i], i);
  }
  std::optional<size_t> find(std::string_view name) const {
    auto it = index_.find(std::string(name));
    return it == index_.end() ? std::nullopt : std::optional<size_t>(it->second);
  }
  size_t require(const std::string& path, std::string_view name, std::string_view page) const {
    auto column = find(name);
    if (!column) {
      throw_invalid(
          path, InputPosition::line(line_),
          fmt::format("missing column \"{}\" (every ncu {} page export has it)", name, page));
    }
    return *column;
  }
  size_t size() const { return header_.size(); }
  const std::string& name(size_t column) const { return header_[column]; }

 private:
  const std::vector<std::string>& header_;
  size_t line_;  // the header's, where the table starts
  std::map<std::string, size_t, std::less<>> index_;
};

// One record's fields by column: the only way the importer reads a field, so a row shorter than
// the header is an error naming its line, never a read past the row.
class Row {
 public:
  Row(const std::string& path, const CsvRecord& record, const Columns& columns)
      : path_(path), record_(record), columns_(columns) {}
  // A field the row must have.
  const std::string& at(size_t column) const {
    if (column >= record_.fields.size()) {
      throw_invalid(
          path_, InputPosition::line(record_.line),
          fmt::format("{} fields: the row ends before column {} (\"{}\")", record_.fields.size(),
                      column + 1, column < columns_.size() ? columns_.name(column) : ""));
    }
    return record_.fields[column];
  }
  // A field that may be absent (no such column, or a row that ends before it): "".
  const std::string& optional(std::optional<size_t> column) const {
    static const std::string kEmpty;
    return column && *column < record_.fields.size() ? record_.fields[*column] : kEmpty;
  }
  const std::string& optional(std::string_view name) const { return optional(columns_.find(name)); }
  size_t size() const { return record_.fields.size(); }
  size_t line() const { return record_.line; }

 private:
  const std::string& path_;
  const CsvRecord& record_;
  const Columns& columns_;
};

// "(384, 1, 1)" -> Dim3
std::optional<model::Dim3> parse_dim3(std::string_view text) {
  text = trim(text);
  if (text.size() < 2 || text.front() != '(' || text.back() != ')') return std::nullopt;
  text = text.substr(1, text.size() - 2);
  std::uint64_t parts[3];
  for (int i = 0; i < 3; ++i) {
    size_t comma = text.find(',');
    if ((i < 2) != (comma != std::string_view::npos)) return std::nullopt;
    auto value = parse_uint(trim(text.substr(0, comma)));
    if (!value) return std::nullopt;
    parts[i] = *value;
    text = comma == std::string_view::npos ? std::string_view{} : text.substr(comma + 1);
  }
  return model::Dim3{parts[0], parts[1], parts[2]};
}

// A printed value in a printed unit -> a model value in the base unit; nullopt when the metric
// was not collected ("", "n/a").
std::optional<model::MetricValue> convert_printed_value(std::string_view printed,
                                                        const UnitScale& scale) {
  std::string_view text = trim(printed);
  // "--print-metric-instances values|details" appends " (instance; instance ...)": keep the
  // aggregate that precedes it.
  if (!text.empty() && text.back() == ')') {
    if (size_t open = text.find(" ("); open != std::string_view::npos) text = text.substr(0, open);
  }
  if (text.empty() || text == "n/a" || text == "(!) n/a" || text == "no data") return std::nullopt;
  // ncu prints a NaN it computed (e.g. a ratio over zero cycles) as "nan": a value, not a gap.
  if (text == "nan" || text == "-nan") {
    return model::MetricValue::of_double(std::numeric_limits<double>::quiet_NaN());
  }
  auto number = parse_ncu_number(text);
  if (!number) return model::MetricValue::of_string(std::string(text));
  bool integral_text = text.find_first_of(".eE-") == std::string_view::npos;
  // 2^64 and above (the text of 2^64 - 1 rounds to it) would not fit: kept as the double it is.
  if (auto whole = whole_number<std::uint64_t>(*number);
      scale.factor == 1 && integral_text && whole) {
    return model::MetricValue::of_uint(*whole);
  }
  return model::MetricValue::of_double(*number * scale.factor);
}

struct KernelIdentity {
  std::string id_text;
  model::Kernel kernel;
  std::string compute_capability;
};

KernelIdentity read_identity(const std::string& path, const Row& row) {
  KernelIdentity identity;
  auto text = [&](std::string_view name) -> std::string { return row.optional(name); };
  auto number = [&](std::string_view name) -> std::uint32_t {
    std::string value = text(name);
    if (value.empty()) return 0;
    auto parsed = parse_ncu_number(value);
    auto whole = parsed ? whole_number<std::uint32_t>(*parsed) : std::nullopt;
    if (!whole) {
      throw_invalid(
          path, InputPosition::line(row.line()),
          fmt::format("column \"{}\" holds \"{}\", expected a whole number", name, value));
    }
    return *whole;
  };
  auto dim3 = [&](std::string_view name) -> model::Dim3 {
    std::string value = text(name);
    if (value.empty()) return {};
    auto parsed = parse_dim3(value);
    if (!parsed) {
      throw_invalid(path, InputPosition::line(row.line()),
                    fmt::format("column \"{}\" holds \"{}\", expected \"(x, y, z)\"", name, value));
    }
    return *parsed;
  };
  identity.id_text = text("ID");
  model::Kernel& kernel = identity.kernel;
  kernel.process_id = number("Process ID");
  kernel.process_name = text("Process Name");
  kernel.host = text("Host Name");
  // ncu prints the name in its --print-kernel-base: demangled (its own spelling) by default,
  // function or mangled when asked. A mangled name is demangled as PyTorch's profiler does, so
  // that stages and trace joins work on it; the function base is what ncu would have printed.
  std::string name = text("Kernel Name");
  if (auto demangled = model::demangle(name)) {
    kernel.mangled_name = std::move(name);
    kernel.demangled_name = std::move(*demangled);
    kernel.function_name = model::function_base_name(kernel.demangled_name);
  } else {
    kernel.demangled_name = std::move(name);
  }
  kernel.context_id = number("Context");
  kernel.stream_id = number("Stream");
  kernel.block = dim3("Block Size");
  kernel.grid = dim3("Grid Size");
  kernel.device_id = number("Device");
  identity.compute_capability = text("CC");
  return identity;
}

class CsvReportBuilder {
 public:
  CsvReportBuilder(const std::string& path, model::SourceFormat format) : path_(path) {
    report_.path = path;
    report_.format = format;
  }

  model::Kernel& add_kernel(KernelIdentity identity, size_t line) {
    model::Kernel& kernel = identity.kernel;
    auto parsed_id = parse_ncu_number(identity.id_text);
    auto id = parsed_id ? whole_number<size_t>(*parsed_id) : std::nullopt;
    if (!id) {
      throw_invalid(
          path_, InputPosition::line(line),
          fmt::format("column \"ID\" holds \"{}\", expected a whole number", identity.id_text));
    }
    kernel.id = *id;  // ncu's own numbering
    model::Device& device = device_for(kernel.device_id);
    if (!identity.compute_capability.empty() && device.compute_capability().empty()) {
      size_t dot = identity.compute_capability.find('.');
      auto major = parse_uint(identity.compute_capability.substr(0, dot));
      auto minor = dot == std::string::npos
                       ? std::optional<std::uint64_t>{}
                       : parse_uint(identity.compute_capability.substr(dot + 1));
      if (major && minor) {
        add_device_attribute(device, "device__attribute_compute_capability_major",
                             model::MetricValue::of_uint(*major), "");
        add_device_attribute(device, "device__attribute_compute_capability_minor",
                             model::MetricValue::of_uint(*minor), "");
      }
    }
    bool known = std::any_of(report_.processes.begin(), report_.processes.end(),
                             [&](const model::Process& p) { return p.id == kernel.process_id; });
    if (!known) {
      report_.processes.push_back({kernel.process_id, kernel.process_name, kernel.host});
    }
    ids_.push_back(identity.id_text);
    report_.kernels.push_back(std::move(kernel));
    return report_.kernels.back();
  }

  model::Device& device_for(std::uint32_t id) {
    for (model::Device& device : report_.devices) {
      if (device.id == id) return device;
    }
    report_.devices.push_back(model::Device{id, {}, {}});
    return report_.devices.back();
  }

  void add_device_attribute(model::Device& device, std::string name, model::MetricValue value,
                            std::string unit) {
    if (name == "device__attribute_display_name" && device.name.empty() &&
        value.kind() == model::MetricValue::Kind::kString) {
      device.name = value.text();
    }
    for (model::Metric& existing : device.attributes) {
      if (existing.name == name) return;  // every row repeats the device; the first one wins
    }
    model::Metric metric;
    metric.name = std::move(name);
    metric.value = std::move(value);
    metric.unit = std::move(unit);
    device.attributes.push_back(std::move(metric));
  }

  const std::vector<std::string>& ids() const { return ids_; }
  model::Kernel& kernel(size_t index) { return report_.kernels[index]; }

  model::Report finish() {
    for (model::Kernel& kernel : report_.kernels) model::sort_metrics(kernel.metrics);
    for (model::Device& device : report_.devices) model::sort_metrics(device.attributes);
    std::sort(report_.devices.begin(), report_.devices.end(),
              [](const model::Device& a, const model::Device& b) { return a.id < b.id; });
    return std::move(report_);
  }

 private:
  const std::string& path_;
  model::Report report_;
  std::vector<std::string> ids_;
};

model::Report import_raw_page(const std::string& path, const std::vector<CsvRecord>& records) {
  const std::vector<std::string>& header = records[0].fields;
  Columns columns(records[0]);
  columns.require(path, "ID", "raw");
  columns.require(path, "Kernel Name", "raw");
  if (records.size() < 2) {
    throw_invalid(path, InputPosition::line(records[0].line + 1),
                  "missing the units row that follows the header of a raw page export");
  }
  Row units_row(path, records[1], columns);
  if (units_row.size() != header.size()) {
    throw_invalid(path, InputPosition::line(units_row.line()),
                  fmt::format("the units row has {} fields, the header has {}", units_row.size(),
                              header.size()));
  }
  std::vector<UnitScale> scales(header.size());
  std::vector<bool> is_metric(header.size());
  for (size_t c = 0; c < header.size(); ++c) {
    is_metric[c] = !is_identity_column(header[c]);
    if (is_metric[c]) {
      scales[c] = to_base_unit(units_row.at(c));
    } else if (!units_row.at(c).empty()) {
      throw_invalid(path, InputPosition::line(units_row.line()),
                    fmt::format("expected the units row (empty under \"{}\"), found \"{}\"",
                                header[c], units_row.at(c)));
    }
  }
  CsvReportBuilder builder(path, model::SourceFormat::kNcuCsvRaw);
  // One name per column, shared by every kernel's metric in it.
  const std::vector<model::MetricName> column_names(header.begin(), header.end());
  model::NameInterner units;
  std::vector<model::MetricName> column_units;
  for (const UnitScale& scale : scales) column_units.push_back(units.intern(scale.base_unit));
  for (size_t r = 2; r < records.size(); ++r) {
    Row row(path, records[r], columns);
    if (row.size() != header.size()) {
      throw_invalid(path, InputPosition::line(row.line()),
                    fmt::format("{} fields, the header has {}", row.size(), header.size()));
    }
    model::Kernel& kernel = builder.add_kernel(read_identity(path, row), row.line());
    model::Device& device = builder.device_for(kernel.device_id);
    kernel.metrics.reserve(header.size());
    for (size_t c = 0; c < header.size(); ++c) {
      if (!is_metric[c]) continue;
      auto value = convert_printed_value(row.at(c), scales[c]);
      if (!value) continue;
      // Device attributes are kept per kernel too, as ncu stores them with each result.
      if (std::string_view(header[c]).substr(0, kDevicePrefix.size()) == kDevicePrefix) {
        builder.add_device_attribute(device, header[c], *value, scales[c].base_unit);
      }
      model::Metric metric;
      metric.name = column_names[c];
      metric.value = std::move(*value);
      metric.unit = column_units[c];
      kernel.metrics.push_back(std::move(metric));
    }
  }
  return builder.finish();
}

bool looks_like_metric_name(std::string_view label) {
  // ncu metric names: lower-case unit prefix, "__", then name and suffixes (no spaces).
  size_t sep = label.find("__");
  if (sep == 0 || sep == std::string_view::npos) return false;
  return std::all_of(label.begin(), label.end(), [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '_' || c == '.';
  });
}

// "9.0" in the CC column -> 90; 0 when absent or unreadable.
int compute_capability_code(const Row& row) {
  const std::string& text = row.optional("CC");
  size_t dot = text.find('.');
  auto major = parse_uint(std::string_view(text).substr(0, dot));
  auto minor = dot == std::string::npos ? std::optional<std::uint64_t>(0)
                                        : parse_uint(std::string_view(text).substr(dot + 1));
  return major && minor ? static_cast<int>(*major * 10 + *minor) : 0;
}

model::RuleType rule_type_from_code(std::string_view code) {
  if (code == "OPT") return model::RuleType::kOptimization;
  if (code == "INF") return model::RuleType::kOk;
  if (code == "WRN") return model::RuleType::kWarning;
  if (code == "ERR") return model::RuleType::kError;
  return model::RuleType::kNone;
}

model::Report import_details_page(const std::string& path, const std::vector<CsvRecord>& records) {
  const std::vector<std::string>& header = records[0].fields;
  Columns columns(records[0]);
  columns.require(path, "ID", "details");
  columns.require(path, "Kernel Name", "details");
  size_t section_col = columns.require(path, "Section Name", "details");
  model::NameInterner names;  // every kernel repeats the same metric names
  size_t name_col = columns.require(path, "Metric Name", "details");
  size_t unit_col = columns.require(path, "Metric Unit", "details");
  size_t value_col = columns.require(path, "Metric Value", "details");
  auto rule_col = columns.find("Rule Name");
  auto rule_type_col = columns.find("Rule Type");
  auto rule_text_col = columns.find("Rule Description");
  auto speedup_type_col = columns.find("Estimated Speedup Type");
  auto speedup_col = columns.find("Estimated Speedup");
  // Metric rows end after the last metric column (ncu's own order puts the value last).
  size_t metric_row_fields = std::max({section_col, name_col, unit_col, value_col}) + 1;

  CsvReportBuilder builder(path, model::SourceFormat::kNcuCsvDetails);
  std::map<std::string, size_t> kernel_by_id;
  for (size_t r = 1; r < records.size(); ++r) {
    Row row(path, records[r], columns);
    // Metric rows carry the 15 metric columns (plus a trailing empty field when the export
    // has rule columns); rule rows carry all columns.
    if (row.size() < metric_row_fields || row.size() > header.size() + 1) {
      throw_invalid(path, InputPosition::line(row.line()),
                    fmt::format("{} fields, expected between {} and {} for a details page row",
                                row.size(), metric_row_fields, header.size()));
    }
    KernelIdentity identity = read_identity(path, row);
    auto found = kernel_by_id.find(identity.id_text);
    size_t index;
    if (found == kernel_by_id.end()) {
      index = builder.ids().size();
      builder.add_kernel(std::move(identity), row.line());
      kernel_by_id.emplace(builder.ids().back(), index);
    } else {
      index = found->second;
    }
    model::Kernel& kernel = builder.kernel(index);
    const std::string& rule = row.optional(rule_col);
    if (!rule.empty()) {
      model::RuleFinding finding;
      finding.rule = rule;
      finding.section = row.at(section_col);
      finding.type = rule_type_from_code(row.optional(rule_type_col));
      finding.message = row.optional(rule_text_col);
      finding.speedup_type = row.optional(speedup_type_col);
      const std::string& speedup = row.optional(speedup_col);
      if (!speedup.empty()) {
        finding.estimated_speedup = parse_ncu_number(speedup);
        if (!finding.estimated_speedup) {
          throw_invalid(
              path, InputPosition::line(row.line()),
              fmt::format("\"Estimated Speedup\" holds \"{}\", expected a number", speedup));
        }
      }
      kernel.rules.push_back(std::move(finding));
      continue;
    }
    UnitScale scale = to_base_unit(row.at(unit_col));
    auto value = convert_printed_value(row.at(value_col), scale);
    if (!value) continue;
    model::Metric metric;
    // The section and label name the metric when no metric name is known for them.
    const std::string& section = row.at(section_col);
    const std::string& label = row.at(name_col);
    std::string_view known = metric_for_label(section, label, compute_capability_code(row));
    if (!known.empty()) {
      metric.name = names.intern(known);
    } else if (looks_like_metric_name(label)) {
      metric.name = names.intern(label);
    } else {
      metric.name = names.intern(fmt::format("{}: {}", section, label));
    }
    metric.value = std::move(*value);
    metric.unit = names.intern(scale.base_unit);
    kernel.metrics.push_back(std::move(metric));
  }
  return builder.finish();
}

}  // namespace

bool NcuCsvImporter::recognizes(std::string_view head) const {
  // The head may be the first bytes only (a compressed or piped input): a header it cuts short,
  // and ncu's console lines whose table may come later, are read on and checked by parse().
  return find_header(head, false).has_value() || has_ncu_console_line(head);
}

model::Report NcuCsvImporter::parse(const std::string& path, std::string_view bytes,
                                    const ImportOptions& /*options: CSV rows are all read*/) const {
  std::optional<HeaderLine> header = find_header(bytes, true);
  if (!header) {
    throw_invalid(path, InputPosition::line(1),
                  has_ncu_console_line(bytes)
                      ? "ncu's console output without its CSV table: no line is the header of an "
                        "ncu --csv export (\"ID\", …, \"Kernel Name\", … followed by its units "
                        "row, or the details page's \"Section Name\", \"Metric Name\", \"Metric "
                        "Unit\", \"Metric Value\"); run ncu with --csv, or give kprof the "
                        ".ncu-rep report"
                      : "not an ncu CSV export: the header must start with the \"ID\" column");
  }
  const std::string_view table_text = bytes.substr(header->offset);
  const bool quoted = table_text.front() == '"';
  CsvTable table =
      read_csv_table(path, table_text, header->line, [&](size_t index, std::string_view rest) {
        // The header and the record after it (the raw page's units row, which its reader
        // checks), then records as ncu writes them.
        return index <= 1 || starts_a_record(rest, quoted);
      });
  // What follows the table must not be more of it: a table interrupted by other text is refused,
  // not read in part.
  if (table.end < table_text.size()) {
    const std::string_view rest = table_text.substr(table.end);
    size_t line_number = table.end_line;
    for (size_t i = 0; i < rest.size(); ++line_number) {
      if (i != 0 && starts_a_record(rest.substr(i), quoted)) {
        throw_invalid(path, InputPosition::line(table.end_line),
                      fmt::format("this line is not a record of the CSV table that starts at "
                                  "line {}, yet records of it go on at line {}",
                                  header->line, line_number));
      }
      size_t end = rest.find('\n', i);
      if (end == std::string_view::npos) break;
      i = end + 1;
    }
  }
  if (table.records.empty()) {
    throw_invalid(path, InputPosition::line(header->line), "the CSV table has no header record");
  }
  const std::vector<CsvRecord>& records = table.records;
  const bool details = has_column(records[0].fields, "Metric Value");
  model::Report report =
      details ? import_details_page(path, records) : import_raw_page(path, records);
  const size_t before = header->line - 1;
  const size_t trailing = count_nonblank_lines(table_text.substr(table.records_end));
  if (before + trailing + table.console_lines != 0) {
    // The line after the last record, unless the file ends without a line break.
    const size_t last_line = table_text[table.records_end - 1] == '\n' ? table.records_end_line - 1
                                                                       : table.records_end_line;
    std::vector<std::string> skipped;
    if (before != 0) skipped.push_back(lines_text(before) + " before it");
    if (trailing != 0) skipped.push_back(lines_text(trailing) + " after it");
    if (table.console_lines != 0) {
      skipped.push_back(fmt::format("{} of ncu's inside it", lines_text(table.console_lines)));
    }
    std::string note =
        fmt::format("read the ncu CSV table at lines {} to {}; skipped ", header->line, last_line);
    for (size_t i = 0; i < skipped.size(); ++i) {
      note += (i == 0 ? "" : i + 1 == skipped.size() ? " and " : ", ") + skipped[i];
    }
    note +=
        " (not ncu's CSV: a container's banner, the program's own output, ncu's ==PROF== "
        "and ==WARNING== lines)";
    report.reading_note = std::move(note);
  }
  return report;
}

}  // namespace kprof::importers
