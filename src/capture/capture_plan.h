// The cost of a capture before it runs (`kprof plan`, `capture --plan`; issue 41): the launches
// the kernel filter will profile (from a trace of the same program), the passes the preset costs,
// how long ncu holds the engine per profiled launch and in all, checked against the target's
// limits — the Kubernetes probes' budget, the serving SLO, the device memory left, a time budget
// — and, for a capture over a limit, the largest capture that fits: fewer launches, fewer
// kernels, a lighter preset, or the sister deployment.
//
// The model, per profiled launch (ncu replays one kernel at a time and holds the process):
//   replay_s = passes × (duration + save_restore_s)
//   save_restore_s = kPassFixedS + resident_GB × kPassPerGbS   (the memory ncu saves and
//                    restores around each pass, on the device while it fits in what is free)
//   replay_s = passes × duration + resident_GB × kHostBackupPerGbS   (when it does not: ncu backs
//                    the memory up in host memory and every preset costs about the same)
// the capture's wall time = kAttachS + Σ replay_s + the steps the program runs until the last
// profiled launch (skip + count launches, at the trace's launches per step) × the step's wall;
// the engine's longest stall = the replay_s of the profiled launches that fall in one step.
// Figures: bench/README.md ("Capture presets on the same kernels", "Capture cost against
// resident device memory"), H200 with ncu 2025.3.1. Pure: no I/O.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "capture/ncu_command.h"
#include "pipeline/plan_trace.h"

namespace kprof::capture {

// The model's constants, each with where it comes from.
// Save and restore per pass: a fit of bench/capture-cost.sh's per-kernel figures at 5 and 40 GB
// resident (triage 1.4/2.0 s, full 3.7/5.2 s a kernel; basic 1.3/1.9 s is under-predicted ~25 %).
inline constexpr double kPassFixedS = 0.09;
inline constexpr double kPassPerGbS = 0.0013;
// Backed up to host memory: 80 GiB resident cost 17.7 s a kernel, 100 GB 33–41 s (upper end).
inline constexpr double kHostBackupPerGbS = 0.4;
// ncu's connection, the report written and exported: not measured apart (the suite's 10 kernels
// took 9.9 s with the program's own 3 s).
inline constexpr double kAttachS = 3.0;

// How many passes a preset costs, and whether that is measured.
struct PassFigure {
  int passes = 0;
  bool measured = false;
  std::string basis;  // where the number comes from, or the assumption
};
PassFigure preset_passes(const CaptureSpec& spec);

// A Kubernetes probe's budget: the engine may not answer for period × failureThreshold seconds
// before the probe fails (liveness: a restart; readiness: the pod leaves its Service).
struct ProbeBudget {
  std::string probe;  // "liveness", "readiness"
  double period_s = 10, failure_threshold = 3, timeout_s = 1;
  std::string from;  // "Deployment ns/name, container c"
  double budget_s() const { return period_s * failure_threshold; }
};

struct PlanLimits {
  std::vector<ProbeBudget> probes;
  std::optional<double> slo_p99_ms;
  std::optional<double> budget_s;  // --budget: the whole capture's wall time
  // Device memory: the engine's resident memory (what ncu saves) and the device's size.
  std::optional<double> device_gb, resident_gb;
  std::string memory_from;  // how resident_gb was found
  bool kubernetes = false;  // the target is a Deployment (the sister is a way out)
};

// One capture the plan considers.
struct PlannedCapture {
  CaptureSpec spec;                  // preset, sections, filter, skip, count
  std::vector<std::size_t> kernels;  // indexes into the trace's kernels the filter keeps
  bool sister = false;               // on the sister deployment (no probes, no traffic)
  std::optional<double> resident_gb;
};

struct CaptureCost {
  PassFigure passes;
  std::int64_t launches = 0;    // profiled
  double replay_s_longest = 0;  // the longest replay of one profiled launch
  double ncu_wall_s = 0;        // the whole capture
  double longest_stall_s = 0;   // the most the engine is held within one step
  double steps_run = 0;         // steps the program runs until the last profiled launch
  bool host_backup = false;
  struct Kernel {
    std::size_t index = 0;
    std::int64_t launches = 0;
    double replay_s = 0;  // one launch, at its mean duration
  };
  std::vector<Kernel> kernels;
};

struct LimitCheck {
  std::string limit;  // "liveness_probe", "readiness_probe", "slo_p99", "device_memory", "budget"
  double allowed = 0, planned = 0;  // seconds (ms for slo_p99, GB for device_memory)
  std::string unit;
  bool over = false;
  std::string what;  // the limit in words, where it was read
};

struct CapturePlan {
  pipeline::PlanTrace trace;
  PlanLimits limits;
  PlannedCapture asked;
  CaptureCost cost;
  std::vector<LimitCheck> checks;
  bool over = false;
  // When over a limit: the largest capture that fits (nullopt when none does) and how it
  // differs ("fewer launches", "fewer kernels", "lighter preset", "sister deployment").
  std::optional<PlannedCapture> proposal;
  std::optional<CaptureCost> proposal_cost;
  std::vector<LimitCheck> proposal_checks;
  std::string proposal_kind;
  bool chosen = false;                   // --budget: the proposal is what capture runs
  std::vector<std::string> assumptions;  // every estimated figure, said once
};

// The plan of `asked` against `limits` on what `trace` says of the program.
CapturePlan plan_capture(const pipeline::PlanTrace& trace, const CaptureSpec& asked,
                         const PlanLimits& limits);

// The kprof options that run `capture` ("--preset triage -k 'regex' --launch-count 2").
std::string capture_options_text(const PlannedCapture& capture, const pipeline::PlanTrace& trace);

// kprof.plan/1 and the text a user reads.
nlohmann::json plan_json(const CapturePlan& plan, const std::vector<std::string>& argv);
std::string plan_text(const CapturePlan& plan);

// The plan a bundle records beside what happened: predicted against measured ncu wall time.
nlohmann::json plan_for_bundle(const CapturePlan& plan);

}  // namespace kprof::capture
