// Wall-clock ranking of GPU work in a trace: per kernel (normalised name) and per pipeline
// stage, built from a stream of trace events without holding them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/stages.h"
#include "importers/common/trace_sink.h"
#include "timeline/interval_union.h"

namespace kprof::timeline {

// "void at::native::foo<float>(int, float*)" -> "at::native::foo<float>": the return type and
// the parameter list go, template arguments stay (they tell instantiations apart).
std::string normalize_kernel_name(std::string_view name);

struct KernelStats {
  std::string name;
  std::string kind;  // kernel, memcpy, memset
  std::string stage;
  // It moves data between GPUs: the stage table's collectives, and expert-parallel all-to-all
  // kernels, whose stage stays MoE dispatch/combine (StageTable::is_communication).
  bool communication = false;
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
  std::uint64_t late_intervals = 0;     // see IntervalUnion: non-zero makes busy a lower bound
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
};

class RankingBuilder final : public importers::TraceEventSink {
 public:
  RankingBuilder(const analysis::StageTable& stages, bool normalize_names)
      : stages_(stages), normalize_(normalize_names) {}
  void on_event(const importers::TraceEvent& event) override;
  bool wants_category(std::string_view category) const override;
  void on_span(double timestamp_us, double duration_us) override;
  Ranking finish() const;

 private:
  const analysis::StageTable& stages_;
  bool normalize_;
  std::map<std::string, KernelStats, std::less<>> by_name_;
  struct DeviceState {
    DeviceStats stats;
    IntervalUnion all, other_than_communication;
    double first = 0, last = 0;
  };
  std::map<std::int64_t, DeviceState> devices_;
  Ranking totals_;
  double first_start_ = 0, last_end_ = 0;
  bool any_ = false;
  void extend_span(double timestamp_us, double duration_us);
};

}  // namespace kprof::timeline
