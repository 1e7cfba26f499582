// Reads a (possibly zstd-compressed) CSV from data/ into records, for tests that compare our
// importers against ncu's own printed text.
#pragma once

#include <map>
#include <string>
#include <vector>

#include "common/file_bytes.h"
#include "importers/ncu_csv/csv_records.h"
#include "support/test_data.h"

namespace kprof::testing {

inline std::vector<importers::CsvRecord> read_csv(const std::string& relative) {
  FileBytes file = read_input_file(data_path(relative));
  return importers::parse_csv_records(file.path, file.bytes);
}

// kernel_names_*.csv: "ID","Kernel Name" as ncu printed them for one --print-kernel-base.
inline std::map<size_t, std::string> read_kernel_names(const std::string& relative) {
  std::map<size_t, std::string> names;
  for (const auto& record : read_csv(relative)) {
    names[std::stoul(record.fields.at(0))] = record.fields.at(1);
  }
  return names;
}

}  // namespace kprof::testing
