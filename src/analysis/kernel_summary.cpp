#include "analysis/kernel_summary.h"

namespace kprof::analysis {

KernelSummary summarize(const model::Report& report, const model::Kernel& kernel) {
  KernelSummary summary;
  auto take = [&](std::string_view name) {
    auto value = report.number(kernel, name);
    if (!value) summary.missing.emplace_back(name);
    return value;
  };
  summary.duration_ns = take(metric_names::kDuration);
  summary.sm_throughput_pct = take(metric_names::kSmThroughput);
  summary.memory_throughput_pct = take(metric_names::kMemoryThroughput);
  summary.dram_throughput_pct = take(metric_names::kDramThroughput);
  summary.achieved_occupancy_pct = take(metric_names::kAchievedOccupancy);
  summary.theoretical_occupancy_pct = take(metric_names::kTheoreticalOccupancy);
  summary.registers_per_thread = take(metric_names::kRegistersPerThread);
  return summary;
}

}  // namespace kprof::analysis
