// What a fix list predicted against what two traces of the program show, before and after a
// change: per kernel group the saving per step `kprof report` estimated and the change of the
// group's trace time per step, and for the step the summed prediction against the change of the
// step's GPU time. Flags the case users report most: a kernel got faster, the step did not (the
// saving went into idle — a host-bound step, a dependency wait — or was spent elsewhere).
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "timeline/trace_diff.h"

namespace kprof::timeline {

// One opportunity of a `kprof report --json` answer (kprof.analysis/1, fix_list.opportunities).
struct PredictedGroup {
  std::string kernel;     // as the report shows it
  std::string canonical;  // canonical_name: what the traces are searched for
  std::string grid, block;
  std::optional<double> saving_us_per_step;  // estimated_saving_us ÷ the report's steps
  std::string bound_by;
};

struct Prediction {
  std::string path;
  std::uint64_t steps = 0;  // the report's trace's steps (0: none, savings are per trace)
  std::optional<double> step_us;
  double total_saving_us_per_step = 0;
  std::vector<PredictedGroup> groups;
};

// Reads a `kprof report --json` answer. InputError (exit 4) naming the file for JSON that is not
// one, or a report without a fix list ("made without --trace?").
Prediction parse_prediction(const std::string& path, std::string_view text);

struct GroupOutcome {
  PredictedGroup predicted;
  std::vector<std::string> trace_names;  // the traces' kernel names it matched
  double before_us_per_step = 0, after_us_per_step = 0;
  bool in_before = false, in_after = false;
  double realised_us_per_step() const { return before_us_per_step - after_us_per_step; }
  // The kernel got faster by more than noise (≥ 5 % of its time and ≥ 1 µs a step) while the
  // step did not improve (kprof diff's Welch verdict) or kept less than half of that gain.
  bool improved_step_did_not = false;
};

struct PredictionCheck {
  std::vector<GroupOutcome> groups;  // in the report's order (largest predicted saving first)
  double predicted_step_saving_us = 0;
  // The median step's GPU span (the whole trace's GPU time without steps).
  double before_step_us = 0, after_step_us = 0;
  std::uint64_t before_steps = 0, after_steps = 0;
  bool step_improved = false;  // kprof diff's verdict for the step: improved (Welch over the steps)
  double realised_step_saving_us() const { return before_step_us - after_step_us; }
  double realised_kernel_saving_us = 0;  // summed over the predicted groups
  bool kernels_improved_step_did_not = false;
  std::vector<std::string> notes;
};

// before/after: the traces' profiles as `kprof diff` reads them; diff: their comparison.
PredictionCheck check_prediction(const Prediction& prediction, const TraceProfile& before,
                                 const TraceProfile& after, const TraceDiff& diff);

}  // namespace kprof::timeline
