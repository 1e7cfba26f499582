// The verdict pipeline shared by `kprof analyze` and `kprof report` (which is analyze joined to
// a profiler trace, ranked by share of the pipeline).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/verdict.h"
#include "capture/capture_session.h"
#include "cli/command.h"
#include "model/report.h"

namespace kprof::cli {

struct AnalyzeOptions {
  std::vector<std::string> paths;
  std::string kernel_regex;
  std::string sort = "duration";
  bool json = false;
  bool csv = false;
  bool summary = false;
  size_t name_width = 48;
  analysis::Thresholds thresholds;
  std::string gpus_path, stages_path, expectations_path;
  std::string trace_path;  // join: fraction_of_pipeline and max_e2e_speedup
  std::string html_path;   // write the self-contained HTML page there
};

// Adds the options both commands share (reports, filters, thresholds, outputs, tables).
void add_verdict_options(CLI::App& command, AnalyzeOptions& options);
ExitCode run_analyze(const AnalyzeOptions& options, Output& output);

// The verdict table and kprof.analysis/1 JSON of one report, for an evidence bundle (the capture
// session's analyzer); the report is read once and handed back for further checks. std::nullopt
// when it selects no kernel.
std::optional<capture::BundleAnalysis> analyze_for_bundle(const std::string& report_path);

}  // namespace kprof::cli
