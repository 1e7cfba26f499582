#include "timeline/op_attribution.h"

#include <algorithm>

#include "timeline/launch_join.h"

namespace kprof::timeline {
namespace {

constexpr std::string_view kModulePrefix = "nn.Module: ";

bool is_gpu_work(std::string_view category) {
  return category == "kernel" || category == "gpu_memcpy" || category == "gpu_memset";
}

bool is_launch_category(std::string_view category) {
  return category == "cuda_runtime" || category == "cuda_driver";
}

}  // namespace

bool OpAttributionBuilder::wants_category(std::string_view category) const {
  return is_gpu_work(category) || is_launch_category(category) ||
         category == (by_ == AttributeBy::kOp ? "cpu_op" : "python_function");
}

void OpAttributionBuilder::on_event(const importers::TraceEvent& event) {
  std::string_view category = event.category;
  if (is_gpu_work(category)) {
    ++gpu_events_;
    gpu_time_us_ += event.duration_us;
    Work& work =
        event.correlation
            ? work_[{event.process.value_or(-1), event.device.value_or(-1), *event.correlation}]
            : uncorrelated_;
    if (work.count == 0 || event.timestamp_us < work.first_start) {
      work.first_start = event.timestamp_us;
    }
    ++work.count;
    work.total_us += event.duration_us;
    return;
  }
  if (is_launch_category(category)) {
    if (!event.correlation) return;
    ++launches_read_;
    launches_[{event.pid, event.tid}].push_back(
        {event.timestamp_us, *event.correlation, event.process.value_or(event.pid)});
    return;
  }
  std::string_view name = event.name;
  if (by_ == AttributeBy::kModule) {
    if (category != "python_function" || name.substr(0, kModulePrefix.size()) != kModulePrefix) {
      return;
    }
    name.remove_prefix(kModulePrefix.size());
  } else if (category != "cpu_op") {
    return;
  }
  ++spans_read_;
  auto [it, added] = name_ids_.emplace(name, static_cast<std::uint32_t>(names_.size()));
  if (added) names_.emplace_back(name);
  spans_[{event.pid, event.tid}].push_back(
      {event.timestamp_us, event.timestamp_us + event.duration_us, it->second});
}

OpAttribution OpAttributionBuilder::finish() const {
  OpAttribution result;
  result.by = by_;
  result.gpu_time_us = gpu_time_us_;
  result.gpu_events = gpu_events_;
  result.cpu_ops = spans_read_;
  result.launches = launches_read_;
  std::map<std::string, OpStats, std::less<>> buckets;
  const std::string no_bucket(by_ == AttributeBy::kOp ? kNoOperator : kNoModule);
  // Each launch call's bucket (one sweep per thread), then each GPU work item's launch.
  std::vector<LaunchKey> launch_keys;
  std::vector<std::string> launch_bucket;
  for (const auto& [thread, thread_launches] : launches_) {
    std::vector<Launch> launches = thread_launches;
    std::sort(launches.begin(), launches.end(),
              [](const Launch& a, const Launch& b) { return a.time < b.time; });
    std::vector<Span> spans;
    if (auto it = spans_.find(thread); it != spans_.end()) spans = it->second;
    // Earlier start first; of two starting together the longer first, so the inner one lies
    // above it on the stack.
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::vector<const Span*> open;  // enclosing spans, outermost first
    size_t next = 0;
    for (const Launch& launch : launches) {
      while (next < spans.size() && spans[next].start <= launch.time) {
        open.push_back(&spans[next++]);
      }
      while (!open.empty() && open.back()->end < launch.time) open.pop_back();
      std::string bucket;
      if (by_ == AttributeBy::kOp) {
        if (!open.empty()) bucket = names_[open.back()->name];
      } else {
        // The module path: every enclosing frame still open at the launch, outermost first (a
        // frame below the top may have ended when the trace's spans do not nest exactly).
        for (const Span* span : open) {
          if (span->end < launch.time) continue;
          if (!bucket.empty()) bucket += '/';
          bucket += names_[span->name];
        }
      }
      launch_keys.push_back({launch.process, launch.correlation, launch.time});
      launch_bucket.push_back(bucket.empty() ? no_bucket : std::move(bucket));
    }
  }
  std::vector<WorkKey> work_keys;
  std::vector<const Work*> work_items;
  for (const auto& [id, work] : work_) {
    const auto& [process, device, correlation] = id;
    work_keys.push_back({process >= 0 ? std::optional(process) : std::nullopt, device, correlation,
                         work.first_start});
    work_items.push_back(&work);
  }
  std::vector<std::size_t> joined = join_launches(launch_keys, work_keys);
  std::vector<const Work*> unclaimed;
  for (std::size_t w = 0; w < work_items.size(); ++w) {
    if (joined[w] == kNoLaunch) {
      unclaimed.push_back(work_items[w]);
      continue;
    }
    OpStats& stats = buckets[launch_bucket[joined[w]]];
    stats.kernels += work_items[w]->count;
    stats.total_us += work_items[w]->total_us;
  }
  OpStats& none = buckets[no_bucket];
  for (const Work* work : unclaimed) {
    none.kernels += work->count;
    none.total_us += work->total_us;
  }
  none.kernels += uncorrelated_.count;
  none.total_us += uncorrelated_.total_us;
  result.unattributed = none.kernels;
  if (none.kernels == 0) buckets.erase(no_bucket);
  for (auto& [name, stats] : buckets) {
    stats.name = name;
    stats.share = gpu_time_us_ > 0 ? stats.total_us / gpu_time_us_ : 0;
    result.ops.push_back(std::move(stats));
  }
  std::stable_sort(result.ops.begin(), result.ops.end(),
                   [](const OpStats& a, const OpStats& b) { return a.total_us > b.total_us; });
  return result;
}

}  // namespace kprof::timeline
