// Presenting verdicts: a terminal table, JSON (schema kprof.analysis/1,
// docs/kprof.analysis.schema.json) and CSV. Inputs are already-computed verdicts; nothing here
// decides anything.
#pragma once

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "analysis/verdict.h"
#include "model/report.h"
#include "timeline/trace_join.h"

namespace kprof::render {

struct AnalyzedKernel {
  const model::Report* report;
  const model::Kernel* kernel;
  analysis::KernelVerdict verdict;
  // Set when a trace was joined: the kernel's share of the pipeline (nullopt inside means the
  // trace never ran it).
  bool joined = false;
  std::optional<timeline::KernelShare> share;
};

std::string verdict_table(const std::vector<AnalyzedKernel>& kernels,
                          const analysis::Thresholds& thresholds, size_t name_width);

nlohmann::json verdict_json(const std::vector<AnalyzedKernel>& kernels,
                            const std::vector<const model::Report*>& reports,
                            const analysis::AnalysisConfig& config,
                            const std::vector<std::string>& argv);

std::string verdict_csv(const std::vector<AnalyzedKernel>& kernels,
                        const analysis::Thresholds& thresholds);

// RFC 4180 field quoting (always quoted, "" for a quote).
std::string csv_field(const std::string& text);

// Why a join of captures to a trace answered nothing: what each side holds (the captured kernels'
// names, the trace's longest kernels).
std::string nothing_joined(const std::vector<AnalyzedKernel>& kernels,
                           const std::vector<std::string>& report_paths,
                           const std::string& trace_path,
                           const std::vector<std::string>& longest_traced);

}  // namespace kprof::render
