// Per-step budget: is a serving step kernel-bound or host-bound? For each step, its GPU work
// (found by launch correlation, so CUDA-graph replays count too), the union of that work's
// intervals over all streams (GPU busy), the GPU span it occupies, and the host gap between.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "importers/common/trace_sink.h"

namespace kprof::timeline {

struct BudgetThresholds {
  double host_bound_below = 0.6;   // GPU busy / GPU span below: host-bound
  double kernel_bound_from = 0.9;  // at or above: kernel-bound; between: mixed
};

enum class StepVerdict { kHostBound, kKernelBound, kMixed, kNoGpuWork };
std::string step_verdict_name(StepVerdict verdict);

struct StepBudget {
  std::string name;
  std::string source;  // "cpu annotation" (launches within it) or "gpu annotation"
  double start_us = 0;
  double host_duration_us = 0;  // the annotation's own duration
  double gpu_span_us = 0;       // first GPU activity start to last end
  double gpu_busy_us = 0;       // union of GPU activity intervals
  double host_gap_us = 0;       // span - busy: GPU idle inside the step
  double busy_fraction = 0;     // busy / span
  std::uint64_t gpu_activities = 0;
  std::uint64_t kernel_launches = 0;  // launch API calls in the step
  std::uint64_t graph_launches = 0;   // cudaGraphLaunch calls in the step
  StepVerdict verdict = StepVerdict::kNoGpuWork;
  // The step's GPU time per normalised kernel name, largest first.
  std::vector<std::pair<std::string, double>> kernels;
};

struct Budget {
  std::vector<StepBudget> steps;
  std::string step_selector;  // how steps were found
  double total_busy_us = 0, total_span_us = 0;
  StepVerdict overall = StepVerdict::kNoGpuWork;
};

class BudgetBuilder final : public importers::TraceEventSink {
 public:
  void on_event(const importers::TraceEvent& event) override;
  // step_regex empty: ProfilerStep#N annotations, else the whole trace as one step.
  Budget finish(const std::string& step_regex, const BudgetThresholds& thresholds) const;

 private:
  struct Activity {
    double start, end;
    std::optional<std::int64_t> correlation;
    std::uint32_t name;  // index into names_
  };
  struct Annotation {
    std::string name;
    double start, duration;
    bool gpu_side;
  };
  struct Launch {
    double time;
    bool graph;
  };
  std::vector<Activity> activities_;
  std::vector<Annotation> annotations_;
  std::map<std::int64_t, Launch> launches_;  // correlation -> launch call
  std::vector<std::string> names_;           // distinct normalised kernel names
  std::map<std::string, std::uint32_t, std::less<>> name_ids_;
};

}  // namespace kprof::timeline
