// `kprof source` as text and as JSON (kprof.source/1): per kernel, the hottest instructions with
// their stall reasons, executed counts, CUDA line and SASS (or PTX) text, and the per-line totals.
#pragma once

#include <string>
#include <vector>

#include "analysis/source_counters.h"

namespace kprof::render {

// Where the SASS text came from: the disassembler's description, or "" when none was found.
struct SassSource {
  std::string disassembler;
  bool skipped = false;  // --no-sass
};

// report_names[view.report] names a kernel's report (its file name).
std::string source_text(const std::vector<std::string>& report_names,
                        const std::vector<analysis::KernelSource>& kernels, const SassSource& sass);
std::string source_json_text(const std::vector<std::string>& argv,
                             const std::vector<std::string>& report_names,
                             const std::vector<analysis::KernelSource>& kernels,
                             const SassSource& sass);

}  // namespace kprof::render
