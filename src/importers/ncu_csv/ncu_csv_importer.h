// Reader of ncu's CSV exports: `ncu --import R --csv --page raw` (wide: one row per kernel, a
// units row, one column per metric) and `--page details` (long: one row per section metric or
// rule message). Values are converted to base units so both feed the same model as .ncu-rep.
#pragma once

#include "importers/importer.h"

namespace kprof::importers {

class NcuCsvImporter final : public Importer {
 public:
  std::string_view name() const override { return "ncu-csv"; }
  std::string_view describes() const override {
    return "ncu CSV export (--csv --page raw or --page details): its header line starts with "
           "\"ID\", after whatever the program and ncu printed before it";
  }
  bool recognizes(std::string_view head) const override;

 protected:
  model::Report parse(const std::string& path, std::string_view bytes,
                      const ImportOptions& options) const override;
};

}  // namespace kprof::importers
