#include "timeline/kernel_ranking.h"

#include <algorithm>

namespace kprof::timeline {

std::string normalize_kernel_name(std::string_view name) {
  if (name.rfind("void ", 0) == 0) name.remove_prefix(5);
  // Cut a trailing parameter list "(...)", matching parentheses from the end.
  if (!name.empty() && name.back() == ')') {
    int depth = 0;
    for (size_t i = name.size(); i-- > 0;) {
      if (name[i] == ')') ++depth;
      if (name[i] == '(' && --depth == 0) {
        // "(anonymous namespace)" inside a name is not a parameter list.
        if (i > 0) name = name.substr(0, i);
        break;
      }
    }
  }
  return std::string(name);
}

bool RankingBuilder::wants_category(std::string_view category) const {
  return category == "kernel" || category == "gpu_memcpy" || category == "gpu_memset";
}

void RankingBuilder::extend_span(double timestamp_us, double duration_us) {
  ++totals_.trace_events;
  double end = timestamp_us + duration_us;
  if (!any_ || timestamp_us < first_start_) first_start_ = timestamp_us;
  if (!any_ || end > last_end_) last_end_ = end;
  any_ = true;
}

void RankingBuilder::on_span(double timestamp_us, double duration_us) {
  extend_span(timestamp_us, duration_us);
}

void RankingBuilder::on_event(const importers::TraceEvent& event) {
  extend_span(event.timestamp_us, event.duration_us);
  const char* kind = nullptr;
  if (event.category == "kernel") {
    kind = "kernel";
    ++totals_.kernel_events;
  } else if (event.category == "gpu_memcpy") {
    kind = "memcpy";
    ++totals_.memcpy_events;
  } else if (event.category == "gpu_memset") {
    kind = "memset";
    ++totals_.memset_events;
  } else {
    return;
  }
  ++totals_.gpu_events;
  totals_.gpu_time_us += event.duration_us;
  std::string key = normalize_ ? normalize_kernel_name(event.name) : std::string(event.name);
  auto it = by_name_.find(key);
  if (it == by_name_.end()) {
    KernelStats stats;
    stats.name = key;
    stats.kind = kind;
    stats.stage = kind == std::string_view("kernel")
                      ? stages_.stage_of_name(std::string(event.name))
                      : std::string("memory");
    stats.min_us = stats.max_us = event.duration_us;
    // A collective, or an expert-parallel all-to-all whose stage stays MoE's (DeepEP's dispatch).
    stats.communication =
        kind == std::string_view("kernel") && stages_.is_communication(event.name);
    it = by_name_.emplace(key, std::move(stats)).first;
  }
  KernelStats& stats = it->second;
  auto [place, added] = devices_.try_emplace(event.device.value_or(-1));
  DeviceState& device = place->second;
  if (added) {
    device.stats.device = place->first;
    device.first = event.timestamp_us;
    device.last = event.timestamp_us + event.duration_us;
  }
  device.first = std::min(device.first, event.timestamp_us);
  device.last = std::max(device.last, event.timestamp_us + event.duration_us);
  ++device.stats.gpu_events;
  device.stats.gpu_time_us += event.duration_us;
  if (stats.kind == "kernel") {
    ++device.stats.kernel_events;
    device.stats.kernel_time_us += event.duration_us;
  }
  device.all.add(event.timestamp_us, event.timestamp_us + event.duration_us);
  if (stats.communication) {
    device.stats.communication_us += event.duration_us;
  } else {
    device.other_than_communication.add(event.timestamp_us, event.timestamp_us + event.duration_us);
  }
  ++stats.count;
  stats.total_us += event.duration_us;
  stats.min_us = std::min(stats.min_us, event.duration_us);
  stats.max_us = std::max(stats.max_us, event.duration_us);
}

Ranking RankingBuilder::finish() const {
  Ranking ranking = totals_;
  ranking.wall_us = any_ ? last_end_ - first_start_ : 0;
  for (const auto& [id, state] : devices_) {
    DeviceStats device = state.stats;
    device.span_us = state.last - state.first;
    device.busy_us = state.all.length();
    device.busy_fraction = device.span_us > 0 ? device.busy_us / device.span_us : 0;
    device.exposed_communication_us =
        std::max(0.0, device.busy_us - state.other_than_communication.length());
    device.late_intervals =
        state.all.late_intervals() + state.other_than_communication.late_intervals();
    ranking.devices.push_back(device);
  }
  double device_wall_us =
      ranking.wall_us * static_cast<double>(std::max<size_t>(1, devices_.size()));
  std::map<std::string, StageStats> stages;
  for (const auto& [name, stats] : by_name_) {
    KernelStats row = stats;
    row.share_of_gpu_time = ranking.gpu_time_us > 0 ? row.total_us / ranking.gpu_time_us : 0;
    row.share_of_wall = device_wall_us > 0 ? row.total_us / device_wall_us : 0;
    ranking.kernels.push_back(row);
    StageStats& stage = stages[row.stage];
    stage.stage = row.stage;
    stage.count += row.count;
    stage.total_us += row.total_us;
  }
  for (auto& [name, stage] : stages) {
    stage.share_of_gpu_time = ranking.gpu_time_us > 0 ? stage.total_us / ranking.gpu_time_us : 0;
    ranking.stages.push_back(stage);
  }
  std::stable_sort(
      ranking.kernels.begin(), ranking.kernels.end(),
      [](const KernelStats& a, const KernelStats& b) { return a.total_us > b.total_us; });
  std::stable_sort(
      ranking.stages.begin(), ranking.stages.end(),
      [](const StageStats& a, const StageStats& b) { return a.total_us > b.total_us; });
  return ranking;
}

}  // namespace kprof::timeline
