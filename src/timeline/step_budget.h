// Per-step budget: is a serving step kernel-bound or host-bound? For each step and each device, its
// GPU work (found by launch correlation, so CUDA-graph replays count too), the union of that work's
// intervals over the device's streams (GPU busy), the GPU span it occupies, and the idle time
// between, each idle interval attributed to the host (the next item's launch call ended after the
// device had finished what it had) or to the device (the next item was already enqueued: inside a
// CUDA graph, a dependency, launch latency). Several devices are accounted apart, never merged.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "analysis/stages.h"
#include "importers/common/trace_sink.h"

namespace kprof::timeline {

struct BudgetThresholds {
  double host_bound_below = 0.6;   // GPU busy / GPU span below: host-bound
  double kernel_bound_from = 0.9;  // at or above: kernel-bound; between: mixed
};

enum class StepVerdict { kHostBound, kKernelBound, kMixed, kNoGpuWork };
std::string step_verdict_name(StepVerdict verdict);

// The step markers kprof recognises without --step, in the order it tries them: the first kind
// with a matching annotation delimits the steps. Each has the engine, the RE2 pattern and where
// the engine emits it.
struct StepMarker {
  const char* engine;
  const char* pattern;
  const char* source;
};
const std::vector<StepMarker>& builtin_step_markers();

// One device's share of a step (or, in Budget::devices, of all steps).
struct DeviceBudget {
  std::int64_t device = -1;  // -1: the trace did not say
  std::uint64_t gpu_activities = 0;
  std::uint64_t kernels = 0;  // kernel launches among the activities
  double kernel_time_us = 0;  // summed kernel durations
  double gpu_span_us = 0;     // first activity start to last end on this device
  double gpu_busy_us = 0;     // union of the activities' intervals
  double host_idle_us = 0;    // idle before work whose launch call ended late
  double device_idle_us = 0;  // idle before work already enqueued
  double busy_fraction = 0;   // busy / span
  // Time this device ran only communication kernels (the stage table's "communication"), no other
  // work overlapping them: busy minus the union of its other work. 0 without a stage table.
  double exposed_communication_us = 0;
};
struct StepBudget {
  std::string name;
  std::string source;  // "cpu annotation" (launches within it) or "gpu annotation"
  double start_us = 0;
  double host_duration_us = 0;  // the annotation's own duration
  // Summed over the step's devices (each device's span, busy and idle computed on its own).
  double gpu_span_us = 0;        // first GPU activity start to last end
  double gpu_busy_us = 0;        // union of GPU activity intervals
  double host_gap_us = 0;        // idle the host caused (the GPU waited for a launch)
  double device_idle_us = 0;     // idle with the work already enqueued (graph-internal, latency)
  double busy_fraction = 0;      // busy / span
  double host_fed_fraction = 0;  // busy / (busy + host gap): what the verdict is taken from
  double exposed_communication_us = 0;
  std::vector<DeviceBudget> devices;  // by device id
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
  double total_busy_us = 0, total_span_us = 0, total_host_gap_us = 0, total_device_idle_us = 0;
  double total_exposed_communication_us = 0;
  std::vector<DeviceBudget> devices;  // each device over all steps, by device id
  StepVerdict overall = StepVerdict::kNoGpuWork;
};

class BudgetBuilder final : public importers::TraceEventSink {
 public:
  BudgetBuilder() = default;
  // With a stage table, communication kernels are told apart (exposed communication).
  explicit BudgetBuilder(const analysis::StageTable* stages) : stages_(stages) {}
  void on_event(const importers::TraceEvent& event) override;
  // step_regex empty: the first builtin step marker that matches, else the whole trace as one
  // step.
  Budget finish(const std::string& step_regex, const BudgetThresholds& thresholds) const;

 private:
  struct Activity {
    double start, end;
    std::optional<std::int64_t> correlation;
    std::int64_t device;
    std::uint32_t name;  // index into names_
    bool kernel;
    bool communication;
  };
  // The process that recorded an annotation or a launch: a step claims only its own process's
  // launches (an export of several processes has them side by side in time).
  struct Annotation {
    std::string name;
    double start, duration;
    std::int64_t pid;
    bool gpu_side;
  };
  struct Launch {
    double time, end;
    std::int64_t pid;
    bool graph;
  };
  std::vector<Activity> activities_;
  std::vector<Annotation> annotations_;
  std::map<std::int64_t, Launch> launches_;  // correlation -> launch call
  const analysis::StageTable* stages_ = nullptr;
  std::vector<std::string> names_;   // distinct normalised kernel names
  std::vector<bool> communication_;  // per name: the communication stage
  std::map<std::string, std::uint32_t, std::less<>> name_ids_;
};

}  // namespace kprof::timeline
