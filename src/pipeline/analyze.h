// The verdict pipeline: reports read, kernels selected, each judged (analysis/verdict), optionally
// joined to a profiler trace (pipeline shares, Amdahl bounds), shown as a table, JSON, CSV or the
// HTML page. `kprof analyze` and `kprof report` (analyze joined to a trace, ranked by share of the
// pipeline) are this; a capture's bundle gets its analysis.json from it.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/verdict.h"
#include "model/report.h"
#include "pipeline/answer.h"

namespace kprof::pipeline {

struct AnalyzeOptions {
  std::vector<std::string> paths;
  std::string kernel_regex;
  std::string sort = "duration";  // duration, pipeline, id
  bool json = false;
  bool text_too = false;  // with json: the text answer too (Answer::text), from one run
  bool csv = false;
  bool summary = false;
  size_t name_width = 48;
  analysis::Thresholds thresholds;
  std::string gpus_path, stages_path, expectations_path;
  std::string trace_path;  // join: fraction_of_pipeline and max_e2e_speedup
  std::string html_path;   // write the self-contained HTML page there
  // kprof report --annotate: write the trace's GPU timeline with the findings on its slices
  // there (render/annotated_trace.h), beside whatever else the command prints.
  std::string annotate_path;
  // With a trace, kprof report's answer: the fix list first (fix_list), the per-launch verdict
  // table after it only with per_launch, at most `top` groups (0: all). analyze --trace keeps
  // the per-launch table alone.
  bool fix_list = false;
  bool per_launch = false;
  size_t top = 15;
  // A report of a format version kprof does not know: read through ncu's own export
  // (--fallback-ncu; ReadPolicy).
  bool fallback_ncu = false;
};

// argv: the command line, for the JSON envelope. UsageError for options that do not combine or a
// regex that does not compile, NothingSelected when the filter or the join selects nothing,
// InputError for an input that cannot be read.
Answer analyze(const AnalyzeOptions& options, const std::vector<std::string>& argv);

// The verdict table and kprof.analysis/1 JSON of one report, for an evidence bundle; the report
// is read once and handed back for further checks. std::nullopt when it selects no kernel.
struct BundleAnalysis {
  std::string table, json;
  model::Report report;
};
std::optional<BundleAnalysis> analyze_for_bundle(const std::string& report_path);

}  // namespace kprof::pipeline
