#include "timeline/trace_join.h"

#include <algorithm>
#include <limits>

#include "model/kernel_names.h"
#include "timeline/graph_node_context.h"

namespace kprof::timeline {

bool TraceTimeIndex::wants_category(std::string_view category) const {
  return category == "kernel" || category == "gpu_memcpy" || category == "gpu_memset";
}

void TraceTimeIndex::on_event(const importers::TraceEvent& event) {
  if (!wants_category(event.category)) return;
  double end = event.timestamp_us + event.duration_us;
  if (!any_ || event.timestamp_us < first_start_) first_start_ = event.timestamp_us;
  if (!any_ || end > last_end_) last_end_ = end;
  any_ = true;
  if (event.category != "kernel") return;
  if (event.duration_us > 0 &&
      (shortest_kernel_us_ == 0 || event.duration_us < shortest_kernel_us_)) {
    shortest_kernel_us_ = event.duration_us;
  }
  // Traces hold a few hundred distinct names in millions of events.
  auto canonical = canonical_names_.find(event.name);
  if (canonical == canonical_names_.end()) {
    canonical =
        canonical_names_.emplace(std::string(event.name), model::canonical_kernel_name(event.name))
            .first;
  }
  auto named = by_name_.try_emplace(canonical->second).first;
  TraceTime& time = named->second;
  time.total_us += event.duration_us;
  ++time.count;
  LaunchConfig config{};
  for (int i = 0; i < 3; ++i) {
    config[i] = event.grid[i].value_or(-1);
    config[3 + i] = event.block[i].value_or(-1);
  }
  TraceTime& configured = by_config_[{named->first, config}];
  configured.total_us += event.duration_us;
  ++configured.count;
  if (event.graph_node_id) {
    NodeTime& node = node_time_[*event.graph_node_id];
    node.name = &named->first;
    node.config = config;
    node.time.total_us += event.duration_us;
    ++node.time.count;
  }
}

void TraceTimeIndex::on_graph_nodes(std::shared_ptr<const importers::GraphNodeTable> table) {
  GraphNodeContexts contexts(std::move(table), nullptr);
  for (const auto& [node_id, node] : node_time_) {
    NodeContext context = contexts.context(node_id);
    if (!context.graph) continue;  // not placed: its time stays outside every bucket
    const std::string& bucket = contexts.graphs()[*context.graph].bucket;
    for (TraceTime* time : {&buckets_by_name_[*node.name][bucket],
                            &buckets_by_config_[{*node.name, node.config}][bucket]}) {
      time->total_us += node.time.total_us;
      time->count += node.time.count;
    }
  }
  node_time_.clear();
}

std::optional<KernelShare> TraceTimeIndex::share_of(const model::Kernel& kernel) const {
  // PyTorch's profiler spells names as libstdc++ demangles them, ncu as its own demangler does:
  // both are compared in the canonical spelling, the capture's from its mangled name — or, where
  // libstdc++ cannot demangle that name (the trace then keeps it mangled), from each other
  // spelling the capture has (model::canonical_kernel_names): a name and its configuration first.
  std::vector<std::string> names = model::canonical_kernel_names(kernel);
  KernelShare share;
  LaunchConfig config{
      static_cast<std::int64_t>(kernel.grid.x),  static_cast<std::int64_t>(kernel.grid.y),
      static_cast<std::int64_t>(kernel.grid.z),  static_cast<std::int64_t>(kernel.block.x),
      static_cast<std::int64_t>(kernel.block.y), static_cast<std::int64_t>(kernel.block.z)};
  auto by_config = by_config_.end();
  for (const std::string& name : names) {
    if ((by_config = by_config_.find({name, config})) != by_config_.end()) break;
  }
  auto by_name = by_name_.end();
  if (by_config == by_config_.end()) {
    for (const std::string& name : names) {
      if ((by_name = by_name_.find(name)) != by_name_.end()) break;
    }
  }
  const BucketTimes* buckets = nullptr;
  if (by_config != by_config_.end()) {
    share.name = by_config->first.first;
    share.time = by_config->second;
    share.matched_launch_config = true;
    auto it = buckets_by_config_.find(by_config->first);
    if (it != buckets_by_config_.end()) buckets = &it->second;
  } else if (by_name != by_name_.end()) {
    share.name = by_name->first;
    share.time = by_name->second;
    auto it = buckets_by_name_.find(by_name->first);
    if (it != buckets_by_name_.end()) buckets = &it->second;
  } else {
    return std::nullopt;
  }
  if (buckets) share.buckets.assign(buckets->begin(), buckets->end());
  double span = gpu_span_us();
  share.fraction_of_pipeline = span > 0 ? std::min(1.0, share.time.total_us / span) : 0;
  share.max_e2e_speedup = share.fraction_of_pipeline < 1 ? 1 / (1 - share.fraction_of_pipeline)
                                                         : std::numeric_limits<double>::infinity();
  return share;
}

std::vector<std::pair<std::string, TraceTime>> TraceTimeIndex::kernels_by_time() const {
  std::vector<std::pair<std::string, TraceTime>> kernels(by_name_.begin(), by_name_.end());
  std::stable_sort(kernels.begin(), kernels.end(), [](const auto& a, const auto& b) {
    return a.second.total_us > b.second.total_us;
  });
  return kernels;
}

double TraceTimeIndex::kernel_time_us() const {
  double total = 0;
  for (const auto& [name, time] : by_name_) total += time.total_us;
  return total;
}

std::vector<std::string> TraceTimeIndex::longest_kernels(size_t count) const {
  std::vector<std::pair<double, std::string>> ranked;
  for (const auto& [name, time] : by_name_) ranked.emplace_back(time.total_us, name);
  std::sort(ranked.begin(), ranked.end(),
            [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::string> names;
  for (size_t i = 0; i < ranked.size() && i < count; ++i) names.push_back(ranked[i].second);
  return names;
}

}  // namespace kprof::timeline
