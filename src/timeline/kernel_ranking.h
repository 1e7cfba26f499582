// Wall-clock ranking of GPU work in a trace: per kernel (normalised name) and per pipeline
// stage, built from a stream of trace events without holding them.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "analysis/stages.h"
#include "importers/common/trace_sink.h"
#include "timeline/interval_union.h"
#include "timeline/launch_join.h"

namespace kprof::timeline {

// "void at::native::foo<float>(int, float*)" -> "at::native::foo<float>": the return type and
// the parameter list go, template arguments stay (they tell instantiations apart).
std::string normalize_kernel_name(std::string_view name);

// Time one kind of communication kernel ran on a device, and how much of it nothing else hid.
struct CommunicationTime {
  double time_us = 0;     // union of that kind's kernel intervals
  double exposed_us = 0;  // the device ran that kind alone: busy minus the union of the rest
  double overlapped_us() const { return time_us - exposed_us; }
};

struct KernelStats {
  std::string name;
  std::string kind;  // kernel, memcpy, memset
  std::string stage;
  // What decided the stage (analysis::stage_source_name: "name", "operator", "step", "none")
  // and the evidence in words ("name", "operator aten::mm", "no rule matched the name").
  std::string stage_source;
  std::string stage_evidence;
  // The stage rests on a code generator's name that names no operation (a rule marked
  // "generated" matched: nvFuser's, TileLang's main_kernel) and no other evidence decided it.
  bool stage_unresolved = false;
  // The name leaves the stage to other evidence: it names no operation (no rule, or a generated
  // one's) or says attention without the phase. Only these kernels are restaged by their
  // launches (restage_by_launches): a name that names its operation is at least as fine as its
  // operator (cuBLASLt's split-K reduce under aten::addmm, FlashAttention's split-KV under SDPA).
  bool stage_needs_evidence = false;
  // It moves data between GPUs: the stage table's collectives, and expert-parallel all-to-all
  // kernels, whose stage stays MoE dispatch/combine (StageTable::is_communication).
  bool communication = false;
  analysis::CommunicationKind communication_kind = analysis::CommunicationKind::kNone;
  std::uint64_t count = 0;
  double total_us = 0, min_us = 0, max_us = 0;
  double share_of_gpu_time = 0;  // of the summed durations of all GPU activities
  // Of the trace's span (first event start to last event end) times the number of devices: each
  // device's wall counts once, so work on two GPUs is not "more than 100 % of wall".
  double share_of_wall = 0;
};

// One device's accounting (a trace without device ids is device -1). Communication is what the
// stage table calls communication: its "communication" stage (NCCL, custom all-reduce, multimem)
// and expert-parallel all-to-all (DeepEP, pplx, mori; their stage stays MoE's); exposed
// communication is the time this device runs only communication, no other work overlapping it.
struct DeviceStats {
  std::int64_t device = -1;
  std::uint64_t gpu_events = 0, kernel_events = 0;
  double gpu_time_us = 0;               // summed durations of its kernels, memcpy and memset
  double kernel_time_us = 0;            // summed durations of its kernels alone
  double span_us = 0;                   // its first activity's start to its last activity's end
  double busy_us = 0;                   // union of its activities' intervals
  double busy_fraction = 0;             // busy / span
  double communication_us = 0;          // summed durations of its communication kernels
  double exposed_communication_us = 0;  // busy minus the union of its other work
  // The same per kind: collectives, and expert-parallel all-to-all (whose stage stays MoE's).
  CommunicationTime collective, expert_parallel;
  std::uint64_t late_intervals = 0;  // see IntervalUnion: non-zero makes busy a lower bound
};

struct StageStats {
  std::string stage;
  std::uint64_t count = 0;
  double total_us = 0;
  double share_of_gpu_time = 0;
};

struct Ranking {
  std::vector<KernelStats> kernels;  // by total time, largest first
  std::vector<StageStats> stages;    // likewise
  double gpu_time_us = 0;            // sum of GPU activity durations
  double wall_us = 0;                // span of all complete events in the trace
  std::vector<DeviceStats> devices;  // by device id
  std::uint64_t gpu_events = 0, kernel_events = 0, memcpy_events = 0, memset_events = 0;
  std::uint64_t trace_events = 0;
  // GPU work enqueued before the profiler's window (its correlation id is below every launch the
  // trace recorded in its process: the previous iteration's collectives, still running when the
  // window opened): left out of everything above, counted here.
  std::uint64_t pre_window_activities = 0;
  double pre_window_us = 0;
  // Launch calls whose work no GPU record carries (records the profiler dropped).
  LaunchRecords launch_records;
};

// A trace's launches restage its kernels whose names leave the stage open
// (KernelStats::stage_needs_evidence; kprof rank): where the operators that launched such a
// kernel (OpAttribution::launched_kernels, with a graph capture's operators for a replay) or its
// steps' batches decide most of its time (StageTable::decide_launch, stage_in_step), the kernel
// takes that stage, with the evidence; the stage totals follow. Kernels whose launches the trace
// does not join keep their name's stage.
struct LaunchedKernel;
// The normalised names of the kernels restage_by_launches may restage.
std::set<std::string, std::less<>> kernels_needing_evidence(const Ranking& ranking);
void restage_by_launches(Ranking& ranking, const std::vector<LaunchedKernel>& launched,
                         const analysis::StageTable& stages);

// Of the GPU time, the share whose stage rests on a code generator's name alone (no operator
// or step corrected it, KernelStats::stage_unresolved): what a user should give kprof more
// evidence for.
double unresolved_stage_share(const Ranking& ranking);

// The per-stage totals (Ranking::stages) from the kernel rows' stages.
void sum_stages(Ranking& ranking);

class RankingBuilder final : public importers::TraceEventSink {
 public:
  RankingBuilder(const analysis::StageTable& stages, bool normalize_names)
      : stages_(stages), normalize_(normalize_names) {}
  void on_event(const importers::TraceEvent& event) override;
  bool wants_category(std::string_view category) const override;
  void on_span(double timestamp_us, double duration_us) override;
  // Not const: the work held back until the trace said whether it predates the window is
  // counted here.
  Ranking finish();

 private:
  const analysis::StageTable& stages_;
  bool normalize_;
  std::map<std::string, KernelStats, std::less<>> by_name_;
  // Each name as the trace spells it, to its row: normalising and finding a name of a hundred
  // characters for every kernel was a tenth of rank's time.
  struct NameHash {
    using is_transparent = void;
    std::size_t operator()(std::string_view name) const {
      return std::hash<std::string_view>{}(name);
    }
  };
  std::unordered_map<std::string, KernelStats*, NameHash, std::equal_to<>> by_raw_name_;
  struct DeviceState {
    DeviceStats stats;
    IntervalUnion all, other_than_communication;
    IntervalUnion collective, other_than_collective, expert_parallel, other_than_expert_parallel;
    double first = 0, last = 0;
  };
  std::map<std::int64_t, DeviceState> devices_;
  Ranking totals_;
  double first_start_ = 0, last_end_ = 0;
  bool any_ = false;
  void extend_span(double timestamp_us, double duration_us);
  void add_gpu_work(const importers::TraceEvent& event);
  // The row of a name not seen before (made, with its kind, stage and communication kind), and
  // what one activity adds to its row and its device.
  KernelStats& row_of(const importers::TraceEvent& event, const char* kind);
  void add_to(KernelStats& stats, const importers::TraceEvent& event);
  // Whether GPU work with this correlation id predates the window: true or false once a launch
  // of its process is known, nullopt before.
  std::optional<bool> before_window(const importers::TraceEvent& event) const;
  const std::int64_t* first_launch() const;
  // The lowest launch correlation id per process (CUPTI numbers launches in order per process).
  std::map<std::int64_t, std::int64_t> first_launch_;
  // Correlation ids seen, one bit each (they are dense, so about a bit per event): the launches'
  // per process, and those of the GPU rows that name no process. Work below the first launch
  // predates the window only where the trace records the launch of (nearly) all the work from that
  // launch on — a trace of some launch APIs only (kprof's tracer records the driver's kernel
  // launches, not cudaMemcpy) lacks launches at every id.
  struct CorrelationBits {
    std::unordered_map<std::int64_t, std::uint64_t> words;
    void set(std::int64_t id) { words[id >> 6] |= std::uint64_t{1} << (id & 63); }
    bool test(std::int64_t id) const {
      auto found = words.find(id >> 6);
      return found != words.end() && (found->second >> (id & 63) & 1) != 0;
    }
  };
  std::map<std::int64_t, CorrelationBits> launch_ids_;
  CorrelationBits work_ids_;
  // The GPU rows' ids of the rows that name their process, by process; with work_ids_ what
  // launch_records() compares the launches with.
  std::map<std::int64_t, CorrelationBits> process_work_ids_;
  // Stream captures by the correlation ids of their Begin and End calls, per (process, thread):
  // the launches between, on that thread, enqueue nothing; ids of other threads' launches in
  // between have their work, so any id in the range without a GPU record is excused.
  struct CaptureCall {
    std::int64_t process, thread, correlation;
    auto operator<=>(const CaptureCall&) const = default;
  };
  std::vector<CaptureCall> capture_begins_, capture_ends_;
  // The kernel and graph launches' ids per process: what launch_records() compares. Copies and
  // fills are left out: a zero-byte cudaMemsetAsync or cudaMemcpyAsync enqueues nothing (a
  // Kineto trace of a Hugging Face model: 49 of 51 memset calls without a row, nothing dropped).
  std::map<std::int64_t, CorrelationBits> kernel_launch_ids_;
  LaunchRecords launch_records() const;
  // Whether the trace records the launches of the work from its one process's first launch on.
  bool records_every_launch() const;
  // GPU work that arrived before any launch with a lower id than its own: held (compactly) until
  // the trace says whether it predates the window. Bounded: past kMaxHeld the rule is given up
  // and what is held is counted as it comes.
  struct HeldWork {
    std::string category, name;
    double timestamp_us, duration_us;
    std::optional<std::int64_t> device, correlation;
  };
  static constexpr std::size_t kMaxHeld = 1 << 20;
  std::vector<HeldWork> held_;
  bool holding_ = true;
  void release_held();
  void release_decided();
};

}  // namespace kprof::timeline
