// Wall-clock ranking of GPU work in a trace: per kernel (normalised name) and per pipeline
// stage, built from a stream of trace events without holding them.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "analysis/stages.h"
#include "importers/common/trace_sink.h"

namespace kprof::timeline {

// "void at::native::foo<float>(int, float*)" -> "at::native::foo<float>": the return type and
// the parameter list go, template arguments stay (they tell instantiations apart).
std::string normalize_kernel_name(std::string_view name);

struct KernelStats {
  std::string name;
  std::string kind;  // kernel, memcpy, memset
  std::string stage;
  std::uint64_t count = 0;
  double total_us = 0, min_us = 0, max_us = 0;
  double share_of_gpu_time = 0;  // of the summed durations of all GPU activities
  double share_of_wall = 0;      // of the trace's span (first event start to last event end)
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
  Ranking totals_;
  double first_start_ = 0, last_end_ = 0;
  bool any_ = false;
  void extend_span(double timestamp_us, double duration_us);
};

}  // namespace kprof::timeline
