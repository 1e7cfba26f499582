// The per-kernel numbers `kprof analyze` shows first. Pure functions over the report model.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "model/report.h"

namespace kprof::analysis {

// Metric names behind each summary field (ncu's SpeedOfLight, Occupancy, LaunchStats sections).
namespace metric_names {
inline constexpr std::string_view kDuration = "gpu__time_duration.sum";
inline constexpr std::string_view kSmThroughput =
    "sm__throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kMemoryThroughput =
    "gpu__compute_memory_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kDramThroughput =
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed";
inline constexpr std::string_view kAchievedOccupancy =
    "sm__warps_active.avg.pct_of_peak_sustained_active";
inline constexpr std::string_view kTheoreticalOccupancy = "sm__maximum_warps_per_active_cycle_pct";
inline constexpr std::string_view kRegistersPerThread = "launch__registers_per_thread";
}  // namespace metric_names

struct KernelSummary {
  std::optional<double> duration_ns;
  std::optional<double> sm_throughput_pct;
  std::optional<double> memory_throughput_pct;
  std::optional<double> dram_throughput_pct;
  std::optional<double> achieved_occupancy_pct;
  std::optional<double> theoretical_occupancy_pct;
  std::optional<double> registers_per_thread;
  // Metric names of the fields above that the capture did not collect: missing, never zero.
  std::vector<std::string> missing;
};

KernelSummary summarize(const model::Report& report, const model::Kernel& kernel);

}  // namespace kprof::analysis
