// The source pipeline (`kprof source`): for the kernels a regex selects, the hottest SASS
// instructions by warp-state samples (by stall reason) and instructions executed, at their
// offsets in the function, with the CUDA file:line and PTX line of a -lineinfo cubin, the SASS
// text when a disassembler is found, and per-line totals. The counters and offsets come from the
// report alone; only the SASS text needs nvdisasm (pipeline/disassembler).
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "analysis/source_counters.h"
#include "importers/importer.h"
#include "model/report.h"
#include "pipeline/answer.h"
#include "pipeline/disassembler.h"

namespace kprof::pipeline {

struct SourceOptions {
  std::vector<std::string> paths;
  std::string kernel_regex;
  std::size_t top = 10;
  bool json = false;
  std::string nvdisasm;  // --nvdisasm PATH; "" to search PATH, $CUDA_HOME/bin, /usr/local/cuda
  bool no_sass = false;  // --no-sass: do not look for a disassembler
  // The seam: when set, used instead of a located nvdisasm (tests: recorded output).
  std::shared_ptr<Disassembler> disassembler;
};

// The per-PC metrics' instances and the modules: what the importer must keep for `source`.
importers::ImportOptions for_source();

// One kernel's view (analysis::KernelSource) from its report; disassembler may be null. Throws
// InputError (kInputInvalid, the report and the byte) for a cubin or line table that breaks the
// format. A failed disassembly is said in `failure` and leaves the SASS text empty.
analysis::KernelSource kernel_source(const std::string& path, const model::Report& report,
                                     std::size_t kernel, std::size_t top,
                                     Disassembler* disassembler, std::string& failure);

Answer source(const SourceOptions& options, const std::vector<std::string>& argv);

}  // namespace kprof::pipeline
