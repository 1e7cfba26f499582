// Comparing two traces of the same program (before/after a change): per kernel (normalised name)
// and per pipeline stage, launch-duration medians and totals with Welch's t-test over the
// repeated launches; per step (as kprof budget finds steps) the GPU span before and after, and a
// verdict for the step from Welch's t-test over the steps of each side.
//
// Each side is read in one streaming pass (TraceProfileBuilder); it keeps every GPU activity's
// duration per name (medians need them) and what kprof budget keeps for steps: memory grows with
// the GPU activities of the trace, not with its bytes.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/stages.h"
#include "analysis/statistics.h"
#include "importers/common/trace_sink.h"
#include "timeline/step_budget.h"

namespace kprof::timeline {

struct TraceDiffOptions {
  double alpha = 0.01;       // a change must be significant at this level (two-sided Welch)
  double threshold_pct = 2;  // and larger than this relative change of the mean
  std::string step_regex;    // as kprof budget --step; empty: ProfilerStep#N
};

enum class TraceChange {
  kImproved,
  kRegressed,
  kNeutral,
  kNotEnoughSamples,  // fewer than two samples on a side: no noise estimate, no verdict
  kOnlyBefore,
  kOnlyAfter
};
std::string trace_change_name(TraceChange change);

struct SampleSummary {
  std::uint64_t count = 0;
  double total_us = 0, mean_us = 0;
  std::optional<double> median_us;
};

// One kernel name, stage or the step: both sides, the test and the verdict.
struct Comparison {
  std::string name;
  std::string stage;  // for kernels
  SampleSummary before, after;
  std::optional<double> change_pct;  // of the mean
  std::optional<double> p_value;     // Welch, two-sided
  TraceChange change = TraceChange::kNeutral;
};

// One side: every GPU activity's duration per normalised name, and the steps.
struct TraceProfile {
  struct Name {
    std::string stage;
    std::vector<double> durations_us;
  };
  std::map<std::string, Name> names;
  Budget budget;
  double gpu_time_us = 0;
  double kernel_time_us = 0;  // of kernels alone (gpu_time_us adds memcpy and memset)
  std::uint64_t gpu_events = 0;
};

class TraceProfileBuilder final : public importers::TraceEventSink {
 public:
  explicit TraceProfileBuilder(const analysis::StageTable& stages) : stages_(stages) {}
  void on_event(const importers::TraceEvent& event) override;
  // Throws std::invalid_argument for a step regex that does not compile.
  TraceProfile finish(const std::string& step_regex);

 private:
  const analysis::StageTable& stages_;
  BudgetBuilder budget_;
  TraceProfile profile_;
  // Each GPU activity in arrival order (the budget's order): where its duration went, so that
  // work from before the profiler's window can be taken out at finish().
  struct Arrival {
    TraceProfile::Name* name;
    std::size_t index;
    double duration_us;
    bool kernel;
  };
  std::vector<Arrival> arrivals_;
};

struct TraceDiff {
  std::vector<Comparison> kernels;  // regressions first, then by |change of the total|
  std::vector<Comparison> stages;
  Comparison step;                                      // the steps' GPU spans
  std::vector<double> before_steps_us, after_steps_us;  // each step's GPU span, in time order
  std::string before_steps, after_steps;                // how each side's steps were found
  double before_gpu_time_us = 0, after_gpu_time_us = 0;
  double before_kernel_time_us = 0, after_kernel_time_us = 0;
  std::uint64_t before_gpu_events = 0, after_gpu_events = 0;
  // GPU work from before each side's profiler window, left out of every figure
  // (Budget::pre_window).
  std::uint64_t before_pre_window = 0, after_pre_window = 0;
  double before_pre_window_us = 0, after_pre_window_us = 0;
  bool regressed() const { return step.change == TraceChange::kRegressed; }
};

TraceDiff diff_traces(const TraceProfile& before, const TraceProfile& after,
                      const TraceDiffOptions& options);

}  // namespace kprof::timeline
