// Per-step budget: is a serving step kernel-bound or host-bound? For each step and each device, its
// GPU work (found by launch correlation, so CUDA-graph replays count too), the union of that work's
// intervals over the device's streams (GPU busy), measured over the step's wall span (annotation
// start to the later of its end and the last GPU work; the GPU span, first to last work, kept
// beside it), and the idle time in it, each idle interval attributed to the host (the next item's
// launch call ended after the device had finished what it had; before the first item and after
// the last), to the device (the next item was already enqueued: inside a CUDA graph, launch
// latency) or to a stream wait (dependency). Several devices are accounted apart, never merged.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/stages.h"
#include "importers/common/trace_sink.h"
#include "timeline/kernel_ranking.h"  // CommunicationTime
#include "timeline/launch_join.h"

namespace kprof::timeline {

struct BudgetThresholds {
  double host_bound_below = 0.6;   // GPU busy / GPU span below: host-bound
  double kernel_bound_from = 0.9;  // at or above: kernel-bound; between: mixed
};

// kDependencyBound: the device sat idle with the step's work enqueued behind a stream wait
// (cudaStreamWaitEvent and kin) longer than the host kept it waiting. kGraphCapture: a step that
// captures a CUDA graph (a cudaStreamEndCapture in it; its launches between BeginCapture and
// EndCapture run nothing) measures capture, not serving; it is left out of the totals.
// kTransferBound: the device was kept fed (not host- or dependency-bound) but more than
// kTransferBoundShare of its busy time ran copies or memsets and no kernel: faster kernels will
// not shorten the step; pinning, overlapping or avoiding the copies will.
enum class StepVerdict {
  kHostBound,
  kKernelBound,
  kMixed,
  kNoGpuWork,
  kDependencyBound,
  kGraphCapture,
  kTransferBound
};
inline constexpr double kTransferBoundShare = 0.5;
std::string step_verdict_name(StepVerdict verdict);

// Whether an annotation (NVTX or record_function range) names one-time compilation or warm-up:
// nvFuser's KernelExecutor::compileFusion / executor_utils::NVRTC / GpuLower, NVRTC itself,
// Inductor's compile_fx and Triton compilation or autotuning, dynamo's compile, cuDNN's and
// cuBLAS(Lt)'s heuristics or algorithm searches.
bool names_compilation(std::string_view annotation);

// The step markers kprof recognises without --step, in the order it tries them: the first kind
// with a matching annotation delimits the steps. Each has the engine, the RE2 pattern and where
// the engine emits it.
struct StepMarker {
  const char* engine;
  const char* pattern;
  const char* source;
};
const std::vector<StepMarker>& builtin_step_markers();

// The batch an engine's step name carries: vLLM's execute_context_C(T)_generation_G(T) (C
// prefill requests, G decode requests generating T tokens in the step) and SGLang's
// step[decode bs=N] / step[prefill bs=N …]. nullopt for a name that says nothing of it
// (ProfilerStep#N, execute_new_N_cached_M, step[idle], a user's annotation).
struct StepBatch {
  std::uint64_t prefill_requests = 0;
  std::uint64_t decode_requests = 0;
  std::uint64_t decode_tokens = 0;  // generated in the step (more than requests when speculating)
  bool decode_only() const { return decode_requests > 0 && prefill_requests == 0; }
};
std::optional<StepBatch> step_batch(const std::string& name);

// One device's share of a step (or, in Budget::devices, of all steps).
struct DeviceBudget {
  std::int64_t device = -1;  // -1: the trace did not say
  std::uint64_t gpu_activities = 0;
  std::uint64_t kernels = 0;  // kernel launches among the activities
  double kernel_time_us = 0;  // summed kernel durations
  double gpu_span_us = 0;     // first activity start to last end on this device
  // The step's wall span on this device (StepBudget::wall_start_us to the later of the step
  // annotation's end and this device's last activity): the GPU span with the idle before the
  // first activity and after the last one. Equal to gpu_span_us for the whole-trace step.
  double wall_span_us = 0;
  double gpu_busy_us = 0;     // union of the activities' intervals
  double kernel_busy_us = 0;  // union of the kernels' intervals alone (TensorBoard's GPU busy)
  double host_idle_us = 0;    // idle before work whose launch call ended late
  double device_idle_us = 0;  // idle before work already enqueued
  // Of the idle above: from the wall start to the first activity (booked host gap, dependency
  // wait or device-side idle like any other interval; device-side while work from before the
  // profiler's window still ran), and from the last activity's end to the annotation's end (the
  // host was still in the step: host gap). Beyond the annotation's end, to the step's last work on
  // another device, the device waited on the others: device-side idle.
  double idle_before_first_us = 0;
  double idle_after_last_us = 0;
  double host_gap_before_first_us = 0;  // of idle_before_first_us, the part booked host gap
  // Idle before work that was enqueued behind a stream wait: the part of an idle interval after
  // the work was ready (its launch call returned; a graph's node: the cudaGraphLaunch began),
  // when longer than kDependencyWaitFloorUs and a wait was issued for its stream (or on the
  // launching thread, where the trace does not say the stream) since the stream's previous work.
  double dependency_wait_us = 0;
  // Time in the step's wall span, between its own work, that the device ran GPU work of no step
  // of this one (enqueued before the profiler's window, launched outside every step, another
  // process's): not idle — neither the host's gap nor a wait —, and not the step's busy time.
  double other_work_us = 0;
  double busy_fraction = 0;           // busy / (wall span - other work)
  double gpu_span_busy_fraction = 0;  // busy / GPU span
  // Time this device ran only communication kernels (the stage table's "communication"), no other
  // work overlapping them: busy minus the union of its other work. 0 without a stage table.
  double exposed_communication_us = 0;
  // The same per kind: collectives, and expert-parallel all-to-all (whose stage stays MoE's).
  CommunicationTime collective, expert_parallel;
};
// Idle shorter than this after work was ready is launch latency, not a wait (HIP's and CUDA's
// launch latencies seen in the traces kprof was checked on are 4-15 us).
inline constexpr double kDependencyWaitFloorUs = 20;

// One idle interval booked as a dependency wait, with what the trace shows of it.
struct DependencyWait {
  std::int64_t device = -1;
  std::optional<std::int64_t> stream;
  double idle_from_us = 0;   // the device ran out of work
  double ready_at_us = 0;    // the next work was ready (launch returned): the wait began
  double waited_us = 0;      // the interval's part after the next work was ready
  std::int64_t process = 0;  // the process that launched the next work
  std::string next_work;     // the work that then ran (normalised name)
  std::string wait_call;     // "Stream Wait Event" (cuda_sync), "cudaStreamWaitEvent", …
  double wait_call_at_us = 0;
  // A blocking host call spanning at least half the wait (hipMemcpyWithStream,
  // cudaStreamSynchronize…): the host was waiting for the device, not the device for the host.
  std::string blocking_call;
};

// What a device waited for during an idle interval inside a step (the classes DeviceBudget sums);
// kOtherWork: not idle at all — the device ran work outside the step (DeviceBudget::other_work_us).
enum class IdleKind { kHostGap, kDeviceIdle, kDependencyWait, kOtherWork };
// "host gap", "device-side idle", "dependency wait", "other work"
std::string idle_kind_name(IdleKind kind);

// One idle interval of a device inside a step, kept with BudgetBuilder::keep_timeline(): a step's
// intervals of one kind add up to its host_gap_us, device_idle_us or dependency_wait_us.
struct IdleInterval {
  std::int64_t device = -1;
  double from_us = 0, to_us = 0;
  IdleKind kind = IdleKind::kHostGap;
};

// One GPU activity as the trace recorded it (BudgetBuilder::keep_timeline()), for drawing the
// timeline the budget was taken over: `kprof report --annotate` and the HTML page's step.
struct TimelineItem {
  std::string name;      // as the trace spells it
  std::string category;  // "kernel", "gpu_memcpy", "gpu_memset"
  std::int64_t device = -1;
  std::optional<std::int64_t> stream;
  double start_us = 0, end_us = 0;
  // The trace's own duration: end_us − start_us loses digits at the trace's absolute times.
  double duration_us = 0;
  std::optional<std::int64_t> grid[3], block[3];
};

struct StepBudget {
  std::string name;
  std::string source;  // "cpu annotation" (launches within it) or "gpu annotation"
  double start_us = 0;
  double host_duration_us = 0;  // the annotation's own duration
  // Where the step's wall span begins: the annotation's start, or the end of the previous step of
  // its process (its annotation's end or its last GPU work, the later) when that is later — the
  // steps of a pipelined engine overlap, and no time is booked to two steps.
  double wall_start_us = 0;
  double wall_end_us = 0;  // the latest end of the wall span over the step's devices
  // Summed over the step's devices (each device's span, busy and idle computed on its own).
  double wall_span_us = 0;    // DeviceBudget::wall_span_us summed
  double gpu_span_us = 0;     // first GPU activity start to last end
  double gpu_busy_us = 0;     // union of GPU activity intervals
  double kernel_busy_us = 0;  // union of kernel intervals alone
  double idle_before_first_us = 0, idle_after_last_us = 0;
  double host_gap_before_first_us = 0;
  double host_gap_us = 0;         // idle the host caused (the GPU waited for a launch)
  double device_idle_us = 0;      // idle with the work already enqueued (graph-internal, latency)
  double dependency_wait_us = 0;  // idle behind a stream wait (DeviceBudget::dependency_wait_us)
  double other_work_us = 0;       // the device ran work of no step (DeviceBudget::other_work_us)
  // GPU work launched after the step's annotation closed and before its process's next step
  // opened (vLLM V1 samples after execute_model's range): counted in this step, its work and busy
  // time; here how much of it there was (summed durations).
  std::uint64_t between_steps_activities = 0;
  double between_steps_us = 0;
  double busy_fraction = 0;           // busy / (wall span - other work)
  double gpu_span_busy_fraction = 0;  // busy / GPU span (what kprof reported before the wall span)
  // busy / (busy + host gap + dependency wait): what the verdict is taken from.
  double host_fed_fraction = 0;
  std::vector<DependencyWait> dependency_waits;  // the longest first, at most 10
  double exposed_communication_us = 0;
  CommunicationTime collective, expert_parallel;
  std::vector<DeviceBudget> devices;  // by device id
  std::uint64_t gpu_activities = 0;
  std::uint64_t kernel_launches = 0;  // launch API calls in the step
  std::uint64_t graph_launches = 0;   // cudaGraphLaunch calls in the step
  // Launch calls made inside a stream capture (they enqueue nothing), and captures ended.
  std::uint64_t captured_launches = 0;
  std::uint64_t graph_captures = 0;
  StepVerdict verdict = StepVerdict::kNoGpuWork;
  // The step's GPU time per normalised kernel name, largest first.
  std::vector<std::pair<std::string, double>> kernels;
  // With BudgetBuilder::keep_timeline() only: the step's GPU work (indexes into Budget::timeline,
  // by device, then start) and its idle intervals per device, in time order.
  std::vector<std::size_t> work;
  std::vector<IdleInterval> idle;
};

// A repeated top-level annotation considered for the steps when the trace has no engine step
// marker (BudgetBuilder::finish without a step regex), with the GPU work its ranges hold.
struct StepCandidate {
  std::string annotation;
  std::uint64_t ranges = 0;
  std::uint64_t launches = 0;        // launch calls inside the ranges (same process)
  std::uint64_t gpu_activities = 0;  // GPU work those launches enqueued
  double gpu_time_us = 0;            // its summed durations
  // All GPU work launched from the first range's start to the last one's end (the ranges'
  // processes), and the share of it the ranges' own launches carry.
  double extent_gpu_time_us = 0;
  double gpu_time_share = 0;
  bool accepted = false;
};
// A repeated annotation is taken for the steps only when the GPU work launched inside its ranges
// is at least this share of the GPU work launched from its first range's start to its last one's
// end. Steps are meant to hold the work of the stretch they mark: below half, most of what the
// device did there lies between them, and they are a side detail (a side-stream all-gather
// wrapped 10 times, 10 of 13,818 GPU activities, read as "busy 0.7 %" on a device 89 % busy). A
// loop annotated whole holds all of it; warm-up and weight loading before the first range (a
// program profiled whole) do not count against it.
inline constexpr double kMinStepGpuTimeShare = 0.5;

// How the steps were found, for the JSON: "engine step annotations", "--step", "repeated
// annotation" or "whole trace"; the repeated annotations weighed (accepted or not) with their
// evidence, and what the steps hold of the trace's GPU time.
struct StepChoice {
  std::string method;
  std::string engine;   // the engine whose marker matched ("engine step annotations")
  std::string pattern;  // the marker's or --step's regex
  std::string reason;   // for the whole trace: why no step annotation was used
  std::vector<StepCandidate> candidates;
  double trace_gpu_time_us = 0;  // all GPU work less that before the profiler's window
  double steps_gpu_time_us = 0;  // the GPU work the steps claimed (between-steps work included)
};

struct Budget {
  std::vector<StepBudget> steps;
  std::string step_selector;  // how steps were found
  StepChoice step_choice;     // the same, with its evidence
  double total_busy_us = 0, total_span_us = 0, total_host_gap_us = 0, total_device_idle_us = 0;
  double total_wall_span_us = 0;  // total_span_us is the GPU spans' sum
  double total_idle_before_first_us = 0, total_idle_after_last_us = 0;
  double total_host_gap_before_first_us = 0;
  double total_kernel_busy_us = 0;
  double total_exposed_communication_us = 0;
  double total_dependency_wait_us = 0;
  double total_other_work_us = 0;
  // GPU work launched between a step's annotation and its process's next step, counted in the
  // step it follows (StepBudget::between_steps_*), summed over the steps.
  std::uint64_t between_steps_activities = 0;
  double between_steps_us = 0;
  // Launched GPU work no step claimed (before the first step, after the last, a process without
  // steps), work before the window left out: in no step's figures.
  std::uint64_t outside_steps_activities = 0;
  double outside_steps_us = 0;
  // One-time compilation and warm-up the trace's own ranges name (nvFuser's compileFusion and
  // NVRTC, Inductor/Triton compilation and autotuning, torch.compile/dynamo, cuDNN/cuBLAS
  // heuristics): the union of those ranges inside the judged steps' wall spans, and the ranges
  // by name (the outermost of nested ones), the longest first, at most 5.
  double compilation_us = 0;
  struct CompilationRange {
    std::string name;
    std::uint64_t count = 0;
    double time_us = 0;
  };
  std::vector<CompilationRange> compilation_ranges;
  CommunicationTime total_collective, total_expert_parallel;
  // GPU work enqueued before the profiler's window: its correlation id is below every launch the
  // trace recorded in its process (the previous iteration's collectives, still running when the
  // window opened). No step claims it (its launch is not in any), and the whole-trace step leaves
  // it out; counted here.
  std::uint64_t pre_window_activities = 0;
  double pre_window_us = 0;  // their summed durations
  // Per GPU activity in the order the builder received them: enqueued before the window.
  std::vector<bool> pre_window;
  // Launch calls whose work no GPU record carries (records the profiler dropped): the busy time
  // and the verdicts rest on the work it kept.
  LaunchRecords launch_records;
  std::uint64_t capture_steps = 0;    // steps judged kGraphCapture, left out of the totals
  std::vector<DeviceBudget> devices;  // each device over all steps, by device id
  StepVerdict overall = StepVerdict::kNoGpuWork;
  // With BudgetBuilder::keep_timeline() only: every GPU activity of the trace, in trace order.
  std::vector<TimelineItem> timeline;
};

class BudgetBuilder final : public importers::TraceEventSink {
 public:
  BudgetBuilder() = default;
  // With a stage table, communication kernels are told apart (exposed communication).
  explicit BudgetBuilder(const analysis::StageTable* stages) : stages_(stages) {}
  // Also keep the GPU timeline itself (Budget::timeline, StepBudget::work and idle): what drawing
  // it needs, at the cost of holding every activity's name.
  void keep_timeline() { keep_timeline_ = true; }
  void on_event(const importers::TraceEvent& event) override;
  // GPU work, launch and synchronisation calls, annotations: the reader hands the rest (CPU
  // operators, Python frames, flows: over half of a PyTorch trace's bytes) over unparsed.
  bool wants_category(std::string_view category) const override;
  // step_regex empty: the first builtin step marker that matches, else the whole trace as one
  // step.
  Budget finish(const std::string& step_regex, const BudgetThresholds& thresholds) const;

 private:
  // What the budget keeps of each GPU activity and launch call until finish() — a 10 GB trace has
  // millions of each, so 32 bytes apiece: what repeats (the device, stream and process of the
  // work, the thread of a call) is interned, the communication kind is the name's.
  struct Lane {
    std::int64_t device;
    std::optional<std::int64_t> stream;
    std::optional<std::int64_t> process;  // where the trace says (see launch_join.h)
    auto operator<=>(const Lane&) const = default;
  };
  struct Activity {
    double start, end;
    std::int64_t correlation;  // when has_correlation
    std::uint32_t lane;        // index into lanes_
    std::uint32_t name : 30;   // index into names_
    std::uint32_t kernel : 1;
    std::uint32_t has_correlation : 1;
    std::optional<std::int64_t> correlation_id() const {
      return has_correlation ? std::optional<std::int64_t>(correlation) : std::nullopt;
    }
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
    std::int64_t correlation;
    std::uint32_t thread;  // index into threads_: (pid, tid)
    bool graph;
    LaunchKind kind;
  };
  // A stream wait as the trace shows it: a GPU-side cuda_sync row of the waiting stream, or a
  // runtime call on the launching thread (HIP and CUDA without cuda_sync events name no stream).
  struct StreamWait {
    double time;
    std::int64_t device;    // cuda_sync rows
    std::int64_t stream;    // cuda_sync rows; -1 for a runtime call
    std::int64_t pid, tid;  // runtime calls
    std::uint32_t name;     // index into call_names_
  };
  // Host calls that block (synchronize, synchronous copies) and stream-capture begin/end calls.
  struct HostCall {
    double start, end;
    std::int64_t pid, tid;
    std::uint32_t name;
  };
  std::vector<Activity> activities_;
  std::vector<Annotation> annotations_;
  std::vector<Launch> launches_;  // joined to activities_ by (process, correlation id)
  std::vector<Lane> lanes_;
  std::map<Lane, std::uint32_t> lane_ids_;
  std::vector<std::pair<std::int64_t, std::int64_t>> threads_;  // (pid, tid)
  std::map<std::pair<std::int64_t, std::int64_t>, std::uint32_t> thread_ids_;
  std::uint32_t last_lane_ = 0, last_thread_ = 0;
  std::uint32_t lane(const importers::TraceEvent& event);
  std::uint32_t thread(std::int64_t pid, std::int64_t tid);
  std::int64_t pid_of(const Launch& launch) const { return threads_[launch.thread].first; }
  std::int64_t tid_of(const Launch& launch) const { return threads_[launch.thread].second; }
  const Lane& lane_of(const Activity& activity) const { return lanes_[activity.lane]; }
  std::vector<StreamWait> gpu_waits_, host_waits_;
  std::vector<HostCall> blocking_calls_, capture_begins_, capture_ends_;
  std::vector<std::string> call_names_;
  std::map<std::string, std::uint32_t, std::less<>> call_name_ids_;
  std::uint32_t call_name(std::string_view name);
  // The steps of a program that repeats an annotation of its own (see the .cpp), and how they
  // were found; none when nothing repeats or no candidate holds kMinStepGpuTimeShare of the GPU
  // time. Each candidate weighed goes into `choice`. `launch_of`: each activity's launch call;
  // `pre_window`: activities enqueued before the profiler's window (in no step).
  std::vector<const Annotation*> repeated_annotation(const std::vector<std::uint32_t>& launch_of,
                                                     const std::vector<bool>& pre_window,
                                                     StepChoice* choice) const;
  const analysis::StageTable* stages_ = nullptr;
  bool keep_timeline_ = false;
  std::vector<TimelineItem> timeline_;                      // parallel to activities_ when kept
  std::vector<std::string> names_;                          // distinct normalised kernel names
  std::vector<analysis::CommunicationKind> communication_;  // per name
  std::map<std::string, std::uint32_t, std::less<>> name_ids_;
  // The names as the trace spells them, to their index: normalising each activity's name was a
  // tenth of the time of reading a trace.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const {
      return std::hash<std::string_view>{}(name);
    }
  };
  std::unordered_map<std::string, std::uint32_t, NameHash, std::equal_to<>> raw_name_ids_;
};

}  // namespace kprof::timeline
