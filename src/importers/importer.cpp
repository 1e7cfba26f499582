#include "importers/importer.h"

#include <fmt/format.h>

#include "common/error.h"
#include "common/file_bytes.h"
#include "importers/common/trace_reader.h"
#include "importers/ncu_csv/ncu_csv_importer.h"
#include "importers/ncu_rep/ncu_rep_importer.h"

namespace kprof::importers {

model::Report Importer::import(const std::string& path, std::string_view bytes,
                               const ImportOptions& options) const {
  model::Report report = parse(path, bytes, options);
  model::make_valid_utf8(report);
  return report;
}

const std::vector<const Importer*>& all_importers() {
  static const NcuRepImporter ncu_rep;
  static const NcuCsvImporter ncu_csv;
  static const std::vector<const Importer*> importers{&ncu_rep, &ncu_csv};
  return importers;
}

namespace {

std::string known_formats() {
  std::string known;
  for (const Importer* importer : all_importers()) {
    known += fmt::format("{}{}", known.empty() ? "" : "; ", importer->describes());
  }
  return known;
}

bool any_recognizes(std::string_view head) {
  for (const Importer* importer : all_importers()) {
    if (importer->recognizes(head)) return true;
  }
  return false;
}

}  // namespace

model::Report import_bytes(const std::string& path, std::string_view bytes,
                           const ImportOptions& options) {
  if (bytes.empty()) throw_invalid(path, InputPosition::none(), "the file is empty");
  for (const Importer* importer : all_importers()) {
    if (importer->recognizes(bytes)) return importer->import(path, bytes, options);
  }
  // Traces are read by other commands: say which, rather than only what a report looks like.
  std::string_view trace_kind;
  for (const TraceReader* reader : all_trace_readers()) {
    if (trace_kind.empty()) trace_kind = reader->looks_like(bytes);
  }
  if (!trace_kind.empty()) {
    throw_invalid(path, InputPosition::byte(0),
                  fmt::format("not an Nsight Compute report but {}: for a trace use `kprof rank "
                              "{}` or `kprof budget {}`, or join it to a capture with `kprof "
                              "report --trace {} REPORT`",
                              trace_kind, path, path, path));
  }
  throw_invalid(path, InputPosition::byte(0),
                fmt::format("not a format kprof reads ({})", known_formats()));
}

model::Report import_report(const std::string& path, const ImportOptions& options) {
  // A compressed input is checked on its first bytes: one that expands to something else stops
  // there, not after gigabytes.
  // A regular file is mapped, and each kernel result's pages given back once it is decoded: the
  // process holds the model and the results being decoded, not the file.
  InputBytes file = open_input_file(
      path, {any_recognizes, fmt::format("a format kprof reads ({})", known_formats())});
  ImportOptions reading = options;
  if (file.is_mapped()) {
    reading.done_with = [&file, then = options.done_with](std::string_view part) {
      file.release(part);
      if (then) then(part);
    };
  }
  return import_bytes(path, file.view(), reading);
}

}  // namespace kprof::importers
