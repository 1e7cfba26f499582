#include "timeline/op_attribution.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "timeline/graph_node_context.h"
#include "timeline/kernel_ranking.h"  // normalize_kernel_name
#include "timeline/launch_join.h"
#include "timeline/step_budget.h"  // step_batch

namespace kprof::timeline {
namespace {

constexpr std::string_view kModulePrefix = "nn.Module: ";

bool is_gpu_work(std::string_view category) {
  return category == "kernel" || category == "gpu_memcpy" || category == "gpu_memset";
}

bool is_launch_category(std::string_view category) {
  return category == "cuda_runtime" || category == "cuda_driver";
}

// The category whose spans name the buckets of eager work: operators, module frames, or the
// annotations (NVTX ranges, record_function) for --by range.
std::string_view span_category(AttributeBy by) {
  switch (by) {
    case AttributeBy::kOp:
      return "cpu_op";
    case AttributeBy::kModule:
      return "python_function";
    case AttributeBy::kRange:
      return "user_annotation";
  }
  return "";
}

// A profiler's or an engine's step marker: an annotation around whole steps, which would split
// --by range's buckets by step number or batch, not by where in the model.
bool is_step_marker(std::string_view name) {
  if (name.rfind("ProfilerStep#", 0) == 0) return true;
  bool may_name_a_batch = name.rfind("execute_", 0) == 0 || name.rfind("step[", 0) == 0;
  return may_name_a_batch && step_batch(std::string(name)).has_value();
}

}  // namespace

std::string_view no_bucket_name(AttributeBy by) {
  switch (by) {
    case AttributeBy::kOp:
      return kNoOperator;
    case AttributeBy::kModule:
      return kNoModule;
    case AttributeBy::kRange:
      return kNoRange;
  }
  return kNoOperator;
}

bool OpAttributionBuilder::wants_category(std::string_view category) const {
  return is_gpu_work(category) || is_launch_category(category) || category == span_category(by_) ||
         (keep_kernels_ && category == "user_annotation");
}

std::uint32_t OpAttributionBuilder::kernel_id(std::string_view name) {
  if (name.empty()) return 0;
  std::string normalised = normalize_kernel_name(name);
  auto [it, added] =
      kernel_name_ids_.emplace(normalised, static_cast<std::uint32_t>(kernel_names_.size()));
  if (added) kernel_names_.push_back(std::move(normalised));
  return it->second;
}

void OpAttributionBuilder::on_event(const importers::TraceEvent& event) {
  std::string_view category = event.category;
  if (is_gpu_work(category)) {
    ++gpu_events_;
    gpu_time_us_ += event.duration_us;
    if (keep_kernels_ && !capture_ &&
        (category != "kernel" || kept_kernels_.count(normalize_kernel_name(event.name)) == 0)) {
      return;  // not a kernel whose launches are wanted
    }
    WorkId id{event.process.value_or(-1), event.device.value_or(-1), event.correlation.value_or(0)};
    if (capture_ && event.correlation) {
      items_.push_back({id, kernel_id(event.name), event.timestamp_us, event.duration_us});
    }
    Work& work = event.correlation ? work_[id] : uncorrelated_;
    if (event.graph_node_id) {
      NodeWork& node = node_work_[*event.graph_node_id];
      ++node.count;
      node.total_us += event.duration_us;
      if (keep_kernels_ && category == "kernel") node.kernel = kernel_id(event.name);
      ++work.node_count;
      work.node_us += event.duration_us;
    }
    if (work.count == 0 || event.timestamp_us < work.first_start) {
      work.first_start = event.timestamp_us;
    }
    if (keep_kernels_ && category == "kernel" &&
        kept_kernels_.count(normalize_kernel_name(event.name)) != 0) {
      std::uint32_t kernel = kernel_id(event.name);
      work.kernel = work.count == 0 || work.kernel == kernel ? kernel : kMixedKernels;
    } else if (keep_kernels_) {
      work.kernel = work.count == 0 || work.kernel == 0 ? 0 : kMixedKernels;
    }
    ++work.count;
    work.total_us += event.duration_us;
    return;
  }
  if (is_launch_category(category)) {
    std::int64_t process = event.process.value_or(event.pid);
    if (event.name.find("GraphInstantiate") != std::string_view::npos) {
      instantiations_[process].push_back(event.timestamp_us);
    }
    if (!event.correlation) return;
    ++launches_read_;
    bool graph = event.name.find("GraphLaunch") != std::string_view::npos;
    launches_[{event.pid, event.tid}].push_back({event.timestamp_us, *event.correlation, process,
                                                 kernel_id(event.launched_kernel),
                                                 !graph && is_launch_call(event.name), graph});
    return;
  }
  std::string_view name = event.name;
  if ((category == "user_annotation" && keep_kernels_) || (keep_kernels_ && category == "cpu_op")) {
    // A step annotation that tells its batch (vLLM's is a record_function: a user_annotation;
    // the 1.8/1.9 trace's operators are mapped to one).
    bool may_name_a_batch = name.rfind("execute_", 0) == 0 || name.rfind("step[", 0) == 0;
    if (auto batch = may_name_a_batch ? step_batch(std::string(name)) : std::nullopt) {
      step_spans_[{event.pid, event.tid}].push_back(
          {event.timestamp_us, event.timestamp_us + event.duration_us, batch->decode_only()});
    }
    if (category == "user_annotation" && by_ != AttributeBy::kRange) return;
  }
  if (by_ == AttributeBy::kRange) {
    if (category != "user_annotation" || is_step_marker(name)) return;
  } else if (by_ == AttributeBy::kModule) {
    if (category != "python_function" || name.substr(0, kModulePrefix.size()) != kModulePrefix) {
      return;
    }
    name.remove_prefix(kModulePrefix.size());
  } else if (category != "cpu_op") {
    return;
  }
  ++spans_read_;
  std::string label = by_ == AttributeBy::kRange ? range_label(name) : std::string(name);
  auto [it, added] = name_ids_.emplace(label, static_cast<std::uint32_t>(names_.size()));
  if (added) names_.push_back(std::move(label));
  spans_[{event.pid, event.tid}].push_back(
      {event.timestamp_us, event.timestamp_us + event.duration_us, it->second});
}

std::vector<OpAttributionBuilder::BucketedLaunch> OpAttributionBuilder::bucketed_launches() const {
  std::vector<BucketedLaunch> result;
  const std::string no_bucket(no_bucket_name(by_));
  for (const auto& [thread, thread_launches] : launches_) {
    std::vector<const Launch*> launches;
    for (const Launch& launch : thread_launches) launches.push_back(&launch);
    std::stable_sort(launches.begin(), launches.end(),
                     [](const Launch* a, const Launch* b) { return a->time < b->time; });
    std::vector<Span> spans;
    if (auto it = spans_.find(thread); it != spans_.end()) spans = it->second;
    // Earlier start first; of two starting together the longer first, so the inner one lies
    // above it on the stack.
    std::sort(spans.begin(), spans.end(), [](const Span& a, const Span& b) {
      return a.start != b.start ? a.start < b.start : a.end > b.end;
    });
    std::vector<const Span*> open;  // enclosing spans, outermost first
    size_t next = 0;
    std::vector<StepSpan> steps;
    if (auto it = step_spans_.find(thread); it != step_spans_.end()) steps = it->second;
    std::sort(steps.begin(), steps.end(),
              [](const StepSpan& a, const StepSpan& b) { return a.start < b.start; });
    size_t next_step = 0;
    const StepSpan* step = nullptr;  // the latest step started at or before the launch
    for (const Launch* launch : launches) {
      while (next < spans.size() && spans[next].start <= launch->time) {
        open.push_back(&spans[next++]);
      }
      while (!open.empty() && open.back()->end < launch->time) open.pop_back();
      std::string bucket;
      if (by_ == AttributeBy::kOp) {
        if (!open.empty()) bucket = names_[open.back()->name];
      } else {
        // The module path (the range stack): every enclosing frame still open at the launch,
        // outermost first (a frame below the top may have ended when the trace's spans do not
        // nest exactly).
        for (const Span* span : open) {
          if (span->end < launch->time) continue;
          if (!bucket.empty()) bucket += by_ == AttributeBy::kRange ? " / " : "/";
          bucket += names_[span->name];
        }
      }
      while (next_step < steps.size() && steps[next_step].start <= launch->time) {
        step = &steps[next_step++];
      }
      std::optional<bool> decode_only;
      if (step && step->end >= launch->time) decode_only = step->decode_only;
      result.push_back({launch, bucket.empty() ? no_bucket : std::move(bucket), decode_only});
    }
  }
  return result;
}

GraphCapture OpAttributionBuilder::finish_capture() const {
  // Launch calls whose work never ran: captured into a graph. Work whose process the trace names
  // (Nsight Systems) is matched by (process, id), a Chrome trace's GPU rows by id alone.
  std::set<std::int64_t> ran;
  std::set<std::pair<std::int64_t, std::int64_t>> ran_in_process;
  for (const auto& [id, work] : work_) {
    const auto& [process, device, correlation] = id;
    if (process < 0) {
      ran.insert(correlation);
    } else {
      ran_in_process.insert({process, correlation});
    }
  }
  std::map<std::int64_t, std::vector<BucketedLaunch>> by_process;
  for (BucketedLaunch& launch : bucketed_launches()) {
    const Launch& call = *launch.launch;
    if (!call.enqueues || ran.count(call.correlation) != 0 ||
        ran_in_process.count({call.process, call.correlation}) != 0) {
      continue;
    }
    by_process[launch.launch->process].push_back(std::move(launch));
  }
  GraphCapture capture;
  for (auto& [process, launches] : by_process) {
    std::stable_sort(launches.begin(), launches.end(),
                     [](const BucketedLaunch& a, const BucketedLaunch& b) {
                       return a.launch->time < b.launch->time;
                     });
    std::vector<double> cuts;
    if (auto it = instantiations_.find(process); it != instantiations_.end()) cuts = it->second;
    std::sort(cuts.begin(), cuts.end());
    // Graph i: the launches after instantiation i-1, up to instantiation i (those after the last
    // are a graph instantiated outside the trace).
    std::vector<std::vector<CapturedGraphLaunch>> graphs(cuts.size() + 1);
    for (const BucketedLaunch& launch : launches) {
      std::size_t graph =
          std::upper_bound(cuts.begin(), cuts.end(), launch.launch->time) - cuts.begin();
      graphs[graph].push_back({kernel_names_[launch.launch->kernel], launch.bucket});
      capture.named = capture.named || launch.launch->kernel != 0;
    }
    for (auto& graph : graphs) {
      if (graph.empty()) continue;
      capture.launches += graph.size();
      capture.graphs.push_back(std::move(graph));
    }
  }
  return capture;
}

OpAttribution OpAttributionBuilder::finish() const {
  OpAttribution result;
  result.by = by_;
  result.gpu_time_us = gpu_time_us_;
  result.gpu_events = gpu_events_;
  result.cpu_ops = spans_read_;
  result.launches = launches_read_;
  std::map<std::string, OpStats, std::less<>> buckets;
  const std::string no_bucket(no_bucket_name(by_));
  // Each launch call's bucket (one sweep per thread), then each GPU work item's launch.
  std::vector<LaunchKey> launch_keys;
  std::vector<BucketedLaunch> launches = bucketed_launches();
  for (const BucketedLaunch& launch : launches) {
    launch_keys.push_back(
        {launch.launch->process, launch.launch->correlation, launch.launch->time});
  }
  LaunchedMap launched;
  std::vector<WorkKey> work_keys;
  std::vector<const Work*> work_items;
  for (const auto& [id, work] : work_) {
    const auto& [process, device, correlation] = id;
    work_keys.push_back({process >= 0 ? std::optional(process) : std::nullopt, device, correlation,
                         work.first_start});
    work_items.push_back(&work);
  }
  JoinReport shared_ids;
  std::vector<std::size_t> joined = join_launches(launch_keys, work_keys, &shared_ids);
  std::vector<const Work*> unclaimed;
  // With a capture: the work of each graph launch, attributed item by item below.
  std::map<WorkId, std::size_t> graph_launch_of;
  for (std::size_t w = 0; w < work_items.size(); ++w) {
    if (joined[w] == kNoLaunch) {
      unclaimed.push_back(work_items[w]);
      continue;
    }
    const BucketedLaunch& launch = launches[joined[w]];
    if (capture_ && !graph_nodes_ && launch.launch->graph) {
      const WorkKey& key = work_keys[w];
      graph_launch_of[{key.process.value_or(-1), key.device, key.correlation}] = joined[w];
      continue;
    }
    // With a node table, the work that names its graph node is its node's (below).
    Work own = eager_part(*work_items[w]);
    if (own.count == 0) continue;
    OpStats& stats = buckets[launch.bucket];
    stats.kernels += own.count;
    stats.total_us += own.total_us;
    add_launched(launched, own.kernel, launch.bucket, launch.decode_only_step, own.count,
                 own.total_us);
  }
  if (capture_ && !graph_nodes_) {
    attribute_replays(graph_launch_of, launches, buckets, result, launched);
  }
  OpStats& none = buckets[no_bucket];
  for (const Work* work : unclaimed) {
    Work own = eager_part(*work);
    none.kernels += own.count;
    none.total_us += own.total_us;
    add_launched(launched, own.kernel, no_bucket, std::nullopt, own.count, own.total_us);
  }
  Work uncorrelated = eager_part(uncorrelated_);
  none.kernels += uncorrelated.count;
  none.total_us += uncorrelated.total_us;
  // Said only where the trace replayed graph nodes: a tracer trace of eager work carries an
  // empty table, and a table with nothing replayed from it attributes nothing.
  if (graph_nodes_ && !node_work_.empty()) attribute_graph_nodes(buckets, result, launched);
  result.unattributed = buckets[no_bucket].kernels;
  result.shared_ids = shared_ids;
  if (none.kernels == 0) buckets.erase(no_bucket);
  for (auto& [name, stats] : buckets) {
    stats.name = name;
    stats.share = gpu_time_us_ > 0 ? stats.total_us / gpu_time_us_ : 0;
    result.ops.push_back(std::move(stats));
  }
  std::stable_sort(result.ops.begin(), result.ops.end(),
                   [](const OpStats& a, const OpStats& b) { return a.total_us > b.total_us; });
  for (auto& [key, kernel] : launched) result.launched_kernels.push_back(std::move(kernel));
  return result;
}

void OpAttributionBuilder::add_launched(LaunchedMap& to, std::uint32_t kernel,
                                        const std::string& bucket, std::optional<bool> decode_only,
                                        std::uint64_t count, double total_us) const {
  if (!keep_kernels_ || kernel == 0 || kernel == kMixedKernels ||
      kept_kernels_.count(kernel_names_[kernel]) == 0) {
    return;
  }
  LaunchedKernel& entry = to[{kernel, bucket, decode_only}];
  if (entry.count == 0) {
    entry.kernel = kernel_names_[kernel];
    const std::string no_bucket(no_bucket_name(by_));
    entry.op = bucket == no_bucket ? std::string() : bucket;
    entry.decode_only_step = decode_only;
  }
  entry.count += count;
  entry.total_us += total_us;
}

// Each graph launch's kernels, in start order, matched to the captured graph that shares the most
// names with them (see the header); a kernel left over keeps the graph launch's own bucket.
void OpAttributionBuilder::attribute_replays(const std::map<WorkId, std::size_t>& graph_launch_of,
                                             const std::vector<BucketedLaunch>& launches,
                                             std::map<std::string, OpStats, std::less<>>& buckets,
                                             OpAttribution& result, LaunchedMap& launched) const {
  ReplayMatch match;
  match.captured_graphs = capture_->graphs.size();
  match.captured_launches = capture_->launches;
  match.by_name = capture_->named;
  std::map<std::size_t, std::vector<const Item*>> replays;  // graph launch -> its items
  for (const Item& item : items_) {
    auto found = graph_launch_of.find(item.id);
    if (found != graph_launch_of.end()) replays[found->second].push_back(&item);
  }
  // Per captured graph, once: its kernel names counted, and its launches' buckets in order.
  std::vector<std::map<std::string, std::size_t, std::less<>>> graph_names(capture_->graphs.size());
  std::vector<std::vector<std::string_view>> graph_buckets(capture_->graphs.size());
  for (std::size_t g = 0; g < capture_->graphs.size(); ++g) {
    for (const CapturedGraphLaunch& l : capture_->graphs[g]) {
      ++graph_names[g][l.kernel];
      graph_buckets[g].push_back(l.bucket);
    }
  }
  for (auto& [launch, items] : replays) {
    std::stable_sort(items.begin(), items.end(),
                     [](const Item* a, const Item* b) { return a->start < b->start; });
    ++match.graph_launches;
    match.replayed_kernels += items.size();
    std::map<std::string, std::size_t, std::less<>> replayed_names;
    for (const Item* item : items) ++replayed_names[kernel_names_[item->kernel]];
    // The captured graph to match: most shared names, then the nearest in size (by position:
    // the nearest in size). Graphs that tie and launched their kernels from different operators
    // (one graph per batch size, all alike in size) leave the replay unmatched: a guess would
    // misattribute it.
    const std::vector<CapturedGraphLaunch>* best = nullptr;
    std::size_t best_index = 0;
    std::pair<double, double> best_score{-std::numeric_limits<double>::infinity(), 0};
    bool ambiguous = false;
    for (std::size_t g = 0; g < capture_->graphs.size(); ++g) {
      const auto& graph = capture_->graphs[g];
      double shared = 0;
      if (capture_->named) {
        for (const auto& [name, count] : replayed_names) {
          auto it = graph_names[g].find(name);
          if (it != graph_names[g].end()) {
            shared += static_cast<double>(std::min(count, it->second));
          }
        }
      }
      std::pair<double, double> score{shared, -std::fabs(static_cast<double>(graph.size()) -
                                                         static_cast<double>(items.size()))};
      if (score > best_score) {
        best_score = score;
        best = &graph;
        best_index = g;
        ambiguous = false;
      } else if (score == best_score && best && graph_buckets[g] != graph_buckets[best_index]) {
        ambiguous = true;
      }
    }
    if (ambiguous) {
      ++match.ambiguous_graph_launches;
      best = nullptr;
    }
    std::map<std::string, std::vector<const CapturedGraphLaunch*>, std::less<>> by_name;
    if (best && capture_->named) {
      for (const CapturedGraphLaunch& l : *best) by_name[l.kernel].push_back(&l);
    }
    std::map<std::string, std::size_t, std::less<>> seen;
    for (std::size_t i = 0; i < items.size(); ++i) {
      const Item* item = items[i];
      const CapturedGraphLaunch* captured = nullptr;
      if (best && capture_->named) {
        auto it = by_name.find(kernel_names_[item->kernel]);
        std::size_t k = seen[kernel_names_[item->kernel]]++;
        if (it != by_name.end() && k < it->second.size()) captured = it->second[k];
      } else if (best && i < best->size()) {
        captured = &(*best)[i];
      }
      const std::string& bucket = captured ? captured->bucket : launches[launch].bucket;
      OpStats& stats = buckets[bucket];
      ++stats.kernels;
      stats.total_us += item->duration;
      // The replay's step is the graph launch's.
      add_launched(launched, item->kernel, bucket, launches[launch].decode_only_step, 1,
                   item->duration);
      if (captured) {
        ++match.matched;
      } else {
        match.unmatched_us += item->duration;
      }
    }
  }
  result.replay = match;
}

OpAttributionBuilder::Work OpAttributionBuilder::eager_part(const Work& work) const {
  if (!graph_nodes_ || work.node_count == 0) return work;
  Work own = work;
  own.count -= work.node_count;
  own.total_us -= work.node_us;
  // A work item of several kernels (a graph launch's) names none of them for the stage.
  if (own.count == 0) own.total_us = 0;
  return own;
}

// Each replayed node's GPU work to its captured node's context (graph_node_context.h), and the
// shares: by ranges, inferred, unattributed.
void OpAttributionBuilder::attribute_graph_nodes(
    std::map<std::string, OpStats, std::less<>>& buckets, OpAttribution& result,
    LaunchedMap& launched) const {
  GraphNodeAttribution attribution;
  attribution.table_nodes = graph_nodes_->nodes.size();
  attribution.table_clones = graph_nodes_->clones.size();
  attribution.counts = graph_nodes_->counts;
  attribution.graph_capture_ignored = capture_.has_value();
  GraphNodeContexts contexts(graph_nodes_, stages_);
  std::map<std::uint32_t, ReplayedGraph> graphs;
  for (const auto& entry : node_work_) {
    // Not a structured binding: the lambda below captures the work (clang 14 refuses a binding).
    const NodeWork& work = entry.second;
    NodeContext context = contexts.context(entry.first);
    std::uint32_t name = by_ == AttributeBy::kOp       ? context.op
                         : by_ == AttributeBy::kModule ? context.module
                                                       : context.range;
    NodePlacement placement = by_ == AttributeBy::kOp       ? context.op_from
                              : by_ == AttributeBy::kModule ? context.module_from
                                                            : context.range_from;
    const std::string& bucket = contexts.name(name);
    OpStats& stats = buckets[bucket];
    stats.kernels += work.count;
    stats.total_us += work.total_us;
    add_launched(launched, work.kernel, bucket, std::nullopt, work.count, work.total_us);
    auto add = [&](ReplayShare& share) {
      share.kernels += work.count;
      share.total_us += work.total_us;
    };
    add(attribution.replayed);
    switch (placement) {
      case NodePlacement::kByRanges:
        add(attribution.by_ranges);
        break;
      case NodePlacement::kInferred:
        add(attribution.inferred);
        break;
      case NodePlacement::kNoContext:
        add(attribution.unattributed);
        add(attribution.no_context);
        break;
      case NodePlacement::kNotInTable:
        add(attribution.unattributed);
        add(attribution.not_in_table);
        break;
      case NodePlacement::kNotPlaced:
        add(attribution.unattributed);
        add(attribution.not_placed);
        break;
    }
    if (context.graph) {
      ReplayedGraph& graph = graphs[*context.graph];
      graph.kernels += work.count;
      graph.total_us += work.total_us;
      graph.replays = std::max(graph.replays, work.count);
    }
  }
  for (auto& [index, graph] : graphs) {
    graph.graph = contexts.graphs()[index];
    attribution.graphs.push_back(std::move(graph));
  }
  // Buckets with a batch by batch, then the rest by graph id.
  std::sort(attribution.graphs.begin(), attribution.graphs.end(),
            [](const ReplayedGraph& a, const ReplayedGraph& b) {
              if (a.graph.batch.has_value() != b.graph.batch.has_value()) {
                return a.graph.batch.has_value();
              }
              if (a.graph.batch != b.graph.batch) return *a.graph.batch < *b.graph.batch;
              return a.graph.graph < b.graph.graph;
            });
  result.graphs = std::move(attribution);
}

}  // namespace kprof::timeline
