// Comparing two captures of the same kernels (before/after a change) for CI gating: kernels are
// matched by name and launch configuration; a kernel regresses when its median duration grows
// by more than the threshold — or than twice the run-to-run noise its repeated launches show,
// whichever is larger.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "analysis/verdict.h"
#include "model/report.h"

namespace kprof::analysis {

struct DiffOptions {
  double threshold_pct = 5;  // smallest duration change reported as a regression/improvement
  double noise_factor = 2;   // a change must also exceed this many times the measured noise
};

enum class Change { kRegression, kImprovement, kUnchanged, kOnlyInBaseline, kOnlyInCandidate };
std::string change_name(Change change);

struct KernelDiff {
  std::string name;
  model::Dim3 grid, block;
  size_t baseline_launches = 0, candidate_launches = 0;
  std::optional<double> baseline_ns, candidate_ns;  // median durations
  std::optional<double> change_pct;
  std::optional<double> noise_pct;  // largest deviation from the median among repeated launches
  double threshold_pct = 0;         // what this kernel's change was judged against
  std::string baseline_verdict, candidate_verdict;
  std::optional<double> baseline_sm_pct, candidate_sm_pct;
  std::optional<double> baseline_memory_pct, candidate_memory_pct;
  std::optional<double> baseline_occupancy, candidate_occupancy;  // achieved, 0..1
  Change change = Change::kUnchanged;
};

struct CaptureDiff {
  std::vector<KernelDiff> kernels;  // regressions first, then by |change|
  size_t regressions = 0, improvements = 0;
  size_t in_both = 0;  // kernel groups both captures have: 0 means nothing was compared
};

CaptureDiff diff_captures(const model::Report& baseline, const model::Report& candidate,
                          const DiffOptions& options, const AnalysisConfig& config);

}  // namespace kprof::analysis
