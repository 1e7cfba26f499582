#include "importers/importer.h"

#include <fmt/format.h>

#include "common/error.h"
#include "common/file_bytes.h"
#include "importers/ncu_csv/ncu_csv_importer.h"
#include "importers/ncu_rep/ncu_rep_importer.h"

namespace kprof::importers {

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

model::Report import_bytes(const std::string& path, std::string_view bytes) {
  if (bytes.empty()) throw_invalid(path, InputPosition::none(), "the file is empty");
  for (const Importer* importer : all_importers()) {
    if (importer->recognizes(bytes)) return importer->import(path, bytes);
  }
  throw_invalid(path, InputPosition::byte(0),
                fmt::format("not a format kprof reads ({})", known_formats()));
}

model::Report import_report(const std::string& path) {
  // A compressed input is checked on its first bytes: one that expands to something else stops
  // there, not after gigabytes.
  FileBytes file = read_input_file(
      path, {any_recognizes, fmt::format("a format kprof reads ({})", known_formats())});
  return import_bytes(path, file.bytes);
}

}  // namespace kprof::importers
