// Joining profiler-trace time to ncu captures: how much of the pipeline each captured kernel
// is, and so the most that fixing it can buy end to end (Amdahl: 1 / (1 - fraction)).
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "importers/common/trace_sink.h"
#include "model/report.h"

namespace kprof::timeline {

struct TraceTime {
  double total_us = 0;
  std::uint64_t count = 0;
};

struct KernelShare {
  std::string name;  // the trace's canonical name it was matched by
  TraceTime time;
  // Of that time, what graph replays ran in each batch bucket (graph_node_context.h: a trace of
  // kprof's tracer carrying its node table), by bucket name; empty otherwise. The rest of `time`
  // ran outside graphs, or in replays the table did not place.
  std::vector<std::pair<std::string, TraceTime>> buckets;
  bool matched_launch_config = false;  // grid and block matched too, not only the name
  double fraction_of_pipeline = 0;
  double max_e2e_speedup = 1;
};

// Collects per-kernel trace time by canonical name (model/kernel_names.h) and by (name, grid,
// block), and the span of GPU work (first GPU activity start to last end), which is the pipeline
// time shares refer to.
class TraceTimeIndex final : public importers::TraceEventSink {
 public:
  void on_event(const importers::TraceEvent& event) override;
  bool wants_category(std::string_view category) const override;
  // After every event: each replayed node's time goes to its graph's batch bucket.
  void on_graph_nodes(std::shared_ptr<const importers::GraphNodeTable> table) override;

  double gpu_span_us() const { return any_ ? last_end_ - first_start_ : 0; }
  // The captured kernel's share: by name and launch configuration when the trace has that
  // configuration, else by name; nullopt when the trace never ran it.
  std::optional<KernelShare> share_of(const model::Kernel& kernel) const;
  // The traced kernel names with the most time, most first (canonical, as share_of matches).
  std::vector<std::string> longest_kernels(size_t count) const;
  // Every traced kernel name with its time, most first.
  std::vector<std::pair<std::string, TraceTime>> kernels_by_time() const;
  double kernel_time_us() const;  // the kernels' summed durations
  // The shortest kernel the trace ran (0 when none took time): a floor no kernel of this GPU and
  // driver went below in this trace.
  double shortest_kernel_us() const { return shortest_kernel_us_; }

 private:
  using LaunchConfig = std::array<std::int64_t, 6>;
  std::map<std::string, TraceTime, std::less<>> by_name_;
  std::map<std::pair<std::string, LaunchConfig>, TraceTime> by_config_;
  // Graph-replayed kernels per node id until the node table comes (one entry per node: memory
  // follows the table), then their time per bucket by name and by name and configuration.
  struct NodeTime {
    const std::string* name = nullptr;  // a key of by_name_
    LaunchConfig config{};
    TraceTime time;
  };
  std::map<std::uint64_t, NodeTime> node_time_;
  using BucketTimes = std::map<std::string, TraceTime>;
  std::map<std::string, BucketTimes, std::less<>> buckets_by_name_;
  std::map<std::pair<std::string, LaunchConfig>, BucketTimes> buckets_by_config_;
  std::map<std::string, std::string, std::less<>> canonical_names_;  // trace spelling -> canonical
  double first_start_ = 0, last_end_ = 0;
  double shortest_kernel_us_ = 0;
  bool any_ = false;
};

}  // namespace kprof::timeline
