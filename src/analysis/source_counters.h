// Source counters (`kprof source`): a kernel's per-instruction values — the warp-state samples
// by stall reason, instructions executed, memory and branch counters ncu's Source page shows —
// from the metrics whose instances are keyed by instruction address, and the hottest
// instructions and source lines from them. Pure: where the instructions' source lines and SASS
// text come from (the cubin, a disassembler) is the caller's (pipeline/source).
//
// An .ncu-rep stores a per-PC metric as an instanced metric whose correlation ids are the
// absolute addresses of the instructions that have a value (no instance: 0, as ncu prints it);
// the function starts at `launch__function_pcs`'s one instance value, instructions are 16 bytes.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/report.h"

namespace kprof::analysis {

inline constexpr std::string_view kStallPrefix = "smsp__pcsamp_warps_issue_stalled_";
inline constexpr std::string_view kSamples = "smsp__pcsamp_sample_count";
inline constexpr std::string_view kExecuted = "inst_executed";
inline constexpr std::string_view kFunctionStart = "launch__function_pcs";

// The 19 sampling reasons of sm_90 (`kStallPrefix` + reason; `_not_issued` appended: the samples
// of warps that did not issue), in ncu's order. warpgroup_arrive has no column on ncu's Source
// page but is counted in its "All Samples".
const std::vector<std::string_view>& stall_reasons();

// Whether a metric may be per-PC, so its instances are worth reading (ImportOptions::
// instances_of): the sampling, instruction, memory, branch and L2-policy source counters and
// launch__function_pcs. Which of them are per-PC in a result is decided by their addresses.
bool may_be_source_counter(std::string_view metric);

// The function's first instruction: launch__function_pcs's instance value.
std::optional<std::uint64_t> function_start(const model::Kernel& kernel);

struct SourceCounters {
  std::uint64_t start = 0;  // absolute address of the first instruction
  std::uint64_t size = 0;   // bytes: instructions = size / 16
  // The per-PC metrics of the result, by name: every instanced metric whose correlation ids are
  // all integer addresses of instructions of [start, start + size).
  std::vector<std::string> metrics;
  // values[i][m]: instruction i (offset 16 i), metric m; 0 where the report has no instance.
  std::vector<std::vector<double>> values;

  std::size_t instructions() const { return values.size(); }
  std::optional<std::size_t> metric(std::string_view name) const;
  double value(std::size_t instruction, std::string_view name) const;  // 0 when no such metric
  double total(std::string_view name) const;                           // over the instructions
};

// The per-PC counters of a kernel whose function starts at `start` and is `size` bytes long.
SourceCounters source_counters(const model::Kernel& kernel, std::uint64_t start,
                               std::uint64_t size);

struct SourceLocation {
  std::string file;  // as the line table names it (the full path)
  std::uint64_t line = 0;
};

// One instruction of the hot list.
struct HotInstruction {
  std::size_t index = 0;  // instruction index (offset / 16)
  double samples = 0;
  std::vector<std::pair<std::string, double>> reasons;  // non-zero, most first, then by name
};

// One CUDA source line's totals over its instructions.
struct LineTotal {
  SourceLocation location;
  double samples = 0;
  double executed = 0;
  std::size_t instructions = 0;
};

// What `kprof source` shows of one kernel, filled by pipeline/source and rendered by
// render/source_render.
struct KernelSource {
  std::size_t report = 0;  // index of the report in the request
  std::size_t kernel = 0;  // index of the kernel in the report
  std::string name;        // as analyze names it (the demangled name, else the function's)
  std::string mangled;
  std::optional<std::uint64_t> module_reference;
  std::string sm;                 // "sm_90", "" when not recorded
  std::uint64_t cubin_bytes = 0;  // 0: the report stored no cubin for the module
  std::optional<std::uint32_t> symbol_index;
  // Why no instruction can be shown ("no per-PC metrics: ..."); empty when counters are set.
  std::string unavailable;
  SourceCounters counters;
  // Per instruction, when known: the CUDA line (-lineinfo), the PTX line's text, the SASS text,
  // the raw encoding (two 64-bit words as hex, high word first).
  std::vector<std::optional<SourceLocation>> cuda;
  std::vector<std::string> ptx;
  std::vector<std::string> sass;
  std::vector<std::string> encoding;
  std::string line_info;  // "CUDA 12 rows, PTX 26 rows", "none (...)", "not read: ..."
  std::vector<HotInstruction> hottest;
  std::vector<LineTotal> lines;   // by samples, most first
  bool ranked_by_samples = true;  // false: no samples, ranked by instructions executed
};

// The `top` instructions with the most samples (ties by offset); when the kernel has no samples,
// those executed most. Instructions with neither are not listed.
std::vector<HotInstruction> hottest_instructions(const SourceCounters& counters, std::size_t top,
                                                 bool& by_samples);

// Totals per CUDA line over the instructions that have one (cuda[i]), most samples first, then
// most executed, then by file and line.
std::vector<LineTotal> line_totals(const SourceCounters& counters,
                                   const std::vector<std::optional<SourceLocation>>& cuda);

}  // namespace kprof::analysis
