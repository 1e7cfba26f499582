// What fixing each kernel could buy end to end: the captured launches grouped by kernel and
// launch configuration, each group's trace time multiplied by how far the resource that binds it
// is from what that resource can reach on this GPU, ranked by that estimated saving. The
// evidence and the assumptions of every figure travel with it (FixGroup::evidence).
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "analysis/verdict.h"
#include "model/report.h"
#include "timeline/trace_join.h"

namespace kprof::timeline {

// One captured launch with its verdict and its trace share (nullopt: the trace never ran it).
struct CapturedLaunch {
  const model::Kernel* kernel = nullptr;
  const analysis::KernelVerdict* verdict = nullptr;
  std::optional<KernelShare> share;
  std::string report_path;  // the capture it came from: where `kprof source` finds its hot spots
};

// Replayed durations further than this from the trace's (ncu ÷ trace outside 0.8–1.25) say the
// counters may not describe the kernel as it served: cache state, clocks, contention.
inline constexpr double kFidelityLow = 0.8, kFidelityHigh = 1.25;

// The row of a group split per batch bucket that holds its launches outside every bucket.
inline constexpr std::string_view kOutsideBuckets = "outside graphs";

struct FixGroup {
  std::string kernel;  // the capture's display name
  // The batch bucket (graph_node_context.h) whose graph replays this row's trace time is, where
  // the trace's node table splits the group per bucket; kOutsideBuckets for the rest; "" for a
  // group not split.
  std::string bucket;
  std::string canonical;  // the name as traces are matched by (model::canonical_kernel_name)
  model::Dim3 grid, block;
  std::uint64_t launches_captured = 0;
  double captured_mean_us = 0, captured_min_us = 0, captured_max_us = 0;
  std::map<std::string, std::uint64_t> verdicts;  // roofline class -> launches
  // From the trace (by name and configuration, or by name split over the name's groups by
  // captured time when the trace has no configurations).
  std::uint64_t trace_launches = 0;
  double trace_total_us = 0;
  double fraction_of_pipeline = 0;  // trace time ÷ the trace's GPU span
  // The binding resource and how far it is from its attainable rate (both % of the datasheet
  // peak, or of the measured ceiling where a calibration measured one).
  std::string bound_by;  // "dram", "tensor", … ("" when the capture cannot say)
  std::string roofline;  // the launches' most common class
  std::optional<double> achieved_pct, attainable_pct;
  std::string attainable;  // what the attainable figure is: "measured dram_bandwidth …", "peak"
  std::optional<double> saving_fraction;      // 1 − achieved ÷ attainable, ≥ 0
  std::optional<double> estimated_saving_us;  // over the trace
  // base ÷ (base − saving), base the steps' summed GPU spans (the pipeline without steps).
  std::optional<double> estimated_step_speedup;
  std::optional<double> replay_fidelity;  // captured mean ÷ trace mean
  bool fidelity_flagged = false;
  std::vector<std::string> evidence;  // the figures and assumptions the estimate rests on
  // Where in the kernel: `kprof source REPORT -k NAME` for its first captured launch's capture
  // (the instructions with the most stall samples, where the capture kept source counters).
  std::vector<std::string> hot_spots_argv;
  std::string capture;  // the report its first captured launch came from
  // Its trace launches take at most kNearFloorFactor × this GPU's kernel floor (KernelFloor) on
  // average: a faster kernel cannot save much, only fusing it into a neighbour or removing it
  // can. No rate estimate; listed apart ("fuse or remove").
  bool near_floor = false;
};

// The least time a kernel launch takes on this GPU: kprof calibrate's back-to-back launch time of
// an empty kernel where a calibration of this GPU is given, else the shortest kernel of the trace.
struct KernelFloor {
  double us = 0;
  std::string source;  // "kprof calibrate's launch_back_to_back (…)", "the trace's shortest kernel"
};
inline constexpr double kNearFloorFactor = 2;

// Whether kernels matter at all, before which kernel: the steps' verdict (kprof budget's).
struct StepGate {
  std::uint64_t steps = 0, host_bound_steps = 0, kernel_bound_steps = 0;
  double wall_us = 0;  // the steps' mean wall span (the longest device's)
  double busy_us = 0;  // that device's mean GPU busy time in it
  double busy_fraction() const { return wall_us > 0 ? busy_us / wall_us : 0; }
  bool host_bound() const { return steps > 0 && host_bound_steps * 2 > steps; }
};

// The command that lists a kernel's hot spots: kprof source REPORT -k REGEX, the kernel's function
// name up to its template arguments, regex characters escaped and anchored (-k matches part of a
// name: reduce_kernel must not select splitKreduce_kernel): ^NAME$ for a bare function name.
std::vector<std::string> hot_spots_argv(const std::string& report_path,
                                        const std::string& kernel_name);

// A decode step in serving units, where every step's name carries its batch (step_batch): each
// of the step's decode requests gets its next token(s) from it, so the time per output token is
// the step's time ÷ the tokens per request, and the throughput its tokens ÷ its time.
struct ServingUnits {
  std::uint64_t steps = 0;
  double requests_per_step = 0, tokens_per_step = 0;  // means over the steps
  double step_ms = 0, tpot_ms = 0, tokens_per_s = 0;
  // With every estimated saving taken (the fix list's total per step).
  double fixed_step_ms = 0, fixed_tpot_ms = 0, fixed_tokens_per_s = 0;
  std::string basis;  // the first step's name, which the batch was read from
};

struct FixList {
  std::vector<FixGroup> groups;  // by estimated saving, largest first; unestimated last
  double pipeline_us = 0;        // the trace's GPU span
  double total_saving_us = 0;    // groups are disjoint trace time: their savings add up
  std::optional<double> total_step_speedup;
  std::uint64_t steps = 0;  // steps the trace holds (kprof budget's), 0 when it has none
  double step_us = 0;       // their mean GPU span: the kernels' time a fix shortens
  // Their mean wall span (kprof budget's): what a step takes end to end, host time included —
  // the serving units' step time. 0 when unknown (step_us then stands for it).
  double step_wall_us = 0;
  // Devices a step ran on (its mean): side by side, each takes its share of the savings off the
  // wall time; 1 when unknown.
  double step_devices = 1;
  std::optional<ServingUnits> serving;  // decode steps whose names carry their batch
  KernelFloor floor;
  std::optional<StepGate> gate;
  // How much of the trace the captures cover: the kernels' summed trace time, the part of it the
  // joined groups carry, and the trace's longest kernels no captured launch was joined to
  // (canonical name, time; at most five) — a kernel worth fixing the capture missed, or one it
  // holds under a spelling the join did not find, is said before any row.
  double trace_kernel_us = 0, joined_kernel_us = 0;
  std::vector<std::pair<std::string, double>> unjoined_trace_kernels;
};

// The serving figures of steps named as an engine names them (their names in order; the step
// time the fix list's mean wall span, else its mean GPU span), or nullopt when a step's name
// carries no batch or a step is not decode-only (prefill and mixed steps have no single time per
// token).
std::optional<ServingUnits> serving_units(const std::vector<std::string>& step_names,
                                          const FixList& list);

// steps/step_us: the trace's steps as kprof budget finds them (0 when it found none).
// floor: the GPU's kernel floor (none: no group is judged near it, no estimate bounded by it).
FixList build_fix_list(const std::vector<CapturedLaunch>& launches, double pipeline_us,
                       std::uint64_t steps, double step_us, const KernelFloor& floor = {});

}  // namespace kprof::timeline
