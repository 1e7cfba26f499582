// The data tables an analysis consults (GPU database, stage rules, expected bottlenecks), loaded
// together: built in, or the user's files where given.
#pragma once

#include <string>

#include "analysis/stages.h"
#include "analysis/verdict.h"
#include "hardware/gpu_specs.h"

namespace kprof::analysis {

struct AnalysisTables {
  hardware::GpuDatabase gpus;
  StageTable stages;
  ExpectationTable expectations;

  // Points into this object: keep it alive while the config is used.
  AnalysisConfig config(const Thresholds& thresholds = {}) const {
    return {thresholds, &stages, &expectations, &gpus};
  }
};

inline AnalysisTables load_analysis_tables(const std::string& gpus_path = "",
                                           const std::string& stages_path = "",
                                           const std::string& expectations_path = "") {
  return {hardware::load_gpu_database(gpus_path), load_stage_table(stages_path),
          load_expectations(expectations_path)};
}

}  // namespace kprof::analysis
