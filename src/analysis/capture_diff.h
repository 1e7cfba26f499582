// Comparing two captures of the same kernels (before/after a change) for CI gating: kernels are
// matched by name and launch configuration — or by name alone when each side has that name in
// one launch configuration only (a retune: another grid or block); a kernel regresses when its
// median duration grows by more than the threshold — or than twice the run-to-run noise its
// repeated launches show, whichever is larger. A kernel launched once on a side has no noise
// estimate: it must also move by more than an absolute floor (µs), else it is "not enough samples
// to judge" and does not fail the gate. The whole comparison gets a time-weighted verdict: the
// matched kernels' medians weighted by their baseline launches, summed on each side.
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
  // A kernel launched once on either side must also change by more than this many µs: the
  // largest change of one launch between repeated captures of the same kernels in data/h200
  // (big_full, big_basic, big_min) is 1.98 µs, whatever its relative size.
  double single_sample_floor_us = 3;
};

enum class Change {
  kRegression,
  kImprovement,
  kUnchanged,
  kOnlyInBaseline,
  kOnlyInCandidate,
  kNotEnoughSamples  // launched once on a side, moved past the threshold but not the floor
};
std::string change_name(Change change);

struct KernelDiff {
  std::string name;
  model::Dim3 grid, block;  // the baseline's (the candidate's when only in the candidate)
  // Set when the kernel was retuned: the only group of its name on each side, with another
  // grid or block in the candidate (matched by name, as "launch changed").
  std::optional<model::Dim3> candidate_grid, candidate_block;
  size_t baseline_launches = 0, candidate_launches = 0;
  std::optional<double> baseline_ns, candidate_ns;  // median durations
  std::optional<double> change_pct;
  std::optional<double> noise_pct;  // largest deviation from the median among repeated launches
  double threshold_pct = 0;         // what this kernel's change was judged against
  std::optional<double> floor_us;   // the absolute floor it was judged against (single samples)
  std::string baseline_verdict, candidate_verdict;
  std::optional<double> baseline_sm_pct, candidate_sm_pct;
  std::optional<double> baseline_memory_pct, candidate_memory_pct;
  std::optional<double> baseline_occupancy, candidate_occupancy;  // achieved, 0..1
  Change change = Change::kUnchanged;
};

// The matched kernels' time on each side: each group's median times its baseline launch count
// (the same weight on both sides, so a different number of launches captured is no change).
struct OverallDiff {
  double baseline_us = 0, candidate_us = 0;
  std::optional<double> change_pct;
  Change change = Change::kUnchanged;  // against the threshold (regression/improvement/unchanged)
};

struct CaptureDiff {
  std::vector<KernelDiff> kernels;  // regressions first, then by |change|
  size_t regressions = 0, improvements = 0;
  size_t not_enough_samples = 0;
  size_t in_both = 0;  // kernel groups both captures have: 0 means nothing was compared
  OverallDiff overall;
  // What fails the gate: a kernel regression or a time-weighted regression of the whole.
  bool regressed() const { return regressions > 0 || overall.change == Change::kRegression; }
};

CaptureDiff diff_captures(const model::Report& baseline, const model::Report& candidate,
                          const DiffOptions& options, const AnalysisConfig& config);

}  // namespace kprof::analysis
