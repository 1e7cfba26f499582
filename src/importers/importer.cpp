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

model::Report import_bytes(const std::string& path, std::string_view bytes) {
  if (bytes.empty()) throw_invalid(path, InputPosition::none(), "the file is empty");
  for (const Importer* importer : all_importers()) {
    if (importer->recognizes(bytes)) return importer->import(path, bytes);
  }
  std::string known;
  for (const Importer* importer : all_importers()) {
    known += fmt::format("{}{}", known.empty() ? "" : "; ", importer->describes());
  }
  throw_invalid(path, InputPosition::byte(0), fmt::format("not a format kprof reads ({})", known));
}

model::Report import_report(const std::string& path) {
  FileBytes file = read_input_file(path);
  return import_bytes(path, file.bytes);
}

}  // namespace kprof::importers
