#include "timeline/step_budget.h"

#include <fmt/format.h>
#include <re2/re2.h>

#include <algorithm>
#include <climits>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <tuple>

#include "common/error.h"
#include "timeline/kernel_ranking.h"
#include "timeline/launch_join.h"

namespace kprof::timeline {
namespace {

bool contains(std::string_view text, std::string_view part) {
  return text.find(part) != std::string_view::npos;
}

// Host calls that return only when the device has got somewhere: synchronizations and the
// synchronous copies (cudaMemcpy, hipMemcpyWithStream; not the …Async ones).
bool is_blocking_call(std::string_view name) {
  return contains(name, "Synchronize") ||
         (contains(name, "Memcpy") && !contains(name, "Async") && !contains(name, "Peer"));
}

// Annotations that are steps of their own kind or profiler bookkeeping, never "the program's
// repeated step" (ProfilerStep#N is a builtin marker; each N is a different name anyway).
bool is_step_operator_like(std::string_view name) {
  return name.rfind("ProfilerStep#", 0) == 0 || name.rfind("## ", 0) == 0;
}

StepVerdict classify(double busy_fraction, const BudgetThresholds& t) {
  if (busy_fraction >= t.kernel_bound_from) return StepVerdict::kKernelBound;
  if (busy_fraction < t.host_bound_below) return StepVerdict::kHostBound;
  return StepVerdict::kMixed;
}

}  // namespace

// Where each engine's per-step annotation comes from (read in their public sources):
//   PyTorch: torch.profiler.profile.step() records "ProfilerStep#N".
//   vLLM: vllm/v1/worker/gpu_worker.py, Worker.annotate_profile(): record_function
//     "execute_context_{n}({tokens})_generation_{n}({tokens})" (and a variant with a leading
//     "execute_{n}_"); earlier v1 releases "execute_new_{n}_cached_{n}".
//   SGLang: python/sglang/srt/model_executor/model_runner.py, ModelRunner.forward (PR #23419):
//     record_function "step[decode bs=N]", "step[prefill bs=N toks=T]", "step[mixed …]",
//     "step[idle]", "step[MODE bs=N]".
//   TensorRT-LLM: tensorrt_llm/_torch/pyexecutor/model_engine.py, @nvtx_range("_forward_step")
//     on PyTorchModelEngine._forward_step (NVTX: an nsys export's ranges).
const std::vector<StepMarker>& builtin_step_markers() {
  static const std::vector<StepMarker> markers = {
      {"PyTorch", "^ProfilerStep#\\d+$", "torch.profiler.profile.step()"},
      {"vLLM",
       "^execute_(new_\\d+_cached_\\d+|(\\d+_)?context_\\d+\\(.*\\)_generation_\\d+\\(.*\\))$",
       "vllm/v1/worker/gpu_worker.py annotate_profile"},
      {"SGLang", "^step\\[[^\\]]*\\]$", "python/sglang/srt/model_executor/model_runner.py forward"},
      {"TensorRT-LLM", "^_forward_step$", "tensorrt_llm/_torch/pyexecutor/model_engine.py"},
  };
  return markers;
}

std::optional<StepBatch> step_batch(const std::string& name) {
  static const RE2 kVllm(
      "^execute_(?:\\d+_)?context_(\\d+)\\((\\d+)\\)_generation_(\\d+)\\((\\d+)\\)$");
  static const RE2 kSglang("^step\\[(decode|prefill|mixed|extend)(?: bs=(\\d+))?[^\\]]*\\]$");
  StepBatch batch;
  std::uint64_t context = 0, context_tokens = 0, generation = 0, generation_tokens = 0;
  if (RE2::FullMatch(name, kVllm, &context, &context_tokens, &generation, &generation_tokens)) {
    batch.prefill_requests = context;
    batch.decode_requests = generation;
    batch.decode_tokens = generation_tokens;
    return batch;
  }
  std::string mode, bs;
  if (RE2::FullMatch(name, kSglang, &mode, &bs) && !bs.empty()) {
    std::uint64_t n = std::stoull(bs.substr(0, 12));
    if (mode == "decode") {
      batch.decode_requests = batch.decode_tokens = n;
    } else {
      batch.prefill_requests = n;  // prefill, extend or mixed: not a decode-only step
    }
    return batch;
  }
  return std::nullopt;
}

bool names_compilation(std::string_view annotation) {
  static const RE2 kCompilation(
      "(?i)(compileFusion|nvrtc|GpuLower|compile_fx|_compile\\.compile_inner|dynamo.*compile|"
      "compile_inner|inductor.*(compile|autotun)|autotun|triton.*compil|precompile|"
      "cudnnFind|cudnn.*(heuristic|benchmark)|cublas.*heuristic|AlgoGetHeuristic)");
  return RE2::PartialMatch(re2::StringPiece(annotation.data(), annotation.size()), kCompilation);
}

std::string idle_kind_name(IdleKind kind) {
  switch (kind) {
    case IdleKind::kHostGap:
      return "host gap";
    case IdleKind::kDeviceIdle:
      return "device-side idle";
    case IdleKind::kDependencyWait:
      return "dependency wait";
    case IdleKind::kOtherWork:
      return "other work";
  }
  return "host gap";
}

std::string step_verdict_name(StepVerdict verdict) {
  switch (verdict) {
    case StepVerdict::kHostBound:
      return "host-bound";
    case StepVerdict::kKernelBound:
      return "kernel-bound";
    case StepVerdict::kMixed:
      return "mixed";
    case StepVerdict::kDependencyBound:
      return "dependency-bound";
    case StepVerdict::kGraphCapture:
      return "graph capture";
    case StepVerdict::kTransferBound:
      return "transfer-bound";
    case StepVerdict::kNoGpuWork:
      break;
  }
  return "no GPU work";
}

std::uint32_t BudgetBuilder::call_name(std::string_view name) {
  auto found = call_name_ids_.find(name);
  if (found != call_name_ids_.end()) return found->second;
  auto id = static_cast<std::uint32_t>(call_names_.size());
  call_names_.emplace_back(name);
  call_name_ids_.emplace(std::string(name), id);
  return id;
}

// The lane of a GPU activity, interned; consecutive activities mostly share one.
std::uint32_t BudgetBuilder::lane(const importers::TraceEvent& event) {
  Lane key{event.device.value_or(-1), event.stream, event.process};
  if (!lanes_.empty() && lanes_[last_lane_] == key) return last_lane_;
  auto [it, added] = lane_ids_.try_emplace(key, static_cast<std::uint32_t>(lanes_.size()));
  if (added) lanes_.push_back(key);
  return last_lane_ = it->second;
}

std::uint32_t BudgetBuilder::thread(std::int64_t pid, std::int64_t tid) {
  std::pair<std::int64_t, std::int64_t> key{pid, tid};
  if (!threads_.empty() && threads_[last_thread_] == key) return last_thread_;
  auto [it, added] = thread_ids_.try_emplace(key, static_cast<std::uint32_t>(threads_.size()));
  if (added) threads_.push_back(key);
  return last_thread_ = it->second;
}

bool BudgetBuilder::wants_category(std::string_view category) const {
  // What on_event reads; keep the two together.
  return category == "kernel" || category == "gpu_memcpy" || category == "gpu_memset" ||
         category == "cuda_sync" || category == "cuda_runtime" || category == "cuda_driver" ||
         category == "user_annotation" || category == "gpu_user_annotation";
}

void BudgetBuilder::on_event(const importers::TraceEvent& event) {
  std::string_view category = event.category;
  double end = event.timestamp_us + event.duration_us;
  if (category == "kernel" || category == "gpu_memcpy" || category == "gpu_memset") {
    std::uint32_t id;
    if (auto cached = raw_name_ids_.find(event.name); cached != raw_name_ids_.end()) {
      id = cached->second;
    } else {
      std::string name = normalize_kernel_name(event.name);
      auto [it, added] = name_ids_.emplace(name, static_cast<std::uint32_t>(names_.size()));
      if (added) {
        names_.push_back(std::move(name));
        // Collectives and expert-parallel all-to-all (whose stage stays MoE's) alike.
        communication_.push_back(stages_ != nullptr && category == "kernel"
                                     ? stages_->communication_kind(event.name)
                                     : analysis::CommunicationKind::kNone);
      }
      if (it->second >= (1u << 30)) throw std::length_error("over 2^30 distinct GPU work names");
      id = it->second;
      raw_name_ids_.emplace(std::string(event.name), id);
    }
    activities_.push_back({event.timestamp_us, end, event.correlation.value_or(0), lane(event), id,
                           category == "kernel", event.correlation.has_value()});
    if (keep_timeline_) {
      TimelineItem item;
      item.name = std::string(event.name);
      item.category = std::string(category);
      item.device = event.device.value_or(-1);
      item.stream = event.stream;
      item.start_us = event.timestamp_us;
      item.end_us = end;
      item.duration_us = event.duration_us;
      for (int d = 0; d < 3; ++d) {
        item.grid[d] = event.grid[d];
        item.block[d] = event.block[d];
      }
      timeline_.push_back(std::move(item));
    }
  } else if (category == "cuda_sync") {
    // Kineto's "Stream Wait Event" (and nsys's stream-wait synchronization rows, read as such):
    // on the waiting stream's GPU row.
    if (contains(event.name, "Wait") && event.stream) {
      gpu_waits_.push_back({event.timestamp_us, event.device.value_or(-1), *event.stream, 0, 0,
                            call_name(event.name)});
    }
  } else if (category == "cuda_runtime" || category == "cuda_driver") {
    std::int64_t pid = event.process.value_or(event.pid);
    if (event.correlation && is_launch_call(event.name)) {
      launches_.push_back({event.timestamp_us, end, *event.correlation, thread(pid, event.tid),
                           event.name.find("GraphLaunch") != std::string_view::npos,
                           launch_kind(event.name)});
    }
    if (contains(event.name, "StreamWaitEvent") || contains(event.name, "StreamWaitValue")) {
      host_waits_.push_back({event.timestamp_us, -1, -1, pid, event.tid, call_name(event.name)});
    } else if (contains(event.name, "BeginCapture")) {
      capture_begins_.push_back({event.timestamp_us, end, pid, event.tid, call_name(event.name)});
    } else if (contains(event.name, "EndCapture")) {
      capture_ends_.push_back({event.timestamp_us, end, pid, event.tid, call_name(event.name)});
    }
    if (is_blocking_call(event.name)) {
      blocking_calls_.push_back({event.timestamp_us, end, pid, event.tid, call_name(event.name)});
    }
  } else if (category == "user_annotation" || category == "gpu_user_annotation") {
    annotations_.push_back({std::string(event.name), event.timestamp_us, event.duration_us,
                            event.process.value_or(event.pid), category == "gpu_user_annotation"});
  }
}

namespace {

// 40 bytes: the whole-trace step of a long trace holds one per GPU activity.
struct StepWork {
  double start, end;
  std::int64_t device;
  std::uint32_t launch;    // index of the launch call that enqueued it, or kNoLaunch32
  std::uint32_t activity;  // index into activities_
  std::uint32_t name : 31;
  std::uint32_t kernel : 1;
  analysis::CommunicationKind communication;
};
constexpr std::uint32_t kNoLaunch32 = UINT32_MAX;

void add_communication(CommunicationTime& into, const CommunicationTime& part) {
  into.time_us += part.time_us;
  into.exposed_us += part.exposed_us;
}

// The length of the union of the intervals of `work` (sorted by start) that `keep` accepts.
template <typename Keep>
double union_length(const StepWork* begin, const StepWork* end, Keep keep) {
  double total = 0, open_start = 0, frontier = 0;
  bool open = false;
  for (const StepWork* w = begin; w != end; ++w) {
    if (!keep(*w)) continue;
    if (!open || w->start > frontier) {
      if (open) total += frontier - open_start;
      open_start = w->start;
      frontier = w->end;
      open = true;
    }
    frontier = std::max(frontier, w->end);
  }
  return open ? total + frontier - open_start : 0;
}

// Busy over the wall span less the time the device ran other work (outside the step): that time
// was neither this step's nor idle, so it counts on neither side.
double busy_share(double busy, double wall, double other_work) {
  return wall - other_work > 0 ? busy / (wall - other_work) : 1;
}

void add_device(DeviceBudget& into, const DeviceBudget& part) {
  into.gpu_activities += part.gpu_activities;
  into.kernels += part.kernels;
  into.kernel_time_us += part.kernel_time_us;
  into.gpu_span_us += part.gpu_span_us;
  into.wall_span_us += part.wall_span_us;
  into.gpu_busy_us += part.gpu_busy_us;
  into.kernel_busy_us += part.kernel_busy_us;
  into.idle_before_first_us += part.idle_before_first_us;
  into.host_gap_before_first_us += part.host_gap_before_first_us;
  into.idle_after_last_us += part.idle_after_last_us;
  into.host_idle_us += part.host_idle_us;
  into.device_idle_us += part.device_idle_us;
  into.dependency_wait_us += part.dependency_wait_us;
  into.other_work_us += part.other_work_us;
  into.exposed_communication_us += part.exposed_communication_us;
  add_communication(into.collective, part.collective);
  add_communication(into.expert_parallel, part.expert_parallel);
  into.busy_fraction = into.wall_span_us > 0
                           ? busy_share(into.gpu_busy_us, into.wall_span_us, into.other_work_us)
                           : 0;
  into.gpu_span_busy_fraction = into.gpu_span_us > 0 ? into.gpu_busy_us / into.gpu_span_us : 0;
}

double host_fed(double busy, double waited) {
  return busy + waited > 0 ? busy / (busy + waited) : 1;
}

// The verdict of GPU work that was kept waiting `host_gap` by the host and `dependency` by
// stream waits: dependency-bound when the waits are the larger share and the step is not
// kernel-bound anyway; else by the fraction of the time the device was kept fed.
// A device the host kept fed whose busy time was mostly copies alone (busy less the kernels'
// union) is transfer-bound.
StepVerdict judge(double busy, double kernel_busy, double host_gap, double dependency,
                  const BudgetThresholds& t) {
  double fed = host_fed(busy, host_gap + dependency);
  if (dependency > host_gap && fed < t.kernel_bound_from) return StepVerdict::kDependencyBound;
  StepVerdict verdict = classify(fed, t);
  if (verdict != StepVerdict::kHostBound && busy > 0 &&
      busy - kernel_busy > kTransferBoundShare * busy) {
    return StepVerdict::kTransferBound;
  }
  return verdict;
}

}  // namespace

Budget BudgetBuilder::finish(const std::string& step_regex, const BudgetThresholds& t) const {
  Budget budget;
  std::vector<const Annotation*> steps;
  std::vector<std::pair<std::string, std::string>> candidates;  // pattern, description
  if (step_regex.empty()) {
    for (const StepMarker& marker : builtin_step_markers()) {
      candidates.emplace_back(marker.pattern, std::string(marker.engine) + " step annotations");
    }
  } else {
    candidates.emplace_back(step_regex, "/" + step_regex + "/");
  }
  for (std::size_t c = 0; c < candidates.size(); ++c) {
    const auto& [regex, description] = candidates[c];
    RE2 pattern(regex, RE2::Quiet);
    if (!pattern.ok()) {
      throw std::invalid_argument("--step \"" + step_regex +
                                  "\" is not a valid regular expression: " + pattern.error());
    }
    // CPU-side annotations first: their launches tell which GPU work belongs to them.
    for (bool gpu_side : {false, true}) {
      for (const Annotation& a : annotations_) {
        if (a.gpu_side == gpu_side && RE2::PartialMatch(a.name, pattern)) steps.push_back(&a);
      }
      if (!steps.empty()) break;
    }
    if (!steps.empty()) {
      budget.step_selector = description;
      budget.step_choice.pattern = regex;
      if (step_regex.empty()) {
        budget.step_choice.method = "engine step annotations";
        budget.step_choice.engine = builtin_step_markers()[c].engine;
      } else {
        budget.step_choice.method = "--step";
      }
      break;
    }
  }
  // ProfilerStep#N keeps the name it always had in kprof's output.
  if (budget.step_selector == "PyTorch step annotations") {
    budget.step_selector = "ProfilerStep#N annotations";
  }

  // Each activity's launch call, joined by (process, correlation id).
  // Each activity's launch, as a 32-bit index (kNoLaunch32: none): a long trace has millions.
  std::vector<std::uint32_t> launch_of;
  {
    std::vector<LaunchKey> launch_keys;
    launch_keys.reserve(launches_.size());
    for (const Launch& l : launches_) launch_keys.push_back({pid_of(l), l.correlation, l.time});
    // The work's keys made as the join asks for them, not held: 40 bytes an activity.
    if (launches_.size() >= kNoLaunch32 || activities_.size() >= UINT32_MAX) {
      throw std::length_error("over 2^32 launch calls or GPU activities");
    }
    std::vector<std::size_t> joined =
        join_launches(launch_keys, activities_.size(), [&](std::size_t i) {
          const Activity& a = activities_[i];
          const Lane& lane = lane_of(a);
          // Without an id a work item can join nothing: an id no launch has stands for it.
          return WorkKey{lane.process, lane.device, a.correlation_id().value_or(INT64_MIN),
                         a.start};
        });
    std::vector<LaunchKey>().swap(launch_keys);
    launch_of.reserve(joined.size());
    for (std::size_t launch : joined) {
      launch_of.push_back(launch == kNoLaunch ? kNoLaunch32 : static_cast<std::uint32_t>(launch));
    }
  }
  // Per activity, the launch time of the previous work on its (device, stream): a wait counts
  // for work only when issued after that (the wait is then between the two). Only asked of work
  // behind a wait (find_wait below): a trace without waits needs none of it.
  std::vector<double> previous_on_stream;
  if (!gpu_waits_.empty() || !host_waits_.empty()) {
    previous_on_stream.assign(activities_.size(), -std::numeric_limits<double>::infinity());
    std::vector<std::size_t> order(activities_.size());
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    auto key = [&](std::size_t i) {
      const Activity& a = activities_[i];
      return std::make_tuple(lane_of(a).device, lane_of(a).stream.value_or(-1), a.start);
    };
    std::sort(order.begin(), order.end(),
              [&](std::size_t x, std::size_t y) { return key(x) < key(y); });
    for (std::size_t k = 1; k < order.size(); ++k) {
      const Lane& a = lane_of(activities_[order[k]]);
      const Lane& before = lane_of(activities_[order[k - 1]]);
      std::uint32_t launch = launch_of[order[k - 1]];
      if (a.device == before.device && a.stream == before.stream && launch != kNoLaunch32) {
        previous_on_stream[order[k]] = launches_[launch].time;
      }
    }
  }
  // Launches inside a stream capture of their thread (BeginCapture … EndCapture) enqueue nothing.
  std::vector<bool> captured(launches_.size(), false);
  {
    using Thread = std::pair<std::int64_t, std::int64_t>;
    std::map<Thread, std::vector<std::pair<double, double>>> windows;
    std::vector<HostCall> ends = capture_ends_;
    std::sort(ends.begin(), ends.end(),
              [](const HostCall& x, const HostCall& y) { return x.start < y.start; });
    for (const HostCall& begin : capture_begins_) {
      auto end = std::find_if(ends.begin(), ends.end(), [&](const HostCall& e) {
        return e.pid == begin.pid && e.tid == begin.tid && e.start >= begin.start;
      });
      windows[{begin.pid, begin.tid}].emplace_back(
          begin.start, end == ends.end() ? std::numeric_limits<double>::infinity() : end->end);
    }
    for (std::size_t i = 0; i < launches_.size() && !windows.empty(); ++i) {
      auto found = windows.find({pid_of(launches_[i]), tid_of(launches_[i])});
      if (found == windows.end()) continue;
      for (const auto& [from, to] : found->second) {
        if (launches_[i].time >= from && launches_[i].time <= to) captured[i] = true;
      }
    }
  }
  {
    // Kernel and graph launch calls against the GPU records carrying their ids, one per
    // (process, id): an export that lists a runtime call and the driver call under it with one id
    // counts it once. Left out: launches inside a stream capture, and copies and fills (a
    // zero-byte one enqueues nothing).
    std::vector<bool> carried(launches_.size(), false);
    for (std::uint32_t launch : launch_of) {
      if (launch != kNoLaunch32) carried[launch] = true;
    }
    std::vector<std::tuple<std::int64_t, std::int64_t, bool>> calls;  // process, id, carried
    for (std::size_t i = 0; i < launches_.size(); ++i) {
      const Launch& l = launches_[i];
      if (captured[i] || l.kind != LaunchKind::kKernel) continue;
      calls.emplace_back(pid_of(l), l.correlation, carried[i]);
    }
    std::sort(calls.begin(), calls.end());
    for (std::size_t i = 0; i < calls.size();) {
      std::size_t j = i;
      bool any_carried = false;
      while (j < calls.size() && std::get<0>(calls[j]) == std::get<0>(calls[i]) &&
             std::get<1>(calls[j]) == std::get<1>(calls[i])) {
        any_carried = any_carried || std::get<2>(calls[j]);
        ++j;
      }
      ++budget.launch_records.launch_calls;
      budget.launch_records.without_gpu_record += !any_carried;
      i = j;
    }
  }
  // The wait that held `w` back, if the trace shows one: a cuda_sync wait on its stream, or a
  // wait call on its launching thread, issued after the stream's previous work was launched.
  // Waits indexed for the lookup below (a long trace has a wait per step and a gap per launch):
  // GPU-side waits by (device, stream, time), runtime wait calls by (process, thread, time).
  std::vector<const StreamWait*> gpu_waits, host_waits;
  for (const StreamWait& wait : gpu_waits_) gpu_waits.push_back(&wait);
  for (const StreamWait& wait : host_waits_) host_waits.push_back(&wait);
  auto by_stream = [](const StreamWait* x) { return std::tie(x->device, x->stream, x->time); };
  auto by_thread = [](const StreamWait* x) { return std::tie(x->pid, x->tid, x->time); };
  std::sort(gpu_waits.begin(), gpu_waits.end(),
            [&](const StreamWait* x, const StreamWait* y) { return by_stream(x) < by_stream(y); });
  std::sort(host_waits.begin(), host_waits.end(),
            [&](const StreamWait* x, const StreamWait* y) { return by_thread(x) < by_thread(y); });
  // The wait that held `w` back, if the trace shows one: the latest cuda_sync wait on its stream,
  // or wait call on its launching thread, issued after the stream's previous work was launched.
  auto find_wait = [&](const StepWork& w) -> const StreamWait* {
    if (previous_on_stream.empty()) return nullptr;  // the trace has no waits
    const Lane& a = lane_of(activities_[w.activity]);
    const Launch& launch = launches_[w.launch];
    const std::int64_t pid = pid_of(launch), tid = tid_of(launch);
    double after = previous_on_stream[w.activity];
    if (a.stream) {
      auto key = std::make_tuple(a.device, *a.stream, w.start);
      auto it =
          std::upper_bound(gpu_waits.begin(), gpu_waits.end(), key,
                           [&](const auto& k, const StreamWait* x) { return k < by_stream(x); });
      if (it != gpu_waits.begin()) {
        const StreamWait* latest = *std::prev(it);
        if (latest->device == a.device && latest->stream == *a.stream && latest->time > after) {
          return latest;
        }
      }
    }
    auto key = std::make_tuple(pid, tid, launch.time);
    auto it =
        std::upper_bound(host_waits.begin(), host_waits.end(), key,
                         [&](const auto& k, const StreamWait* x) { return k < by_thread(x); });
    if (it != host_waits.begin()) {
      const StreamWait* latest = *std::prev(it);
      if (latest->pid == pid && latest->tid == tid && latest->time > after) {
        return latest;
      }
    }
    return nullptr;
  };
  // Looked up only for the waits a step keeps (at most 10).
  auto blocking_over = [&](std::int64_t pid, double from, double to) -> std::string {
    for (const HostCall& call : blocking_calls_) {
      double overlap = std::min(call.end, to) - std::max(call.start, from);
      if (call.pid == pid && overlap >= 0.5 * (to - from)) return call_names_[call.name];
    }
    return {};
  };

  // GPU work enqueued before the profiler's window: a correlation id below every launch its
  // process recorded (CUPTI numbers them in launch order per process). Only a Chrome trace's GPU
  // rows, which name no process, judged against the one launching process: Kineto records GPU
  // activities from its warm-up on but CPU events only inside its window, while an Nsight
  // Systems export (rows name their process) records both from one start — its work below the
  // first recorded launch came from calls it did not export (the driver API's).
  std::vector<bool> pre_window(activities_.size(), false);
  {
    std::map<std::int64_t, std::int64_t> first_correlation;  // process -> lowest launch id
    for (const Launch& l : launches_) {
      auto [it, added] = first_correlation.try_emplace(pid_of(l), l.correlation);
      if (!added) it->second = std::min(it->second, l.correlation);
    }
    auto first_of = [&](const Activity& a) {
      return !lane_of(a).process && first_correlation.size() == 1 ? first_correlation.begin()
                                                                  : first_correlation.end();
    };
    // Only where the trace records the launch of (nearly) all the work from its process's first
    // launch on: a trace of some launch APIs only (kprof's tracer records the driver's kernel
    // launches, not cudaMemcpy) lacks launches at every id, not before a window.
    // Counted by distinct correlation id, as kprof rank counts them (a graph replay's kernels
    // share one id).
    // first_of names at most the one launching process: the ids are that process's. Sorted and
    // counted, not kept in a map (a node per id: a long trace has millions).
    std::vector<std::pair<std::int64_t, bool>> ids;  // id, launched
    for (std::size_t i = 0; i < activities_.size(); ++i) {
      const Activity& a = activities_[i];
      auto found = first_of(a);
      if (!a.has_correlation || found == first_correlation.end() || a.correlation < found->second) {
        continue;
      }
      ids.emplace_back(a.correlation, launch_of[i] != kNoLaunch32);
    }
    std::sort(ids.begin(), ids.end());
    std::map<std::int64_t, std::pair<std::uint64_t, std::uint64_t>> coverage;  // work, launched
    if (!ids.empty()) {
      auto& [work, launched] = coverage[first_correlation.begin()->first];
      for (std::size_t k = 0; k < ids.size(); ++k) {
        // Sorted by (id, launched): an id's last entry says whether any of its work was launched.
        if (k + 1 < ids.size() && ids[k + 1].first == ids[k].first) continue;
        ++work;
        launched += ids[k].second;
      }
    }
    std::vector<std::pair<std::int64_t, bool>>().swap(ids);
    for (std::size_t i = 0; i < activities_.size(); ++i) {
      const Activity& a = activities_[i];
      // An id of 0 or below is no launch's (CUPTI numbers from 1).
      if (!a.has_correlation || a.correlation <= 0 || launch_of[i] != kNoLaunch32) continue;
      auto found = first_of(a);
      if (found == first_correlation.end() || a.correlation >= found->second) continue;
      auto [work, launched] = coverage[found->first];
      if (work > 0 && launched * 100 >= work * 99) {
        pre_window[i] = true;
        ++budget.pre_window_activities;
        budget.pre_window_us += a.end - a.start;
      }
    }
  }
  // Without a step marker or --step: a repeated annotation of the program's own, if one holds a
  // real share of the GPU work.
  {
    StepChoice& choice = budget.step_choice;
    for (std::size_t i = 0; i < activities_.size(); ++i) {
      if (!pre_window[i]) choice.trace_gpu_time_us += activities_[i].end - activities_[i].start;
    }
    if (steps.empty() && step_regex.empty()) {
      steps = repeated_annotation(launch_of, pre_window, &choice);
      if (!steps.empty()) {
        const StepCandidate* chosen = nullptr;
        for (const StepCandidate& c : choice.candidates) {
          if (c.accepted) chosen = &c;
        }
        choice.method = "repeated annotation";
        budget.step_selector = fmt::format(
            "the repeated annotation \"{}\" ({} top-level ranges holding {:.1f}% of the GPU "
            "time launched from the first to the last; no engine step annotation; --step picks "
            "others)",
            chosen->annotation, chosen->ranges, 100 * chosen->gpu_time_share);
      }
    }
  }
  // Per device, the union of all its GPU work (every step's, work outside the steps, work before
  // the profiler's window): an idle interval of a step — a stretch with none of the step's own
  // work — that overlaps it was the device running other work, not idle for the host or behind a
  // wait (DeviceBudget::other_work_us).
  struct DeviceBusy {
    std::vector<std::pair<double, double>> intervals;  // disjoint, by start
  };
  std::map<std::int64_t, DeviceBusy> device_busy;
  {
    std::map<std::int64_t, std::vector<std::pair<double, double>>> raw;
    for (const Activity& a : activities_) raw[lane_of(a).device].emplace_back(a.start, a.end);
    for (auto& [device, intervals] : raw) {
      std::sort(intervals.begin(), intervals.end());
      auto& merged = device_busy[device].intervals;
      for (auto [from, to] : intervals) {
        if (!merged.empty() && from <= merged.back().second) {
          merged.back().second = std::max(merged.back().second, to);
        } else {
          merged.emplace_back(from, to);
        }
      }
    }
  }
  std::vector<StepBudget> results;
  // `wall_from`/`wall_to`: the step's wall span (annotation start, or the previous step's end,
  // to the annotation's end); NaN for the whole-trace step, whose wall is its GPU span.
  auto summarize = [&](StepBudget& step, std::vector<StepWork> work, double wall_from,
                       double wall_to) {
    std::map<std::uint32_t, double> per_name;
    for (const StepWork& w : work) per_name[w.name] += w.end - w.start;
    for (const auto& [id, total] : per_name) step.kernels.emplace_back(names_[id], total);
    std::stable_sort(step.kernels.begin(), step.kernels.end(),
                     [](const auto& a, const auto& b) { return a.second > b.second; });
    step.gpu_activities = work.size();
    step.wall_start_us = std::isnan(wall_from) ? 0 : wall_from;
    if (work.empty()) return;
    std::sort(work.begin(), work.end(), [](const StepWork& a, const StepWork& b) {
      return a.device != b.device ? a.device < b.device : a.start < b.start;
    });
    double step_first = work.front().start, step_last = work.front().end;
    for (const StepWork& w : work) {
      step_first = std::min(step_first, w.start);
      step_last = std::max(step_last, w.end);
    }
    if (std::isnan(wall_from)) step.wall_start_us = step_first;
    // Per device: walk its work in start order from the step's wall start; an idle interval
    // before an item (the first one's too) is the host's when that item's launch call ended
    // after the device had run out of work (or its launch is not in the trace), the device's own
    // otherwise — unless a stream wait held the item back after it was ready, which makes that
    // part of the interval a dependency wait. Idle after the last item to the annotation's end is
    // the host's: the step was still running on it. Wherever the device ran other work meanwhile
    // (outside the step), that part is other work, never idle of any kind.
    for (size_t i = 0; i < work.size();) {
      DeviceBudget device;
      device.device = work[i].device;
      double first = work[i].start, last = work[i].end;
      // The wall start, unless the device's work began before it (a pipelined step's work that
      // ran before the previous step ended): then its span starts with that work.
      double wall_start = std::isnan(wall_from) ? first : std::min(wall_from, first);
      double frontier = wall_start, open_start = wall_start;
      const std::vector<std::pair<double, double>>& busy = device_busy[device.device].intervals;
      auto put = [&](double from, double to, IdleKind kind) -> double {
        if (to <= from) return 0;
        switch (kind) {
          case IdleKind::kHostGap:
            device.host_idle_us += to - from;
            break;
          case IdleKind::kDeviceIdle:
            device.device_idle_us += to - from;
            break;
          case IdleKind::kDependencyWait:
            device.dependency_wait_us += to - from;
            break;
          case IdleKind::kOtherWork:
            device.other_work_us += to - from;
            break;
        }
        if (keep_timeline_) step.idle.push_back({device.device, from, to, kind});
        return to - from;
      };
      // The stretch of [from, to) in which the device ran work outside the step: from the first
      // such work's start to the last one's end (the gaps between them are that work's own, not
      // this step's). {to, to} when it ran none.
      auto other_work_in = [&](double from, double to) -> std::pair<double, double> {
        auto first = std::upper_bound(busy.begin(), busy.end(), from,
                                      [](double t, const auto& x) { return t < x.second; });
        if (first == busy.end() || first->first >= to) return {to, to};
        auto last = std::lower_bound(first, busy.end(), to,
                                     [](const auto& x, double t) { return x.first < t; });
        return {std::max(first->first, from), std::min(std::prev(last)->second, to)};
      };
      // Books [from, to): where the device ran other work as such, the rest (before and after
      // it) as `kind`; returns the part booked as `kind`.
      auto book = [&](double from, double to, IdleKind kind) -> double {
        if (to <= from) return 0;
        auto [a, b] = other_work_in(from, to);
        double booked = put(from, a, kind);
        put(a, b, IdleKind::kOtherWork);
        return booked + put(b, to, kind);
      };
      size_t j = i;
      for (; j < work.size() && work[j].device == device.device; ++j) {
        const StepWork& w = work[j];
        ++device.gpu_activities;
        if (keep_timeline_) step.work.push_back(w.activity);
        if (w.kernel) {
          ++device.kernels;
          device.kernel_time_us += w.end - w.start;
        }
        last = std::max(last, w.end);
        if (w.start > frontier) {
          device.gpu_busy_us += frontier - open_start;
          double host_before = device.host_idle_us;
          double idle_before =
              device.host_idle_us + device.device_idle_us + device.dependency_wait_us;
          if (w.launch == kNoLaunch32) {
            book(frontier, w.start, IdleKind::kHostGap);
          } else {
            const Launch& launch = launches_[w.launch];
            // A graph's nodes run while cudaGraphLaunch is still in progress.
            double ready = launch.graph ? launch.time : launch.end;
            double waiting_from = std::max(frontier, ready);
            // The gap less the other work run in it: a stretch before that work, one after.
            auto [a, b] = other_work_in(frontier, w.start);
            const std::pair<double, double> pieces[2] = {{frontier, a}, {b, w.start}};
            double waited = 0;
            for (auto [from, to] : pieces)
              waited += std::max(0.0, to - std::max(from, waiting_from));
            const StreamWait* wait = waited > kDependencyWaitFloorUs ? find_wait(w) : nullptr;
            put(a, b, IdleKind::kOtherWork);
            if (wait) {
              // Before the work was ready the host's, after it the wait's.
              for (auto [from, to] : pieces) {
                put(from, std::min(to, std::max(from, waiting_from)), IdleKind::kHostGap);
                put(std::max(from, waiting_from), to, IdleKind::kDependencyWait);
              }
              DependencyWait record;
              record.device = device.device;
              record.stream = lane_of(activities_[w.activity]).stream;
              record.idle_from_us = frontier;
              record.waited_us = waited;
              record.next_work = names_[w.name];
              record.wait_call = call_names_[wait->name];
              record.wait_call_at_us = wait->time;
              record.process = pid_of(launch);
              record.ready_at_us = waiting_from;
              step.dependency_waits.push_back(std::move(record));
            } else {
              // The host's where the launch call ended after the device ran out of work (at the
              // stretch's start), the device's own otherwise.
              for (auto [from, to] : pieces) {
                put(from, to, launch.end > from ? IdleKind::kHostGap : IdleKind::kDeviceIdle);
              }
            }
          }
          if (j == i) {
            device.host_gap_before_first_us = device.host_idle_us - host_before;
            device.idle_before_first_us = device.host_idle_us + device.device_idle_us +
                                          device.dependency_wait_us - idle_before;
          }
          open_start = w.start;
        }
        frontier = std::max(frontier, w.end);
      }
      device.gpu_busy_us += frontier - open_start;
      double wall_end = last;
      if (!std::isnan(wall_to)) {
        // To the annotation's end the host was still in the step; beyond it, to the step's last
        // work on another device, this device waited on the others (device-side).
        if (wall_to > last) device.idle_after_last_us = book(last, wall_to, IdleKind::kHostGap);
        wall_end = std::max(wall_to, last);
        if (step_last > wall_end) {
          book(wall_end, step_last, IdleKind::kDeviceIdle);
          wall_end = step_last;
        }
      }
      const StepWork* from = work.data() + i;
      const StepWork* to = work.data() + j;
      using analysis::CommunicationKind;
      auto busy_without = [&](CommunicationKind kind) {
        return std::max(0.0, device.gpu_busy_us - union_length(from, to, [&](const StepWork& w) {
                               return w.communication != kind;
                             }));
      };
      auto time_of = [&](CommunicationKind kind) {
        return CommunicationTime{
            union_length(from, to, [&](const StepWork& w) { return w.communication == kind; }),
            busy_without(kind)};
      };
      device.kernel_busy_us = union_length(from, to, [](const StepWork& w) { return w.kernel; });
      // Communication of any kind that nothing else overlapped.
      device.exposed_communication_us =
          std::max(0.0, device.gpu_busy_us - union_length(from, to, [](const StepWork& w) {
                          return w.communication == CommunicationKind::kNone;
                        }));
      device.collective = time_of(CommunicationKind::kCollective);
      device.expert_parallel = time_of(CommunicationKind::kExpertParallel);
      device.gpu_span_us = last - first;
      device.wall_span_us = wall_end - wall_start;
      device.busy_fraction =
          busy_share(device.gpu_busy_us, device.wall_span_us, device.other_work_us);
      device.gpu_span_busy_fraction =
          device.gpu_span_us > 0 ? device.gpu_busy_us / device.gpu_span_us : 1;
      step.gpu_span_us += device.gpu_span_us;
      step.wall_span_us += device.wall_span_us;
      step.gpu_busy_us += device.gpu_busy_us;
      step.kernel_busy_us += device.kernel_busy_us;
      step.host_gap_us += device.host_idle_us;
      step.device_idle_us += device.device_idle_us;
      step.dependency_wait_us += device.dependency_wait_us;
      step.other_work_us += device.other_work_us;
      step.idle_before_first_us += device.idle_before_first_us;
      step.host_gap_before_first_us += device.host_gap_before_first_us;
      step.idle_after_last_us += device.idle_after_last_us;
      step.exposed_communication_us += device.exposed_communication_us;
      add_communication(step.collective, device.collective);
      add_communication(step.expert_parallel, device.expert_parallel);
      step.wall_end_us = std::max(step.wall_end_us, wall_end);
      step.devices.push_back(device);
      i = j;
    }
    std::stable_sort(step.dependency_waits.begin(), step.dependency_waits.end(),
                     [](const auto& a, const auto& b) { return a.waited_us > b.waited_us; });
    if (step.dependency_waits.size() > 10) step.dependency_waits.resize(10);
    for (DependencyWait& wait : step.dependency_waits) {
      wait.blocking_call =
          blocking_over(wait.process, wait.ready_at_us, wait.ready_at_us + wait.waited_us);
    }
    step.busy_fraction = busy_share(step.gpu_busy_us, step.wall_span_us, step.other_work_us);
    step.gpu_span_busy_fraction = step.gpu_span_us > 0 ? step.gpu_busy_us / step.gpu_span_us : 1;
    step.host_fed_fraction = host_fed(step.gpu_busy_us, step.host_gap_us + step.dependency_wait_us);
    step.verdict =
        judge(step.gpu_busy_us, step.kernel_busy_us, step.host_gap_us, step.dependency_wait_us, t);
  };
  auto work_of = [&](std::size_t i) {
    const Activity& a = activities_[i];
    StepWork w{};
    w.start = a.start;
    w.end = a.end;
    w.device = lane_of(a).device;
    w.launch = launch_of[i];
    w.activity = static_cast<std::uint32_t>(i);
    w.name = a.name;
    w.kernel = a.kernel;
    w.communication = communication_[a.name];
    return w;
  };
  budget.pre_window = pre_window;
  constexpr double kNoWall = std::numeric_limits<double>::quiet_NaN();
  if (steps.empty()) {
    StepChoice& choice = budget.step_choice;
    choice.method = "whole trace";
    if (!step_regex.empty()) {
      choice.pattern = step_regex;
      choice.reason = "no annotation matches /" + step_regex + "/";
    } else if (choice.candidates.empty()) {
      choice.reason = "no step annotations kprof knows";
    } else {
      // The largest candidate said by name: why the annotation the program repeats was not used.
      const StepCandidate& best = *std::max_element(
          choice.candidates.begin(), choice.candidates.end(),
          [](const auto& x, const auto& y) { return x.gpu_time_us < y.gpu_time_us; });
      choice.reason = fmt::format(
          "no step annotations kprof knows; the repeated annotation \"{}\" ({} ranges, {} "
          "launches) holds {:.1f}% of the GPU time launched from its first range to its last, "
          "under the {:.0f}% a step annotation must hold",
          best.annotation, best.ranges, best.launches, 100 * best.gpu_time_share,
          100 * kMinStepGpuTimeShare);
      if (choice.candidates.size() > 1) {
        choice.reason += fmt::format(" ({} others fewer)", choice.candidates.size() - 1);
      }
    }
    budget.step_selector =
        "the whole trace (" + choice.reason + (step_regex.empty() ? "; --step picks others)" : ")");
    StepBudget whole;
    whole.name = "trace";
    whole.source = "whole trace";
    std::vector<StepWork> work;
    work.reserve(activities_.size() - budget.pre_window_activities);  // all of a long trace
    for (std::size_t i = 0; i < activities_.size(); ++i) {
      if (!pre_window[i]) work.push_back(work_of(i));
    }
    for (std::size_t i = 0; i < launches_.size(); ++i) {
      ++whole.kernel_launches;
      whole.graph_launches += launches_[i].graph;
      whole.captured_launches += captured[i];
    }
    whole.graph_captures = capture_ends_.size();
    summarize(whole, std::move(work), kNoWall, kNoWall);
    // A trace of an engine capturing its graphs (vLLM's capture_model under the profiler): most
    // launches are captured ones, which ran nothing — a capture, not a timeline to judge.
    if (whole.graph_captures > 0 && 2 * whole.captured_launches >= whole.kernel_launches) {
      whole.verdict = StepVerdict::kGraphCapture;
    }
    results.push_back(whole);
  }
  // Indexes, so that each step looks only at its own launches and work (a long trace has
  // thousands of steps): launches by time, launched work by its launch's time, all work by start.
  std::vector<std::pair<double, std::size_t>> launches_by_time;
  std::vector<std::pair<double, std::size_t>> work_by_launch_time, work_by_start;
  double longest = 0;
  if (!steps.empty()) {
    for (std::size_t i = 0; i < launches_.size(); ++i) {
      launches_by_time.emplace_back(launches_[i].time, i);
    }
    for (std::size_t i = 0; i < activities_.size(); ++i) {
      const Activity& activity = activities_[i];
      work_by_start.emplace_back(activity.start, i);
      longest = std::max(longest, activity.end - activity.start);
      if (launch_of[i] != kNoLaunch32) {
        work_by_launch_time.emplace_back(launches_[launch_of[i]].time, i);
      }
    }
    std::sort(launches_by_time.begin(), launches_by_time.end());
    std::sort(work_by_launch_time.begin(), work_by_launch_time.end());
    std::sort(work_by_start.begin(), work_by_start.end());
  }
  auto from = [](const auto& sorted, double time) {
    return std::lower_bound(sorted.begin(), sorted.end(), time,
                            [](const auto& entry, double t) { return entry.first < t; });
  };
  // Steps in time order, each process's wall spans one after another.
  std::stable_sort(steps.begin(), steps.end(),
                   [](const Annotation* x, const Annotation* y) { return x->start < y->start; });
  std::map<std::int64_t, double> previous_step_end;  // by process
  // Per step, when its process's next step opens: what is launched after the step's annotation
  // closed and before then is the step's too (vLLM V1 launches its sampler after execute_model's
  // range closes) — busy time of the step it follows, never idle of the next.
  // A process's last step has no next one: it takes what is launched after its annotation for
  // as long as the longest such stretch between the process's earlier steps (the last sampler of
  // a vLLM window, which would otherwise be work of no step), not the rest of the trace.
  std::vector<double> next_step_start(steps.size(), std::numeric_limits<double>::infinity());
  {
    std::map<std::int64_t, double> next_by_process, longest_between;
    std::map<std::int64_t, std::size_t> last_of_process;
    for (std::size_t k = steps.size(); k-- > 0;) {
      auto found = next_by_process.find(steps[k]->pid);
      if (found != next_by_process.end()) {
        next_step_start[k] = found->second;
        double between = found->second - (steps[k]->start + steps[k]->duration);
        double& longest_gap = longest_between[steps[k]->pid];
        longest_gap = std::max(longest_gap, between);
      } else {
        last_of_process[steps[k]->pid] = k;
      }
      next_by_process[steps[k]->pid] = steps[k]->start;
    }
    for (const auto& [pid, k] : last_of_process) {
      auto gap = longest_between.find(pid);
      if (gap != longest_between.end() && gap->second > 0) {
        next_step_start[k] = steps[k]->start + steps[k]->duration + gap->second;
      }
    }
  }
  std::vector<bool> claimed(activities_.size(), false);
  for (std::size_t k = 0; k < steps.size(); ++k) {
    const Annotation* a = steps[k];
    StepBudget step;
    step.name = a->name;
    step.start_us = a->start;
    step.host_duration_us = a->duration;
    std::vector<std::size_t> taken;  // indexes into activities_, put back in trace order below
    double end = a->start + a->duration;
    if (!a->gpu_side) {
      step.source = "cpu annotation";
      for (auto it = from(launches_by_time, a->start);
           it != launches_by_time.end() && it->first <= end; ++it) {
        const Launch& launch = launches_[it->second];
        if (pid_of(launch) != a->pid) continue;
        ++step.kernel_launches;
        step.graph_launches += launch.graph;
        step.captured_launches += captured[it->second];
      }
      for (const HostCall& call : capture_ends_) {
        step.graph_captures += call.pid == a->pid && call.start >= a->start && call.start <= end;
      }
      for (auto it = from(work_by_launch_time, a->start);
           it != work_by_launch_time.end() && it->first <= end; ++it) {
        if (pid_of(launches_[launch_of[it->second]]) == a->pid) taken.push_back(it->second);
      }
      // Launched between this step's annotation and the next step of its process.
      double until = next_step_start[k];
      if (until > end && std::isfinite(until)) {
        for (auto it =
                 std::upper_bound(launches_by_time.begin(), launches_by_time.end(),
                                  std::make_pair(end, std::numeric_limits<std::size_t>::max()));
             it != launches_by_time.end() && it->first < until; ++it) {
          const Launch& launch = launches_[it->second];
          if (pid_of(launch) != a->pid) continue;
          ++step.kernel_launches;
          step.graph_launches += launch.graph;
          step.captured_launches += captured[it->second];
        }
        for (auto it =
                 std::upper_bound(work_by_launch_time.begin(), work_by_launch_time.end(),
                                  std::make_pair(end, std::numeric_limits<std::size_t>::max()));
             it != work_by_launch_time.end() && it->first < until; ++it) {
          if (pid_of(launches_[launch_of[it->second]]) != a->pid) continue;
          taken.push_back(it->second);
          ++step.between_steps_activities;
          step.between_steps_us += activities_[it->second].end - activities_[it->second].start;
        }
      }
    } else {
      step.source = "gpu annotation";
      for (auto it = from(work_by_start, a->start - longest);
           it != work_by_start.end() && it->first < end; ++it) {
        if (activities_[it->second].end > a->start && !pre_window[it->second]) {
          taken.push_back(it->second);
        }
      }
    }
    std::sort(taken.begin(), taken.end());
    for (std::size_t i : taken) claimed[i] = true;
    std::vector<StepWork> work;
    for (std::size_t i : taken) {
      StepWork w = work_of(i);
      if (a->gpu_side) {
        w.start = std::max(w.start, a->start);
        w.end = std::min(w.end, end);
      }
      work.push_back(w);
    }
    double wall_from = a->start;
    auto previous = previous_step_end.find(a->pid);
    if (previous != previous_step_end.end()) wall_from = std::max(wall_from, previous->second);
    double wall_end = end;
    for (const StepWork& w : work) wall_end = std::max(wall_end, w.end);
    previous_step_end[a->pid] = wall_end;
    summarize(step, std::move(work), wall_from, end);
    // A step that captures a graph (vLLM's capture_model, a first torch.compile call) measures
    // warm-up, capture and instantiation, whose launches run nothing: not serving.
    if (step.graph_captures > 0) step.verdict = StepVerdict::kGraphCapture;
    results.push_back(step);
  }
  // What the steps left out, and what they hold of the trace's GPU time.
  if (!steps.empty()) {
    for (std::size_t i = 0; i < activities_.size(); ++i) {
      double duration = activities_[i].end - activities_[i].start;
      if (claimed[i]) {
        budget.step_choice.steps_gpu_time_us += duration;
      } else if (!pre_window[i]) {
        ++budget.outside_steps_activities;
        budget.outside_steps_us += duration;
      }
    }
  } else {
    budget.step_choice.steps_gpu_time_us = budget.step_choice.trace_gpu_time_us;
  }
  // Stable: steps starting together (two processes' first steps) stay in trace order.
  std::stable_sort(results.begin(), results.end(), [](const StepBudget& x, const StepBudget& y) {
    return x.start_us < y.start_us;
  });
  std::map<std::int64_t, DeviceBudget> devices;
  for (const StepBudget& step : results) {
    if (step.verdict == StepVerdict::kGraphCapture) {
      ++budget.capture_steps;
      continue;
    }
    budget.total_busy_us += step.gpu_busy_us;
    budget.total_kernel_busy_us += step.kernel_busy_us;
    budget.total_span_us += step.gpu_span_us;
    budget.total_wall_span_us += step.wall_span_us;
    budget.total_idle_before_first_us += step.idle_before_first_us;
    budget.total_host_gap_before_first_us += step.host_gap_before_first_us;
    budget.total_idle_after_last_us += step.idle_after_last_us;
    budget.total_host_gap_us += step.host_gap_us;
    budget.total_device_idle_us += step.device_idle_us;
    budget.total_dependency_wait_us += step.dependency_wait_us;
    budget.total_other_work_us += step.other_work_us;
    budget.between_steps_activities += step.between_steps_activities;
    budget.between_steps_us += step.between_steps_us;
    budget.total_exposed_communication_us += step.exposed_communication_us;
    add_communication(budget.total_collective, step.collective);
    add_communication(budget.total_expert_parallel, step.expert_parallel);
    for (const DeviceBudget& part : step.devices) {
      DeviceBudget& device = devices[part.device];
      device.device = part.device;
      add_device(device, part);
    }
  }
  for (const auto& [id, device] : devices) budget.devices.push_back(device);
  // One-time compilation and warm-up named by the trace's ranges, inside the judged steps.
  {
    std::vector<const Annotation*> compiling;
    for (const Annotation& a : annotations_) {
      if (!a.gpu_side && names_compilation(a.name)) compiling.push_back(&a);
    }
    std::sort(compiling.begin(), compiling.end(),
              [](const Annotation* x, const Annotation* y) { return x->start < y->start; });
    std::vector<std::pair<double, double>> walls;
    for (const StepBudget& step : results) {
      if (step.verdict != StepVerdict::kGraphCapture && step.wall_end_us > step.wall_start_us) {
        walls.emplace_back(step.wall_start_us, step.wall_end_us);
      }
    }
    auto inside_walls = [&](double from, double to) {
      double total = 0;
      for (auto [a, b] : walls) total += std::max(0.0, std::min(b, to) - std::max(a, from));
      return total;
    };
    std::map<std::string, Budget::CompilationRange> by_name;
    double outer_end = -std::numeric_limits<double>::infinity();
    for (const Annotation* a : compiling) {
      double end = a->start + a->duration;
      if (a->start < outer_end) {  // nested in (or overlapping) the range before: counted there
        if (end > outer_end) budget.compilation_us += inside_walls(outer_end, end);
        outer_end = std::max(outer_end, end);
        continue;
      }
      outer_end = end;
      double inside = inside_walls(a->start, end);
      budget.compilation_us += inside;
      if (inside <= 0) continue;
      Budget::CompilationRange& range = by_name[a->name];
      range.name = a->name;
      ++range.count;
      range.time_us += inside;
    }
    for (auto& [name, range] : by_name) budget.compilation_ranges.push_back(range);
    std::stable_sort(budget.compilation_ranges.begin(), budget.compilation_ranges.end(),
                     [](const auto& x, const auto& y) { return x.time_us > y.time_us; });
    if (budget.compilation_ranges.size() > 5) budget.compilation_ranges.resize(5);
  }
  budget.steps = std::move(results);
  if (keep_timeline_) budget.timeline = timeline_;
  if (budget.total_span_us > 0) {
    budget.overall = judge(budget.total_busy_us, budget.total_kernel_busy_us,
                           budget.total_host_gap_us, budget.total_dependency_wait_us, t);
  } else if (budget.capture_steps > 0 && budget.capture_steps == budget.steps.size()) {
    budget.overall = StepVerdict::kGraphCapture;
  }
  return budget;
}

// Without a step marker kprof knows: a CPU annotation the program repeats (record_function
// "decode_step" around each step) — at least 3 times, top-level (inside no other annotation of
// its process), never overlapping itself — whose ranges hold a real share of the GPU work: of
// those whose ranges' launches carry at least kMinStepGpuTimeShare of the GPU time launched from
// their first range's start to their last one's end (in their processes), the one holding the
// most. A repeated annotation around a side
// detail (one all-gather on a side stream per iteration) is weighed and turned down: the steps
// are then the whole trace, and the choice says why.
std::vector<const BudgetBuilder::Annotation*> BudgetBuilder::repeated_annotation(
    const std::vector<std::uint32_t>& launch_of, const std::vector<bool>& pre_window,
    StepChoice* choice) const {
  std::map<std::string, std::vector<const Annotation*>> by_name;
  for (const Annotation& a : annotations_) {
    if (!a.gpu_side && !is_step_operator_like(a.name)) by_name[a.name].push_back(&a);
  }
  auto inside_another = [&](const Annotation& a) {
    for (const Annotation& other : annotations_) {
      if (&other != &a && !other.gpu_side && other.pid == a.pid && other.start <= a.start &&
          other.start + other.duration >= a.start + a.duration && other.duration > a.duration) {
        return true;
      }
    }
    return false;
  };
  // Launch calls by time, and the GPU work each enqueued (its summed durations and count).
  std::vector<double> launch_gpu_time(launches_.size(), 0);
  std::vector<std::uint64_t> launch_gpu_work(launches_.size(), 0);
  for (std::size_t i = 0; i < activities_.size(); ++i) {
    if (launch_of[i] == kNoLaunch32 || pre_window[i]) continue;
    launch_gpu_time[launch_of[i]] += activities_[i].end - activities_[i].start;
    ++launch_gpu_work[launch_of[i]];
  }
  std::vector<std::pair<double, std::size_t>> launches_by_time;
  launches_by_time.reserve(launches_.size());
  for (std::size_t i = 0; i < launches_.size(); ++i) {
    launches_by_time.emplace_back(launches_[i].time, i);
  }
  std::sort(launches_by_time.begin(), launches_by_time.end());
  // The 64 most repeated names are candidates: the checks below scan the annotations, and a trace
  // may hold thousands of distinct ones.
  std::vector<std::vector<const Annotation*>*> candidates;
  for (auto& [name, ranges] : by_name) {
    if (ranges.size() >= 3) candidates.push_back(&ranges);
  }
  std::stable_sort(candidates.begin(), candidates.end(),
                   [](const auto* x, const auto* y) { return x->size() > y->size(); });
  if (candidates.size() > 64) candidates.resize(64);
  const std::vector<const Annotation*>* best = nullptr;
  std::size_t best_index = 0;
  for (std::vector<const Annotation*>* candidate : candidates) {
    std::vector<const Annotation*>& ranges = *candidate;
    std::sort(ranges.begin(), ranges.end(),
              [](const Annotation* x, const Annotation* y) { return x->start < y->start; });
    bool ok = true;
    for (std::size_t i = 1; i < ranges.size() && ok; ++i) {
      ok = ranges[i]->start >= ranges[i - 1]->start + ranges[i - 1]->duration ||
           ranges[i]->pid != ranges[i - 1]->pid;
    }
    // Checked on a few ranges only: the rule is about the kind of range, and a trace has many.
    for (std::size_t i = 0; i < ranges.size() && i < 3 && ok; ++i) ok = !inside_another(*ranges[i]);
    if (!ok) continue;
    StepCandidate weighed;
    weighed.annotation = ranges.front()->name;
    weighed.ranges = ranges.size();
    for (const Annotation* a : ranges) {
      auto it = std::lower_bound(launches_by_time.begin(), launches_by_time.end(),
                                 std::make_pair(a->start, std::size_t{0}));
      for (; it != launches_by_time.end() && it->first <= a->start + a->duration; ++it) {
        if (pid_of(launches_[it->second]) != a->pid) continue;
        ++weighed.launches;
        weighed.gpu_activities += launch_gpu_work[it->second];
        weighed.gpu_time_us += launch_gpu_time[it->second];
      }
    }
    if (weighed.launches == 0) continue;  // holds no launch: not a step of GPU work
    // The GPU work launched from the first range's start to the last one's end, in the ranges'
    // processes: what steps there would cover (work between ranges is the step's it follows).
    // Warm-up and loading outside that stretch (a model's weights copied in first) do not count.
    std::map<std::int64_t, std::pair<double, double>> extent;  // process -> first start, last end
    for (const Annotation* a : ranges) {
      auto [it, added] = extent.try_emplace(a->pid, a->start, a->start + a->duration);
      it->second.first = std::min(it->second.first, a->start);
      it->second.second = std::max(it->second.second, a->start + a->duration);
    }
    for (const auto& [pid, span] : extent) {
      auto it = std::lower_bound(launches_by_time.begin(), launches_by_time.end(),
                                 std::make_pair(span.first, std::size_t{0}));
      for (; it != launches_by_time.end() && it->first <= span.second; ++it) {
        if (pid_of(launches_[it->second]) == pid)
          weighed.extent_gpu_time_us += launch_gpu_time[it->second];
      }
    }
    weighed.gpu_time_share =
        weighed.extent_gpu_time_us > 0 ? weighed.gpu_time_us / weighed.extent_gpu_time_us : 0;
    choice->candidates.push_back(weighed);
    if (weighed.gpu_time_share >= kMinStepGpuTimeShare &&
        (!best || weighed.gpu_time_us > choice->candidates[best_index].gpu_time_us)) {
      best = &ranges;
      best_index = choice->candidates.size() - 1;
    }
  }
  // The weighed candidates, the most GPU time first (the JSON's evidence).
  if (best) choice->candidates[best_index].accepted = true;
  std::stable_sort(
      choice->candidates.begin(), choice->candidates.end(),
      [](const StepCandidate& x, const StepCandidate& y) { return x.gpu_time_us > y.gpu_time_us; });
  if (choice->candidates.size() > 8) choice->candidates.resize(8);
  if (!best) return {};
  return *best;
}

}  // namespace kprof::timeline
