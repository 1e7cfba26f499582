// Native reader of Nsight Compute reports (.ncu-rep), no ncu installation needed.
//
// Container (version 7): "NVR\0", uint32 length + FileHeader, then blocks of
// uint32 length + BlockHeader followed by PayloadSize bytes holding NumSources source entries
// (a CUDA module's cubin and where its functions were loaded: framing checked, decoded only with
// ImportOptions::sources, into model::Report::modules), NumResults kernel results, then range,
// command-list and graph results; each entry is uint32 length + message. All integers
// little-endian.
#pragma once

#include "importers/importer.h"

namespace kprof::importers {

class NcuRepImporter final : public Importer {
 public:
  std::string_view name() const override { return "ncu-rep"; }
  std::string_view describes() const override {
    return "Nsight Compute report .ncu-rep, starting with \"NVR\\0\"";
  }
  bool recognizes(std::string_view head) const override;

 protected:
  model::Report parse(const std::string& path, std::string_view bytes,
                      const ImportOptions& options) const override;
};

}  // namespace kprof::importers
