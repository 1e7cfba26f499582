// The report model as terminal text: the raw per-kernel numbers of `analyze --summary`, and
// `inspect`'s session and kernel listings. Every string from a report is shown literally.
#pragma once

#include <functional>
#include <set>
#include <string>
#include <vector>

#include "model/report.h"

namespace kprof::render {

// One row per kernel (in the given order of indices into report.kernels): duration, SM, memory
// and DRAM throughput, occupancy, registers, grid and block. Names of metrics the capture did
// not collect are added to `missing`.
std::string summary_table(const model::Report& report, const std::vector<size_t>& order,
                          size_t name_width, std::set<std::string>& missing);

// Versions, command line, profiler settings, processes and devices.
std::string session_text(const model::Report& report);

struct KernelTextOptions {
  std::function<bool(const std::string&)> include_metric;  // every metric when unset
  bool rules = false;                                      // ncu's rule findings after the metrics
  bool instances = false;  // per-instance values under instanced metrics
};

// Values wider than this are printed on their own lines under their metric (ncu's breakdown:
// metrics hold lists of a thousand characters and more), so the value column stays narrow.
inline constexpr size_t kMaxValueWidth = 48;

// The kernel's identity and launch, then its metrics as a table (values in base units).
std::string kernel_text(const model::Kernel& kernel, const KernelTextOptions& options);

// One line about a report: path, format, kernels (selected of all), devices, ncu version, clock
// control, results not shown.
std::string report_header(const model::Report& report, size_t selected_kernels);

// Said under the header of a report holding no kernel result.
inline constexpr const char* kNoKernelResults =
    "  no kernel results: ncu profiled nothing into this report (a --kernel-name or\n"
    "  --launch-skip that matched no launch, or an application that made no CUDA call)\n";

// `analyze --summary`: per report its header and summary_table (kernels in the given order),
// then the metrics no capture collected.
std::string summary_text(const std::vector<model::Report>& reports,
                         const std::vector<std::vector<size_t>>& orders, size_t name_width);

// `inspect`: per report its header, then the selected kernels' kernel_text, or with session
// the session_text and no kernel.
std::string inspect_text(const std::vector<model::Report>& reports,
                         const std::vector<std::vector<size_t>>& selected,
                         const KernelTextOptions& options, bool session);

}  // namespace kprof::render
